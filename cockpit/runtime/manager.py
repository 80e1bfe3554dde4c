"""SessionManager: spawn, follow up, approve, review, kill, subscribe — the runtime API of every client.

One shared memory engine, one shared ``AsyncAnthropic`` client (connection pool), a concurrency
cap (``RuntimeConfig.concurrency``, default 9): sessions past it wait in ``queued``. A session
holds a slot while it is starting/preseeding/streaming/running tools and gives it back while it
waits for the user (``needs approval``, ``waiting for you``): the cap limits concurrent model
work, not open panes.

Each session gets its own git worktree when the workspace is in a repository (see
:mod:`cockpit.runtime.worktree`), unless ``worktree=False``/``--no-worktree``. A session that
ended without changing anything has its worktree and branch removed; one with changes keeps them
until the user merges, keeps or discards (:meth:`SessionManager.review`).

Spend caps (:mod:`cockpit.runtime.budget`): each session's own (``max_budget_usd`` /
``max_budget_tokens``) and this manager's ``server_budget`` on the sum over every session; a
session at one pauses in ``budget reached`` (slot given back) until :meth:`SessionManager.set_budget`
raises it.

Events (``cockpit.events``), per session in this order: ``SessionSpawned``, ``StatusChanged``…,
``Preseeded`` (when preseed is on), then any of ``TextDelta``/``ToolCall``/``ApprovalRequested``/
``ApprovalResolved``/``ToolResult``/``WorktreeChanged``/``UsageUpdate``/``ContextNotice``/
``UserMessage``/``BudgetNotice``/``StatusChanged``, ``SessionErrorEvent`` (when it fails), then ``StatusChanged``
(final) and ``SessionDone`` — always last, also for kills; ``Reviewed`` may follow. ``subscribe()``
registers at once (no event published after the call is missed) and ends when the manager closes.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cockpit.events import (
    Event,
    Reviewed,
    SessionDone,
    SessionForgotten,
    SessionSpawned,
    SessionStatus,
    Usage,
    UsageUpdate,
    WorktreeRef,
)
from cockpit.runtime import ids, ship
from cockpit.runtime import worktree as wt
from cockpit.runtime.budget import Budget, BudgetHit, check
from cockpit.runtime.config import RuntimeConfig
from cockpit.runtime.history import SessionHistory, fold
from cockpit.runtime.permissions import PermissionMode
from cockpit.runtime.pricing import PricingTable, load_pricing
from cockpit.runtime.protocols import MemoryBackend
from cockpit.runtime.session import SessionSpec
from cockpit.runtime.session_base import EndedSession, SessionBase
from cockpit.runtime.sessionlog import SessionLog
from cockpit.runtime.spawn import SpawnSpec
from cockpit.runtime.summary import continuation_message
from cockpit.runtime.transcript import new_transcript_path, read_events

_CLOSE = object()
LOG_EVENTS = 20_000  # per session, for snapshot()
LOG_HEAD = 4  # SessionSpawned, Preseeded… always kept
LOG_SESSIONS = 64
FORGOTTEN_KEPT = 10_000  # closed sessions whose spend a late-attaching client is told of


class SessionClosed(RuntimeError):
    """A follow-up was sent to a session that already ended."""


class Subscription:
    """Async iterator of events; ``close()`` to stop receiving. Unbounded buffer."""

    def __init__(self, mgr: SessionManager):
        self._q: asyncio.Queue = asyncio.Queue()
        self._mgr = mgr
        mgr._subs.append(self)

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Event:
        item = await self._q.get()
        if item is _CLOSE:
            raise StopAsyncIteration
        return item

    def _put(self, item) -> None:
        self._q.put_nowait(item)

    def close(self) -> None:
        if self in self._mgr._subs:
            self._mgr._subs.remove(self)
        self._q.put_nowait(_CLOSE)


def sandbox_for(cfg: RuntimeConfig, requested: bool | None, backend: str) -> tuple[str, str]:
    """(sandbox backend name or "" when unconfined, one line saying so) for a new session.
    ``requested``: None = the config's ``[sandbox] enabled``. Blocks (probes bwrap once)."""
    from cockpit.runtime.sandbox import detect

    if not (cfg.sandbox if requested is None else requested):
        return "", "unconfined: the sandbox is off for this session (--no-sandbox)"
    from cockpit.runtime.backends import resolve

    spec = resolve(backend, cfg)
    if spec.own_sandbox is not None:
        missing = spec.own_sandbox_missing()
        return ("", f"unconfined: {missing}") if missing else (backend, spec.own_sandbox(cfg))
    found = detect()
    if found.backend is None:
        return "", f"unconfined: {found.reason}"
    if spec.confined:
        return found.backend.name, f"sandboxed ({found.backend.name}): {spec.confined}"
    net = {"off": "network off", "on": "network on", "allow": "network only to " + ", ".join(cfg.allow_hosts)}
    return found.backend.name, f"sandboxed ({found.backend.name}): writes only in the worktree and its own $TMPDIR, " \
                               f"{net.get(cfg.network, cfg.network)}"


class SessionManager:
    """Runs sessions. Must be created and used inside one running asyncio loop.

    ``engine``: a :class:`~cockpit.runtime.protocols.MemoryBackend` (or None: no preseed, memory
    tools answer with an error). ``config``: :class:`RuntimeConfig` (defaults if None).
    ``pricing``: a :class:`PricingTable` (default: packaged + user override). ``client``: an
    ``anthropic.AsyncAnthropic`` to use instead of building one from the config.
    """

    outlives_app = False  # an app's own manager: quitting the app ends its sessions

    def __init__(self, engine: MemoryBackend | None = None, config: RuntimeConfig | None = None, *,
                 pricing: PricingTable | None = None, client: Any = None):
        self.engine = engine
        self.config = config or RuntimeConfig()
        self.pricing = pricing or load_pricing(self.config.pricing_path)
        self._client = client
        self._clients: dict[tuple[str | None, str | None, str | None, int, float], Any] = {}
        self._own_client = client is None
        self._sessions: dict[str, SessionBase] = {}
        self._subs: list[Subscription] = []
        self.slots = asyncio.Semaphore(max(1, self.config.concurrency))
        self._changed = asyncio.Event()
        self._total_usage = Usage()
        self._total_cost: float = 0.0
        self._unpriced = False
        self._closed = False
        self._last_check: dict[str, wt.CheckResult] = {}  # session id → its last check (for a PR's body)
        self._cm_supported: bool | None = None
        self._logs: dict[str, SessionLog] = {}
        self._live_usage: dict[str, UsageUpdate] = {}  # a streaming response's latest partial figures
        self._forgotten: list[SessionForgotten] = []  # closed sessions' spend, for snapshot()
        self.server_budget = Budget(self.config.server_budget_usd, self.config.server_budget_tokens)

    # -- SessionHost (what a session sees) -------------------------------------------------
    def client(self, config: RuntimeConfig | None = None) -> Any:
        if self._client is not None:
            return self._client
        cfg = config or self.config
        key = (cfg.api_key, cfg.auth_token, cfg.base_url, cfg.max_retries, cfg.timeout)
        client = self._clients.get(key)
        if client is None:
            import anthropic

            kwargs: dict[str, Any] = dict(max_retries=cfg.max_retries, timeout=cfg.timeout)
            if cfg.api_key or not cfg.auth_token:  # the SDK takes one credential; the key first, as it does
                kwargs["api_key"] = cfg.api_key
            else:
                kwargs["auth_token"] = cfg.auth_token
            if cfg.base_url:
                kwargs["base_url"] = cfg.base_url
            client = self._clients[key] = anthropic.AsyncAnthropic(**kwargs)
        return client

    def publish(self, event: Event) -> None:
        self._log(event)
        for sub in list(self._subs):
            sub._put(event)
        self._changed.set()

    def add_usage(self, usage: Usage, cost_usd: float | None) -> None:
        self._total_usage = self._total_usage + usage
        if cost_usd is None:
            self._unpriced = True
        else:
            self._total_cost += cost_usd

    @property
    def context_management_supported(self) -> bool | None:
        return self._cm_supported

    def set_context_management_supported(self, value: bool) -> None:
        self._cm_supported = value

    def server_budget_hit(self) -> BudgetHit | None:
        usage, cost = self.totals()
        return check("server", self.server_budget, usage, cost)

    # -- spend caps ------------------------------------------------------------------------
    async def set_budget(self, session_id: str | None, usd: float | None = None, tokens: int | None = None,
                         clear: bool = False) -> dict:
        """Set a session's spend cap (``session_id``), or the server's (None: the sum over every
        session): ``usd`` and/or ``tokens`` replace the cap's values where given; ``clear`` drops
        both first (no cap). A session paused in ``budget reached`` re-checks and goes on when no
        cap is reached any more (else it stays paused, with the new figures). Raises KeyError
        (unknown id), SessionClosed (the session ended), ValueError (a bad amount, or nothing to
        set). Returns :meth:`budget_info`."""
        if usd is None and tokens is None and not clear:
            raise ValueError("give a new cap: an amount in USD and/or tokens (or clear it)")
        if session_id is None:
            self.server_budget = self.server_budget.updated(usd, tokens, clear)
            for s in self.sessions:
                if not s.status.is_final:
                    s.budget_changed(self.server_budget)
            return self.budget_info(None)
        s = self.get(session_id)
        if s.status.is_final:
            raise SessionClosed(f"session {s.id} has ended ({s.status.value})")
        s.set_budget(s.budget.updated(usd, tokens, clear))
        return self.budget_info(s.id)

    def budget_info(self, session_id: str | None = None) -> dict:
        """A cap and its spend: ``scope`` session | server, ``id`` (None for the server),
        ``usd`` / ``tokens`` (the cap; None = none), ``spent_usd`` / ``spent_tokens``, ``reached``,
        ``status`` (the session's), ``paused``: ids of the sessions in ``budget reached`` still at
        a cap, ``going_on``: of those in ``budget reached`` no longer at one (woken by a raised
        cap: they go on as soon as they run again — a slot free); for a session, ``held_by``: the cap
        it is at now, ``session`` or ``server`` (its own, or the sum over every session's), else None."""
        at = {s.id: s.budget_hit() for s in self.sessions if s.status is SessionStatus.BUDGET_REACHED}
        paused = [sid for sid, hit in at.items() if hit is not None]
        going_on = [sid for sid, hit in at.items() if hit is None]
        held_by = None
        if session_id is None:
            usage, cost = self.totals()
            budget, sid, status = self.server_budget, None, None
        else:
            s = self.get(session_id)
            usage, cost, budget, sid, status = s.usage, s.cost_usd, s.budget, s.id, s.status.value
            hit = s.budget_hit()
            held_by = hit.scope if hit is not None else None
        return {"scope": "server" if sid is None else "session", "id": sid, **budget.to_dict(),
                "spent_usd": None if cost is None else round(cost, 6), "spent_tokens": usage.total,
                "reached": budget.reached(usage, cost), "status": status, "paused": paused, "going_on": going_on,
                "held_by": held_by}

    # -- queries ---------------------------------------------------------------------------
    @property
    def sessions(self) -> list[SessionBase]:
        """All sessions of this manager, in spawn order."""
        return list(self._sessions.values())

    def get(self, session_id: str) -> SessionBase:
        """The session with this id (or a unique prefix/suffix of ≥ 4 characters).
        Raises KeyError (unknown or ambiguous id)."""
        if session_id in self._sessions:
            return self._sessions[session_id]
        found = [s for sid, s in self._sessions.items() if ids.matches(session_id, sid)]
        if len(found) != 1:
            raise KeyError(ids.not_one(session_id, [(s.id, s.task) for s in found]))
        return found[0]

    def subscribe(self) -> Subscription:
        """``async for event in mgr.subscribe(): …`` — every event published from now on."""
        return Subscription(self)

    def totals(self) -> tuple[Usage, float | None]:
        """Summed usage (tokens) of every response of every session, and USD cost.

        Cost is None when no response was priced; when some models are unpriced the cost
        covers the priced ones only (``Session.cost_usd`` is None for the others).
        """
        if self._unpriced and self._total_cost == 0.0:
            return self._total_usage, None
        return self._total_usage, self._total_cost

    async def quiesce(self, session_id: str) -> None:
        """See :meth:`Runtime.quiesce`: a session that waits for you has its shell and jobs ended;
        one that ended has none. Raises KeyError; ValueError while it works."""
        s = self.get(session_id)
        if s.status.is_final or type(s).quiesce is SessionBase.quiesce:
            return  # (an agent whose processes cannot be stopped alone would be ended: left as it is)
        if s.status.value != "waiting for you":
            raise ValueError(f"session {s.id} is {s.status.value}: wait until it waits for you")
        await s.quiesce()

    async def forget(self, session_id: str) -> None:
        """Drop a finished session from this manager (``cockpit ls``, every client's grid) and
        publish :class:`~cockpit.events.SessionForgotten`. Its transcript, worktree and branch
        stay; the totals keep its spend. Raises KeyError for an unknown id, ValueError for a
        session still running (kill it first)."""
        s = self.get(session_id)
        if not s.status.is_final:
            raise ValueError(f"session {s.id} is still {s.status.value}: kill it first")
        self._sessions.pop(s.id, None)
        gone = SessionForgotten(s.id, s.usage, s.cost_usd)
        self.publish(gone)
        self._logs.pop(s.id, None)  # after publish: a late-attaching client never sees it again…
        self._live_usage.pop(s.id, None)
        self._forgotten.append(gone)  # …but its spend: the snapshot carries what closed sessions spent
        del self._forgotten[:-FORGOTTEN_KEPT]

    def snapshot(self) -> list[Event]:
        """The events so far of every session of this manager, in order per session (consecutive
        ``TextDelta``s merged, of the partial ``UsageUpdate``s only a streaming response's latest,
        last): replaying them through a client's event handler rebuilds each session's view —
        state, output, notes, usage (a response still streaming included), a pending approval —
        for a client that attaches late. A session's log keeps at most
        :data:`LOG_EVENTS` events (the first ones and the newest; older output is in its
        transcript); logs of the oldest finished sessions beyond :data:`LOG_SESSIONS` are dropped
        (never of one whose change waits for its review)."""
        out: list[Event] = list(self._forgotten)
        for sid, log in self._logs.items():
            out.extend(log.events)
            live = self._live_usage.get(sid)
            if live is not None:
                out.append(live)
        return out

    def _log(self, event: Event) -> None:
        if isinstance(event, UsageUpdate):
            if event.partial:
                self._live_usage[event.session_id] = event
                return
            self._live_usage.pop(event.session_id, None)  # the response's own figures, final
        elif isinstance(event, SessionDone):
            self._live_usage.pop(event.session_id, None)
        log = self._logs.get(event.session_id)
        if log is None:
            log = self._logs[event.session_id] = SessionLog()
            if len(self._logs) > LOG_SESSIONS:
                for sid in list(self._logs):
                    s = self._sessions.get(sid)
                    # (never one whose change waits for its review: an app would have no pane for it)
                    if (s is not None and s.status.is_final and sid != event.session_id and not awaits_review(s)
                            and not isinstance(s, EndedSession)):  # (restored: listed until closed)
                        del self._logs[sid]
                        break
        log.add(event)
        if len(log) > LOG_EVENTS:
            del log.events[LOG_HEAD : LOG_HEAD + LOG_EVENTS // 4]

    # -- spawning ----------------------------------------------------------------------------
    async def spawn(self, spec: SpawnSpec, *, host: str | None = None, config: RuntimeConfig | None = None,
                    engine: MemoryBackend | None | object = ...) -> SessionBase:
        """Start the session ``spec`` asks for (:class:`~cockpit.runtime.spawn.SpawnSpec`, its
        values already checked); returns once its worktree exists (status ``queued`` or ``starting``).

        ``None`` options take the config's value (workspace: current folder). ``config``: this
        session's settings (model client, caps) instead of the manager's (the server gets one per
        client request); ``engine``: its memory backend instead of the manager's. Raises
        ValueError for what only this runtime can judge: a workspace that is not a folder, an
        unknown / unavailable ``backend`` (see :attr:`backends`), network "allow" without allowed
        hosts, auto mode without a sandbox; ``worktree.WorktreeError`` when git cannot create the
        worktree; RuntimeError after ``aclose``. ``host``: ``Runtime.spawn``'s (a grid's); this
        runtime has one host, so only None (any other value is a ValueError).
        """
        if host is not None:
            raise ValueError(f"this runtime has one host: cannot spawn on host {host!r}")
        if self._closed:
            raise RuntimeError("SessionManager is closed")
        ws = Path(spec.workspace or Path.cwd()).expanduser().resolve()
        if not ws.is_dir():
            raise ValueError(f"workspace is not a folder: {ws}")
        cfg = await _with_key(config or self.config)
        mode = PermissionMode.parse(spec.permission_mode or cfg.permission_mode)
        style = spec.tools or cfg.tools
        backend = spec.backend or cfg.backend
        cls = self._session_class(backend, cfg)
        if spec.network is not None:
            cfg = replace(cfg, network=spec.network)
            if spec.network == "allow" and not cfg.allow_hosts:
                raise ValueError('network "allow" needs [sandbox] allow_hosts in config.toml')
        box, box_note = await asyncio.to_thread(sandbox_for, cfg, spec.sandbox, backend)
        if mode is PermissionMode.AUTO and not box:
            raise ValueError(f"auto mode needs the sandbox, and this session has none ({box_note})")
        sid = self._new_id()
        transcript = new_transcript_path(cfg.resolved_sessions_dir(), sid)
        info, placement = await self._place(ws, sid, spec.task, str(transcript), spec.worktree, cfg)
        session_spec = SessionSpec(
            task=spec.task, model=spec.model or cfg.model, workspace=ws,
            cwd=Path(info.cwd) if info else ws,
            preseed_enabled=cfg.preseed if spec.preseed is None else spec.preseed,
            top_k=spec.top_k or cfg.top_k,
            interactive=cfg.interactive if spec.interactive is None else spec.interactive,
            permission_mode=mode, tools_style=style if backend == "cockpit" else backend, worktree=info,
            placement=placement, backend=backend, sandbox=box, sandbox_note=box_note, network=cfg.network,
        )
        extra: dict[str, Any] = {} if engine is ... else {"engine": engine}
        s = cls(self, session_spec, session_id=sid, transcript_path=transcript, config=cfg, **extra)
        if spec.max_budget_usd is not None or spec.max_budget_tokens is not None:
            s.budget = s.budget.updated(spec.max_budget_usd, spec.max_budget_tokens)
        return self._start(s)

    @property
    def backends(self) -> tuple[str, ...]:
        """The session backends ``spawn`` can run here (:mod:`cockpit.runtime.backends`):
        ``cockpit`` (this package's own loop), ``claude-code`` when the ``claude-agent-sdk``
        extra is installed, and ``acp:NAME`` for each ACP agent that is installed."""
        from cockpit.runtime import backends

        return backends.available(self.config)

    def _session_class(self, backend: str, cfg: RuntimeConfig | None = None) -> type[SessionBase]:
        """The session class of ``backend``. Raises ValueError for an unknown one, or one that
        cannot run here (saying how to install it)."""
        from cockpit.runtime import backends

        return backends.session_class(backend, cfg or self.config)

    async def _place(self, ws: Path, sid: str, task: str, transcript: str, use: bool | None,
                     cfg: RuntimeConfig) -> tuple[wt.WorktreeInfo | None, str]:
        if use is False or (use is None and not cfg.worktrees):
            return None, "in place: --no-worktree"
        found = await asyncio.to_thread(wt.find_repo, ws)
        if found is None:
            if await asyncio.to_thread(wt.is_bare, ws):
                raise wt.WorktreeError(f"{ws} is a bare git repository (no working tree): "
                                       "start the session in a clone or a worktree of it")
            return None, "in place: not a git repository (or no commit yet)"
        info = await asyncio.to_thread(wt.create, ws, sid, task, cfg.resolved_worktrees_dir(), transcript)
        return info, "worktree"

    async def resume(self, transcript_path: str | Path, *, interactive: bool | None = None,
                     host: str | None = None, config: RuntimeConfig | None = None,
                     engine: MemoryBackend | None | object = ...) -> SessionBase:
        """Reopen a past session: a new session (new id and transcript, header ``resumed_from``)
        holding the old conversation, in the old worktree when it still exists (else a new one from
        HEAD when the old session had one; never the user's checkout). It waits for a
        follow-up, or — when the old one stopped before answering the last user message — asks
        the model right away. A ``claude-code`` session is resumed by its Claude Code session id,
        which may also be given instead of the path (the newest transcript that recorded it is
        used). Raises FileNotFoundError / ValueError for a missing or non-transcript file, and
        ValueError (``BackendUnavailable``) when the session's backend cannot run here. ``host``:
        ``Runtime.resume``'s (a grid's); this runtime has one host, so only None."""
        from cockpit.runtime import claude_code

        if host is not None:
            raise ValueError(f"this runtime has one host: cannot resume on host {host!r}")
        path = Path(transcript_path)
        if not path.is_file() and claude_code.looks_like_session_id(str(transcript_path)):
            sessions = (config or self.config).resolved_sessions_dir()
            found = claude_code.find_transcript(sessions, str(transcript_path))
            if found is None:
                raise FileNotFoundError(f"no transcript in {sessions} records Claude Code session {transcript_path}")
            path = found
        h = fold(await asyncio.to_thread(read_events, path))  # never on the event loop
        backend = h.backend or "cockpit"
        cls = self._session_class(backend, config or self.config)
        # a resumed session is confined as it was (unconfined only when it was turned off then)
        box, box_note = await asyncio.to_thread(sandbox_for, config or self.config,
                                                False if h.started and h.started.sandbox_off else None,
                                                backend)
        if h.permission_mode == "auto" and not box:
            raise ValueError(f"auto mode needs the sandbox, and this session would have none ({box_note})")
        if backend == "claude-code" and not claude_code.claude_session_id(h):
            raise ValueError(f"{path}: the session never reached Claude Code (no session id to resume)")
        messages = h.conversation()
        if not messages:
            raise ValueError(f"{path}: transcript holds no messages to resume")
        ws = Path(h.workspace or Path.cwd())
        if not ws.is_dir():
            ws = Path.cwd()
        info = None
        cwd = Path(h.cwd or ws)
        old = h.worktree
        if old and Path(old.path).is_dir():
            busy = next(iter(self._working_in(old.path)), None)
            if busy is not None:  # two live sessions, each with its own copy of the conversation, in one tree
                raise ValueError(f"session {busy.id} already works in this session's worktree ({busy.status.value}; "
                                 f"resumed from it or sent back): follow it (cockpit attach {busy.id}) or end it first")
            info = wt.load_meta(Path(old.path).with_suffix(".json"))
        sid = self._new_id()
        cfg = await _with_key(config or self.config)
        if cfg.max_budget_usd is None and cfg.max_budget_tokens is None and (h.budget_usd or h.budget_tokens):
            # the cap it ended with (a spawn's own, or raised since) goes on with it, not none
            cfg = dataclasses.replace(cfg, max_budget_usd=h.budget_usd, max_budget_tokens=h.budget_tokens)
        transcript = new_transcript_path(cfg.resolved_sessions_dir(), sid)
        placement = "worktree" if info else (h.placement or "in place")
        if info is None and old:
            # its worktree was merged, kept or discarded: a new one from the current HEAD, never
            # the user's checkout (the in-place fallback says why when that is no repository)
            info, placement = await self._place(ws, sid, h.task, str(transcript), True, cfg)
        if info is None and not cwd.is_dir():
            cwd = ws
        spec = SessionSpec(
            task=h.task, model=h.model or self.config.model, workspace=ws.resolve(),
            cwd=Path(info.cwd) if info else cwd.resolve(),
            preseed_enabled=h.preseed_enabled,
            top_k=(h.started.top_k if h.started else None) or self.config.top_k,
            interactive=self.config.interactive if interactive is None else interactive,
            permission_mode=PermissionMode.parse(h.permission_mode or self.config.permission_mode),
            tools_style=h.tools or self.config.tools, worktree=info,
            placement=placement, backend=backend, sandbox=box, sandbox_note=box_note,
            network=(config or self.config).network,
        )
        extra: dict[str, Any] = {} if engine is ... else {"engine": engine}
        s = cls(self, spec, session_id=sid, transcript_path=transcript, messages=messages, resumed_from=str(path),
                resumed=h, config=cfg, **extra)
        return self._start(s)

    def restore(self, transcript_path: str | Path, events: list[Event] | None = None,
                folded: SessionHistory | None = None) -> SessionBase | None:
        """A session an earlier server left, from its transcript: one that ended with its change
        still in its worktree (not merged, kept or discarded), or one that server's end
        interrupted. Listed as it ended, its events kept for a late-attaching client, diffed,
        reviewed, resumed and closed as before; nothing of it runs (resuming it is a new session).
        None for one that ended with no change left to review (its worktree gone: reviewed from a
        terminal meanwhile); ValueError for such a one whose worktree's record is missing or
        damaged (an interrupted one is then restored without its worktree). Reads the transcript
        here unless given its ``events`` (and ``folded``, those folded). Raises OSError /
        ValueError for a missing or damaged transcript, ValueError for one that never ended."""
        path = Path(transcript_path)
        events = read_events(path) if events is None else events
        h = fold(events) if folded is None else folded
        if not events or not any(isinstance(e, SessionDone) for e in events) or not h.status.is_final:
            raise ValueError(f"{path}: the session never ended")
        if h.session_id in self._sessions:
            return None
        interrupted = h.status is SessionStatus.INTERRUPTED
        info = None
        if h.worktree is not None and Path(h.worktree.path).is_dir():
            meta = Path(h.worktree.path).with_suffix(".json")
            info = wt.load_meta(meta)
            if info is not None and info.path != h.worktree.path:
                info = None  # (another worktree's record)
            if info is None and not interrupted:
                raise ValueError(f"its worktree's record {meta} is missing or damaged; its change stays in "
                                 f"{h.worktree.path} (branch {h.worktree.branch})")
        if info is None and not interrupted:
            return None
        workspace = Path(h.workspace or (info.repo if info else "") or "/")
        spec = SessionSpec(
            task=h.task, model=h.model or self.config.model, workspace=workspace,
            cwd=Path(info.cwd) if info else Path(h.cwd or workspace), preseed_enabled=h.preseed_enabled,
            interactive=False, permission_mode=PermissionMode.parse(h.permission_mode or self.config.permission_mode),
            tools_style=h.tools, worktree=info, placement=h.placement, backend=h.backend or "cockpit",
            sandbox=h.sandbox, sandbox_note=h.sandbox_note)
        s = EndedSession(self, spec, session_id=h.session_id, transcript_path=path, engine=None)
        s.history, s.status, s.detail, s.final_text = h, h.status, h.detail, h.answer
        s.acct.usage, s.acct.cost_usd = h.usage, h.cost_usd
        s.rec.close()  # a review appends to the finished transcript
        self._sessions[s.id] = s
        for event in events:
            self._log(event)
        return s

    async def continue_fresh(self, session_id: str) -> SessionBase:
        """Continue a session whose context is full (or any session) in a fresh one: same worktree
        and settings, a first message that summarises the old conversation. The old session ends
        ``done`` ("continued in …"). Raises KeyError for an unknown id."""
        old = self.get(session_id)
        if isinstance(old, EndedSession):
            raise ValueError(f"session {old.id} ended before this server started: resume it to go on")
        sid = self._new_id()
        spec = old.spec
        try:  # what it did, from its transcript (the one history)
            told = fold(await asyncio.to_thread(read_events, old.transcript_path, []))
        except (OSError, ValueError):  # it never wrote one: the task alone
            told = SessionHistory(old.id, task=old.task, preseed_text=old.preseed_text)
        first = continuation_message(told, spec)
        s = type(old)(self, spec, session_id=sid,
                      transcript_path=new_transcript_path(old._cfg.resolved_sessions_dir(), sid),
                      first_content=first, config=old._cfg, engine=old.engine)
        s.injected, s.preseed_text, s.preseed_tokens = old.injected, old.preseed_text, old.preseed_tokens
        s.budget = old.budget  # the cap as the user last set it
        s.continued_from = old.id
        old.continued_in = sid
        if not old.status.is_final:
            old.post(None)
        self._start(s)
        return s

    def _new_id(self) -> str:
        while True:
            sid = ids.new_session_id()
            if sid not in self._sessions:
                return sid

    def _spawned_event(self, s: SessionBase) -> SessionSpawned:
        w = s.worktree
        ref = None if w is None else WorktreeRef(w.path, w.branch, w.base_commit, w.base_branch)
        return SessionSpawned(s.id, s.task, s.spec.model, str(s.workspace), str(s.transcript_path),
                              s.preseed_enabled, s.spec.backend, s.spec.permission_mode.value, str(s.cwd), ref,
                              s.spec.placement, s.spec.tools_style, s.resumed_from or "",
                              s.continued_from or "", sandbox=s.spec.sandbox, sandbox_note=s.spec.sandbox_note,
                              budget=s.budget.to_dict())

    def _start(self, s: SessionBase) -> SessionBase:
        self._sessions[s.id] = s
        s.rec.emit(self._spawned_event(s))  # the transcript's first line
        s.start()
        return s

    # -- acting on sessions ------------------------------------------------------------------
    async def send(self, session_id: str, text: str) -> None:
        """Queue a follow-up user message. It is taken when the session is ``waiting for you``
        (at once if it is). Raises KeyError (unknown id), SessionClosed (session ended),
        ValueError (empty text; a headless session, which never waits for one)."""
        s = self.get(session_id)
        if s.status.is_final:
            raise SessionClosed(f"session {s.id} has ended ({s.status.value})")
        if not text or not text.strip():
            raise ValueError("empty message")
        if not s.interactive:  # it ends at its last answer: a queued message would never be taken
            raise ValueError(f"session {s.id} is headless (cockpit run): it ends at its last answer and takes no "
                             f"follow-up; once it has ended, cockpit resume {s.id} goes on with it and takes them")
        s.post(text)

    async def answer(self, session_id: str, request_id: str | None, allow: bool, scope: str = "once",
                     reason: str = "") -> None:
        """Answer a session's pending approval (``request_id`` None = the one pending).
        ``scope``: once | session (allow for the rest of the session). Raises KeyError when no
        such approval waits, ValueError for a bad scope."""
        s = self.get(session_id)
        if request_id is None:
            if s.pending is None:
                raise KeyError(f"session {s.id} has no approval pending")
            request_id = s.pending.request_id
        s.answer(request_id, allow, scope, reason)

    async def diff(self, session_id: str) -> wt.Diff:
        """The session's change (see :func:`worktree.diff`), also of a kept branch (no worktree
        left). Raises KeyError; ValueError when the session runs in place (no worktree) or its
        change was merged or discarded."""
        s = self.get(session_id)
        if s.worktree is None:
            raise ValueError(_no_worktree(s, "there is no diff to review"))
        if not Path(s.worktree.path).is_dir() and not await asyncio.to_thread(wt.branch_exists, s.worktree):
            raise ValueError(_worktree_gone(s))
        protected = tuple(getattr(getattr(s, "_cfg", None), "protected", None) or self.config.protected)
        return await asyncio.to_thread(wt.diff, s.worktree, True, protected)

    async def review(self, session_id: str, action: str, config: RuntimeConfig | None = None) -> Reviewed:
        """``merge`` | ``keep`` | ``discard`` the session's worktree (see :mod:`worktree`). A
        session still waiting for a follow-up is ended (``done``) first; a running one is refused.
        Also (:mod:`cockpit.runtime.ship`): ``check`` runs the check command on the change merged
        onto the current base (a command from a note not yet confirmed gives ``check-confirm``
        with the command as the message; ``check-confirmed`` confirms and runs it); ``send-back``
        sends a conflicting change back to its session (a follow-up naming the files; a session
        that ended is resumed in its worktree first); ``pr`` pushes and opens a pull request with
        the drafted title and body. A kept branch (no worktree left) can be merged or discarded.
        ``config``: the reviewing client's settings, for a send-back that resumes the session (else
        the session's own: a session an earlier server left has only this server's).
        Publishes and returns a :class:`Reviewed`. Raises KeyError, ValueError (also when the
        worktree was already merged or discarded, or kept and the action is another)."""
        if action not in ("merge", "keep", "discard", "check", "check-confirmed", "send-back", "pr"):
            raise ValueError("review action must be merge, keep, discard, check, send-back or pr")
        s = self.get(session_id)
        info = s.worktree
        if info is None:
            raise ValueError(_no_worktree(s, f"nothing to {action}"))
        kept = False
        if not Path(info.path).is_dir():
            # a kept branch (its worktree removed) can still be merged or discarded — here, so every
            # client sees it (`cockpit worktrees discard` while the app shows the pane)
            kept = await asyncio.to_thread(wt.branch_exists, info)
            if not kept:
                raise ValueError(_worktree_gone(s))
            if action not in ("merge", "discard"):
                cli = {"check": "check", "check-confirmed": "check", "pr": "pr"}.get(action)
                hint = f"; {cli} it with `cockpit worktrees {cli} {s.id}`" if cli else ""
                raise ValueError(f"session {s.id}'s branch {info.branch} is kept without a worktree: "
                                 f"merge or discard it{hint}")
        if action in ("check", "check-confirmed", "send-back", "pr"):
            return await self._ship(s, info, action, config=config)
        sharing = await self._quiesced(s, info)
        notes = notes_of(s)
        message = await asyncio.to_thread(ship.commit_message, info, notes)
        if not kept and not Path(info.path).is_dir():
            return self._reviewed(s, action, action == "discard",
                                  "the session changed nothing: its worktree is already gone")
        try:
            if action == "merge":
                res = await asyncio.to_thread(wt.merge, info, message, ship.merge_message(info, notes))
                ok, text = res.ok, res.message
            elif action == "keep":
                ok, text = True, await asyncio.to_thread(wt.keep, info, message)
            else:
                ok, text = True, await asyncio.to_thread(wt.discard, info)
        except wt.WorktreeError as exc:
            ok, text = False, str(exc)
        if ok:
            for x in (s, *sharing):
                if not x.status.is_final:
                    x.post(None)
                    if x._task is not None:
                        await asyncio.wait([x._task])
            for x in sharing:  # its change went with this one: its row says so (it showed the branch still)
                self._reviewed(x, action, ok, f"{text} (the worktree of session {s.id}, which it worked in)")
        return self._reviewed(s, action, ok, text)

    def _working_in(self, path: str, but: SessionBase | None = None) -> list[SessionBase]:
        """The sessions not ended that work in the worktree at ``path`` (``but`` left out): its
        own session and any resumed in it (a send-back, an interrupted session resumed)."""
        return [x for x in self._sessions.values() if x is not but and not x.status.is_final
                and x.worktree is not None and x.worktree.path == path]

    async def _quiesced(self, s: SessionBase, info: wt.WorktreeInfo) -> list[SessionBase]:
        """Before Cockpit's git commits in the session's worktree (merge, keep, pr): nothing of the
        session — nor of a session resumed in the same worktree (a send-back), returned — runs
        there any more. Raises ValueError while one is working."""
        if not s.status.is_final and s.status.value != "waiting for you":
            raise ValueError(f"session {s.id} is {s.status.value}: wait until it waits for you or ends")
        sharing = self._working_in(info.path, but=s)
        for x in sharing:
            _waits_for_you(x, s)
        for x in (s, *sharing):
            if not x.status.is_final:
                # none of its processes (a shell's background job, an ACP agent) may run while
                # Cockpit's git works in its worktree: it could plant links git writes through (a
                # commit writes COMMIT_EDITMSG and reflogs). Its shell is ended (our loop: the
                # session lives on), else the session is (a conflict is then sent back by resuming it)
                await x.quiesce()
        return sharing

    async def _ship(self, s: SessionBase, info: wt.WorktreeInfo, action: str, title: str = "",
                    body: str = "", config: RuntimeConfig | None = None) -> Reviewed:
        """check / send-back / pr (see :meth:`review`)."""
        cfg = getattr(s, "_cfg", None) or self.config
        notes = notes_of(s)
        ok, text, shown = False, "", action
        if action in ("check", "check-confirmed"):
            command, source = ship.check_command(cfg, notes)
            if command is None:
                text = source
            elif source != "config" and action == "check" and not ship.is_confirmed(command, info.repo):
                shown, text = "check-confirm", command
            else:
                if source != "config":
                    ship.confirm(command, info.repo)
                res = await asyncio.to_thread(ship.run_check, info, command, cfg)
                self._last_check[s.id] = res
                ok, text, shown = res.ok, ship.check_report(res), "check"
        elif action == "send-back":
            # a merge it began and left with conflict markers first: merging main again is not the fix
            stuck = await asyncio.to_thread(wt.leftover_conflicts, info)
            conflicts: tuple[str, ...] = ()
            if not stuck:
                _tree, conflicts = await asyncio.to_thread(wt.preview_merge, info, None)
            if not stuck and not conflicts:
                commit = await asyncio.to_thread(wt.snapshot, info)
                _tree, conflicts = await asyncio.to_thread(wt.preview_merge, info, commit)
            if not conflicts and not stuck:
                text = "no conflict with the base branch: nothing to send back"
            else:
                text_for_session = (ship.conflict_followup(info, conflicts) if conflicts
                                    else ship.unresolved_followup(info, stuck))
                target = s
                working = next(iter(self._working_in(info.path, but=s)), None)
                if s.status.is_final and working is not None:  # sent back before: the one resumed then
                    _waits_for_you(working, s)
                    target = working
                elif s.status.is_final:
                    target = await self.resume(s.transcript_path, interactive=True, config=config or cfg)
                elif s.status.value != "waiting for you":
                    raise ValueError(f"session {s.id} is {s.status.value}: wait until it waits for you")
                await self.send(target.id, text_for_session)
                ok = True
                resumed = f" (resumed as {target.id}; review it as {s.id})" if target is not s else ""
                text = (f"sent back to session {s.id}{resumed}: merge {info.base_branch or 'the base'} into its "
                        f"branch, resolving {', '.join(conflicts)}" if conflicts else
                        f"sent back to session {s.id}{resumed}: resolve what is left unresolved in {', '.join(stuck)}")
        else:  # pr: Cockpit commits what is pending in the worktree, then pushes
            await self._quiesced(s, info)
            if not title:
                title, body = await asyncio.to_thread(ship.pr_text, info, self._last_check.get(s.id))
            message = await asyncio.to_thread(ship.commit_message, info, notes_of(s))
            ok, text = await asyncio.to_thread(ship.open_pr, info, title, body, message)
        return self._reviewed(s, shown, ok, text)

    def _reviewed(self, s: SessionBase, action: str, ok: bool, text: str) -> Reviewed:
        """Record a review action in the session's transcript and publish it."""
        event = Reviewed(s.id, action, ok, text)
        s.rec.emit(event)  # folded into its history: a merge / keep / discard is its row's `reviewed`
        return event

    async def draft_pull_request(self, session_id: str) -> ship.PullRequestDraft:
        """The pull request's text drafted from the task, the final answer, the notes and the last
        check; nothing is pushed. Raises KeyError; ValueError when the session runs in place."""
        s = self.get(session_id)
        info = s.worktree
        if info is None:
            raise ValueError(f"session {s.id} runs in place: no branch to push")
        t, b = await asyncio.to_thread(ship.pr_text, info, self._last_check.get(s.id))
        return ship.PullRequestDraft(t, b)

    async def pull_request(self, session_id: str, title: str = "", body: str = "") -> Reviewed:
        """Push the session's branch and open a pull request (``title``/``body`` empty: drafted as
        :meth:`draft_pull_request` does)."""
        s = self.get(session_id)
        info = s.worktree
        if info is None:
            raise ValueError(f"session {s.id} runs in place: no branch to push")
        return await self._ship(s, info, "pr", title, body)

    async def kill(self, session_id: str, reason: str = "") -> None:
        """Cancel the session's task and wait until it has ended ``killed`` (transcript closed
        with an ``end`` record carrying ``reason``, shell process group killed). No-op when it
        already ended. Raises KeyError for an unknown id."""
        s = self.get(session_id)
        t = s._task
        if t is None or t.done():
            return
        s.kill_reason = reason
        t.cancel()
        await asyncio.wait([t])

    async def stop(self, session_id: str, reason: str = "") -> None:
        """End a session: one waiting for a follow-up (its work finished) ends ``done``; one still
        working is killed with ``reason``. Returns when it has ended."""
        s = self.get(session_id)
        t = s._task
        if t is None or t.done():
            return
        if s.status.value == "waiting for you":
            s.post(None)
            await asyncio.wait([t])
        else:
            await self.kill(session_id, reason)

    async def describe(self, session_id: str) -> dict:
        """``Session.to_dict()``: its folded events' row, with ``diff``: ``{files, added, removed}``
        of its worktree against the base commit as last reported (None when it runs in place;
        zeros when it was removed for having no changes)."""
        return self.get(session_id).to_dict()

    async def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until every session is final or ``waiting for you`` with no queued follow-up.
        Returns False on timeout."""

        async def _wait():
            while not all(s.is_idle for s in self._sessions.values()):
                self._changed.clear()
                await self._changed.wait()

        try:
            await asyncio.wait_for(_wait(), timeout)
            return True
        except TimeoutError:
            return False

    async def events_for(self, session_id: str) -> AsyncIterator[Event]:
        """This session's events from now until its ``SessionDone``."""
        s = self.get(session_id)
        sub = self.subscribe()
        try:
            if s.status.is_final:
                return
            async for ev in sub:
                if ev.session_id == s.id:
                    yield ev
                    if type(ev).__name__ == "SessionDone":
                        return
        finally:
            sub.close()

    async def stop_all(self, reason: str = "stopped from the app") -> None:
        """Kill every session still working (queued, starting, streaming, running a tool,
        needing approval, paused at a spend cap); finished and waiting ones are left for review
        (what ``RemoteRuntime.stop_all`` asks a server to do)."""
        for s in self.sessions:
            if s.status.is_working:
                await self.kill(s.id, reason=reason)

    async def aclose(self, reason: str = "") -> None:
        """End every session (see :meth:`stop`: finished ones ``done``, working ones ``killed``
        with ``reason``), end subscriptions, close the HTTP clients. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for sid in list(self._sessions):
            await self.stop(sid, reason)
        for sub in list(self._subs):
            sub.close()
        for client in list(self._clients.values()):
            try:
                await client.close()
            except Exception:
                pass

    async def __aenter__(self) -> SessionManager:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()



async def _with_key(cfg: RuntimeConfig) -> RuntimeConfig:
    """``cfg`` with the key ``api_key_helper`` prints when it has none (:func:`keyhelper.keyed`);
    a helper that fails is a ValueError (one line) naming this process's config (a host's, on a host)."""
    from cockpit.runtime import keyhelper
    from cockpit.runtime.config import config_path

    if not keyhelper.wanted(cfg):
        return cfg  # (the usual case: no thread)
    return await asyncio.to_thread(keyhelper.keyed, cfg, f"api_key_helper of {config_path()}")

__all__ = ["SessionManager", "Subscription", "SessionClosed", "awaits_review", "notes_of"]


def awaits_review(s: SessionBase) -> bool:
    """The session's change is in its worktree, not merged, kept or discarded yet (as its events
    say; no file-system call)."""
    h = s.history
    return s.worktree is not None and not (s.worktree_removed or h.worktree_removed) and (
        h.reviewed is None or not h.reviewed.ok)


def _no_worktree(s: SessionBase, what: str) -> str:
    """Why a session without a worktree has ``what`` (nothing to diff, merge…)."""
    ref = s.history.worktree
    if ref is not None:  # restored by a later server after its worktree went (pruned, removed by hand)
        return f"session {s.id}'s worktree {ref.path} is gone (branch {ref.branch}; see cockpit worktrees): {what}"
    return f"session {s.id} runs in place ({s.spec.placement}): {what}"


def notes_of(s: SessionBase) -> str | Path | None:
    """The notes folder of the session: its engine's, or (a session restored from its transcript
    has no engine) the one its transcript recorded; None without one."""
    notes = getattr(s.engine, "notes_dir", None)
    if notes is None and s.history.started is not None:
        return s.history.started.notes or None
    return notes


def _waits_for_you(x: SessionBase, s: SessionBase) -> None:
    """Raise ValueError unless ``x``, a session resumed in ``s``'s worktree, waits for you (none
    of it runs while Cockpit's git or a follow-up acts there)."""
    if x.status.value != "waiting for you":
        raise ValueError(f"session {x.id} works in this worktree (resumed from {s.id}) and is "
                         f"{x.status.value}: wait until it waits for you")


def _worktree_gone(s: SessionBase) -> str:
    """Why a session's worktree is no longer there, for diff and review."""
    if s.worktree_removed:
        return f"session {s.id} changed nothing: its worktree was removed when it ended"
    return f"session {s.id}'s worktree was already merged, kept or discarded"


if TYPE_CHECKING:  # mypy checks SessionManager against the protocols its clients use
    from cockpit.runtime.protocols import BatchRuntime, Runtime

    def _as_runtime(m: SessionManager) -> Runtime:
        return m

    def _as_batch_runtime(m: SessionManager) -> BatchRuntime:
        return m
