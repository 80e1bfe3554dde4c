"""Fakes for TUI tests and snapshots: a manager that publishes a fixed event script, and an
in-memory memory engine. Deterministic (fixed ids, no clocks). The behaviour tests that need
the real runtime use ``cockpit.runtime.SessionManager`` + ``tests/standin.py`` instead."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import SimpleNamespace

from cockpit import events as ev
from cockpit.events import InjectedNote, Usage
from cockpit.events import SessionStatus as S
from cockpit.runtime.config import RuntimeConfig
from cockpit.runtime.spawn import SpawnSpec


class FakeSubscription:
    def __init__(self, q: asyncio.Queue):
        self.q = q

    def __aiter__(self):
        return self

    async def __anext__(self):
        item = await self.q.get()
        if item is None:
            raise StopAsyncIteration
        return item

    def close(self) -> None:
        self.q.put_nowait(None)


class FakeManager:
    """A ``cockpit.runtime.protocols.Runtime`` that publishes whatever ``emit`` is given;
    ``spawn`` publishes a SessionSpawned with ids ``a00001``, ``a00002``… and records calls;
    ``snapshot()`` returns ``initial`` (what a late-attaching client would get)."""

    def __init__(self, initial: list[ev.Event] | None = None):
        self.subs: list[asyncio.Queue] = []
        self.initial = list(initial or [])
        self.spawned: list[str] = []
        self.spawn_options: list[dict] = []
        self.sent: list[tuple[str, str]] = []
        self.killed: list[str] = []
        self.stopped: list[str] = []
        self.answers: list[tuple] = []
        self.quiesced: list[str] = []
        self.reviews: list[tuple[str, str]] = []
        self.forgotten: list[str] = []
        self.budgets: list[tuple] = []  # (session id or None for the server, usd, tokens, clear)
        self.diffs: dict = {}  # session id → cockpit.runtime.worktree.Diff for ``diff``
        self.config = RuntimeConfig()
        self.outlives_app = False
        self.backends: tuple[str, ...] = ("cockpit",)
        self.stopped_all = 0
        self._n = 0

    async def stop_all(self) -> None:
        self.stopped_all += 1

    def subscribe(self) -> FakeSubscription:
        q: asyncio.Queue = asyncio.Queue()
        self.subs.append(q)
        return FakeSubscription(q)

    def snapshot(self) -> list[ev.Event]:
        return list(self.initial)

    def emit(self, *events: ev.Event) -> None:
        for e in events:
            for q in self.subs:
                q.put_nowait(e)

    async def spawn(self, spec: SpawnSpec, *, host=None):
        if host is not None:  # as SessionManager and RemoteRuntime: one host
            raise ValueError(f"this runtime has one host: cannot spawn on host {host!r}")
        self._n += 1
        sid = f"a{self._n:05d}"
        self.spawned.append(spec.task)
        self.spawn_options.append({k: v for k, v in asdict(spec).items() if k != "task"})
        self.emit(ev.SessionSpawned(sid, spec.task, spec.model or "claude-sonnet-4-5", "/ws",
                                    f"/t/{sid}.jsonl", spec.preseed is not False))
        return SimpleNamespace(id=sid, task=spec.task)

    async def send(self, session_id, text):
        self.sent.append((session_id, text))

    async def kill(self, session_id, reason=""):
        self.killed.append(session_id)
        self.emit(ev.StatusChanged(session_id, S.KILLED), ev.SessionDone(session_id, S.KILLED))

    async def stop(self, session_id, reason=""):
        self.stopped.append(session_id)
        self.emit(ev.StatusChanged(session_id, S.DONE), ev.SessionDone(session_id, S.DONE))

    async def answer(self, session_id, request_id, allow, scope="once", reason=""):
        self.answers.append((session_id, request_id, allow, scope, reason))
        self.emit(ev.ApprovalResolved(session_id, request_id or "", allow, scope, reason))

    async def draft_pull_request(self, session_id):
        return SimpleNamespace(title="the task", body="## Task\n\nthe task")

    async def pull_request(self, session_id, title="", body=""):
        return await self.review(session_id, "pr")

    async def review(self, session_id, action):
        self.reviews.append((session_id, action))
        result = ev.Reviewed(session_id, action, True, f"{action} done")
        self.emit(result)
        return result

    async def diff(self, session_id):
        if session_id in self.diffs:
            return self.diffs[session_id]
        raise ValueError(f"session {session_id} runs in place: there is no diff to review")

    async def resume(self, transcript_path, *, interactive=None, host=None):
        raise ValueError("the fake manager cannot resume")

    async def continue_fresh(self, session_id):
        raise KeyError(session_id)

    async def forget(self, session_id):
        self.forgotten.append(session_id)
        self.emit(ev.SessionForgotten(session_id))

    async def quiesce(self, session_id):
        self.quiesced.append(session_id)

    async def set_budget(self, session_id, usd=None, tokens=None, clear=False):
        self.budgets.append((session_id, usd, tokens, clear))
        return {"scope": "server" if session_id is None else "session", "id": session_id, "usd": usd,
                "tokens": tokens, "reached": False, "paused": []}

    async def aclose(self):
        for q in self.subs:
            q.put_nowait(None)


DEFAULT_USAGE = Usage(1200, 340, 0, 1100)


def session_script(sid: str, task: str, final: S, *, text: str, notes=(), usage=DEFAULT_USAGE,
                   cost=0.0123, tool: tuple[str, dict, str] | None = None) -> list[ev.Event]:
    """The events of one session from spawn to ``final`` (WAITING / DONE / ERROR / STREAMING…)."""
    out: list[ev.Event] = [
        ev.SessionSpawned(sid, task, "claude-sonnet-4-5", "/ws", f"/t/{sid}.jsonl", True),
        ev.StatusChanged(sid, S.STARTING),
        ev.StatusChanged(sid, S.PRESEEDING),
        ev.Preseeded(sid, tuple(notes), 180 if notes else 0, "<notes>…</notes>" if notes else ""),
        ev.StatusChanged(sid, S.STREAMING),
    ]
    if tool:
        name, args, result = tool
        out += [
            ev.StatusChanged(sid, S.RUNNING_TOOL),
            ev.ToolCall(sid, f"tu_{sid}", name, args),
            ev.ToolResult(sid, f"tu_{sid}", name, result, False),
            ev.StatusChanged(sid, S.STREAMING),
        ]
    for word in text.split(" "):
        out.append(ev.TextDelta(sid, word + " "))
    out.append(ev.UsageUpdate(sid, usage, usage, cost, cost, usage.input + usage.cache_read + usage.cache_write, 200_000))
    if final is S.ERROR:
        out += [ev.SessionErrorEvent(sid, "overloaded after 3 retries", "overloaded"),
                ev.StatusChanged(sid, S.ERROR, "overloaded after 3 retries"), ev.SessionDone(sid, S.ERROR)]
    elif final is S.DONE:
        out += [ev.StatusChanged(sid, S.DONE), ev.SessionDone(sid, S.DONE, text, "end_turn")]
    elif final is not S.STREAMING:
        out.append(ev.StatusChanged(sid, final))
    return out


NOTES = (
    InjectedNote("staging-env", 0.82, True, "staging host, port"),
    InjectedNote("deploy-cmd", 0.61, False, "how to deploy"),
)


@dataclass
class FakeHit:
    name: str
    description: str
    snippet: str
    priority: bool
    score: float
    path: Path


@dataclass
class FakeEngine:
    """Answers like ``memory.MemoryEngine`` from a fixed list of hits; ``ready`` settable."""

    hits: list = field(default_factory=list)
    ready: bool = True
    notes: int = 12
    warnings: list = field(default_factory=lambda: ["notes/old.md: date coerced to text"])
    lint_issues: list = field(default_factory=list)
    queries: list = field(default_factory=list)
    syncs: int = 0

    def start_warmup(self):
        pass

    def wait_ready(self, timeout=None):
        return self.ready

    def sync(self, progress=None):
        self.syncs += 1
        return SimpleNamespace(added=self.notes, updated=0, removed=0, changed=True, warnings=[])

    def status(self):
        return SimpleNamespace(model_state="ready" if self.ready else "warming", notes=self.notes,
                               last_sync=None, warnings=list(self.warnings))

    def search(self, query, top_k=5):
        self.queries.append(query)
        return [h for h in self.hits if any(w in h.name or w in h.description for w in query.lower().split())][:top_k]

    def get(self, name):
        hit = next((h for h in self.hits if h.name == name), None)
        return None if hit is None else {"name": hit.name, "description": hit.description, "body": "",
                                         "priority": hit.priority, "path": str(hit.path)}

    def build_preseed(self, query, top_k=5):
        while not self.ready:  # like the real engine: waits for the model
            time.sleep(0.01)
        hits = self.search(query, top_k)
        return SimpleNamespace(text="x" * 40 * len(hits), hits=hits, tokens=10 * len(hits))

    def lint(self):
        return list(self.lint_issues)

    def save(self, name, description, body, priority=False):
        raise ValueError("FakeEngine keeps no notes")

    def watch(self, stop: threading.Event, on_sync=None, on_status=None):
        stop.wait()

    def close(self):
        pass


async def until(pilot, cond, what: str, timeout: float = 15.0) -> None:
    """Let the app run until ``cond()`` holds (``timeout`` only bounds a failing test)."""
    for _ in range(int(timeout / 0.05)):
        if cond():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def settled(pilot, app) -> None:
    """Let the app finish what the events so far started: every queued event folded, no pane
    waiting for a repaint, and the refresh that follows done (no clock: a loaded machine only
    makes it later)."""
    def shown_dirty() -> set[str]:  # panes out of sight stay dirty until shown (by design)
        return app.main.repaint.dirty & {sid for sid, pane in app.panes.items() if pane.display}

    await until(pilot, lambda: all(q.empty() for q in getattr(app.manager, "subs", ())) and not app.main.events_queued
                and not shown_dirty(),
                "the app to settle")
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()


def text_of(widget) -> str:
    return str(widget.render())


def screen_lines(app) -> list[str]:
    """The screen as the user sees it: one string per row (the composed frame, text only)."""
    return ["".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips()]
