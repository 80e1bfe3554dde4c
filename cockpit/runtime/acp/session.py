"""A Cockpit session whose agent speaks ACP (Zed's Agent Client Protocol), in a pane like any other.

The loop (:meth:`AcpSession._main`): preseed as Cockpit's own loop does and record the first user
message (``<env>``, the preseed block, the task); start the session's relay and memory server;
start the agent (the registry's command, :mod:`.agents`) in the working tree — inside Cockpit's
sandbox unless the session is unconfined; ``initialize``; ``session/new`` with the working tree
as ``cwd`` and our memory offered as an MCP server; the agent's mode set to the session's
permission mode where it has that mode; then each user message is one ``session/prompt`` whose
first one carries the block before the task, as separate text blocks.

What arrives (``session/update``): message chunks → ``TextDelta``; ``tool_call`` → ``ToolCall``
(again when an update brings its title or input)
and ``running tool``; a ``tool_call_update`` that completes or fails → ``ToolResult`` (its diff,
for an edit) and ``WorktreeChanged``; ``plan`` → the pane's detail (``plan 2/5: …``) and a
``plan`` record; ``usage_update`` → context figures and, when the agent reports one, its
cumulative cost (``cost_source`` ``acp:NAME``); the prompt's ``usage`` (tokens per turn) into the
totals. ``session/request_permission`` → ``ApprovalRequested`` through the same approval flow as
our loop, decided by the session's permission mode first (``bypassPermissions``/``auto``: allowed;
``acceptEdits``: edits allowed; ``plan``: changes refused); "allow for this session" picks the
agent's ``allow_always`` option.

Failures are states, never hangs: an agent that does not answer ``initialize``/``session/new``
within ``[acp] timeout`` (:data:`HANDSHAKE_TIMEOUT_S`) ends ``error`` (kind ``acp``); one that
exits ends ``error`` with its exit code and last stderr line; lines on its stdout that are not
JSON-RPC are recorded and counted in the pane's detail, and the session goes on; a kill sends
``session/cancel`` and ends the process.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import math
import os
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import acp
from acp import schema as s

from cockpit.events import ApprovalRequested, TextDelta, ToolCall, ToolResult, Usage, UsageUpdate
from cockpit.runtime import prompts, scratch
from cockpit.runtime.model_call import SessionFailure, one_line
from cockpit.runtime.session_base import S, SessionBase

from .agents import AgentDef, agents_dir, find
from .relay import PLACEHOLDER_KEY, ModelRelay

if TYPE_CHECKING:  # pragma: no cover
    pass

HANDSHAKE_TIMEOUT_S = 60.0
IDLE_TIMEOUT_S = 600.0  # a prompt during which the agent sends nothing this long (no approval waiting) fails
RELAY_PORT = 3128  # inside the sandbox: the forwarder to the relay (sandbox.PROXY_PORT)
_CHANGING_KINDS = {"edit", "delete", "move", "execute"}
_EDIT_KINDS = {"edit", "delete", "move"}
_HARMLESS_KINDS = {"read", "search", "think", "switch_mode"}


def _text_of(content: Any) -> str:
    """The text of ACP tool call content (text blocks, diffs, terminals)."""
    parts: list[str] = []
    for c in content or []:
        if isinstance(c, s.ContentToolCallContent):
            block = c.content
            parts.append(getattr(block, "text", "") or f"[{getattr(block, 'type', 'content')}]")
        elif isinstance(c, s.FileEditToolCallContent):
            parts.append(f"edit {c.path}\n" + _diff_text(c.old_text or "", c.new_text, c.path))
        elif isinstance(c, s.TerminalToolCallContent):
            parts.append(f"[terminal {c.terminal_id}]")
    return "\n".join(parts)


def _diff_text(old: str, new: str, path: str) -> str:
    import difflib

    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}"))


class _Client:
    """The ACP client side (what the agent may call on us); every call goes to the session."""

    def __init__(self, session: AcpSession):
        self._s = session

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any],
                                 **kwargs: Any) -> s.RequestPermissionResponse:
        return await self._s._on_permission(tool_call, options)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self._s._on_update(update)

    def on_connect(self, conn: Any) -> None:
        pass


class AcpSession(SessionBase):
    """The ``acp:NAME`` backend's session. Adds ``agent`` (its :class:`~.agents.AgentDef`) and
    ``acp_session_id`` (the agent's own id, None until ``session/new`` answered)."""

    def _init_backend(self) -> None:
        self.agent: AgentDef = find(self.spec.backend.partition(":")[2], self._cfg.agents)
        self.cost_source = f"acp:{self.agent.name}"
        self.acp_session_id: str | None = None
        self.agent_info: dict[str, Any] = {}
        self._proc: asyncio.subprocess.Process | None = None
        self._conn: Any = None
        self._relay: ModelRelay | None = None
        self._memory: Any = None
        self._tmp: str | None = None
        self._sockets: str | None = None
        self._pumps: list[asyncio.Task] = []
        self._stderr: collections.deque[str] = collections.deque(maxlen=40)
        self._garbage = 0
        self._names: dict[str, str] = {}
        self._inputs: dict[str, Any] = {}
        self._kinds: dict[str, str] = {}
        self._open: set[str] = set()  # calls shown and not finished yet
        self._chunks: list[str] = []  # the turn's text so far (joined on demand: no quadratic +=)
        self._agent_cost: float | None = None  # the agent's cumulative figure (USD)
        self._always: set[str] = set()  # tool kinds allowed for this session
        self._reports: list[asyncio.Task] = []  # WorktreeChanged after an edit: awaited before the turn ends
        self._report_again = False  # an edit finished while a report ran: one more after it
        self._in_turn = False  # a session/prompt is running (updates and asks outside one are ignored)
        self._perm_lock = asyncio.Lock()  # one approval at a time (each gives the slot back and takes it again)
        self._last_seen = 0.0  # loop time of the agent's last line on stdout

    @property
    def _turn_text(self) -> str:
        return "".join(self._chunks)

    @_turn_text.setter
    def _turn_text(self, value: str) -> None:
        self._chunks = [value] if value else []

    def system_prompt(self) -> str:
        return f"({self.agent.title}'s own system prompt)"

    def _header_extra(self) -> dict[str, Any]:
        return {"acp": {"agent": self.agent.name, "title": self.agent.title,
                        "command": list(self.agent.commands[0]), "sdk_version": _sdk_version()}}

    def _end_extra(self) -> dict[str, Any]:
        return {"cost_source": self.cost_source, "acp_session_id": self.acp_session_id,
                "agent_total_cost_usd": self._agent_cost}

    # -- the loop ---------------------------------------------------------------------------
    async def _main(self) -> None:
        if self.resumed_from is not None:
            raise SessionFailure("acp", f"{self.agent.title} sessions cannot be resumed yet: start a new one "
                                        "(the transcript keeps the conversation)")
        await self._preseed()
        self._open_transcript()
        content = self._first_content or prompts.first_user_content(
            self.task, self.preseed_text, prompts.env_block(self.spec))
        self._add_message("user", content)
        self._set(S.STARTING, f"starting {self.agent.title}")
        await self._start_agent()
        while True:
            await self._turn(content)
            if not self.interactive:
                return
            text = await self._wait_follow_up()
            if text is None:
                return
            content = [{"type": "text", "text": text}]

    async def _start_agent(self) -> None:
        argv = self.agent.command()
        if argv is None:
            raise SessionFailure("acp", self.agent.unavailable() or f"{self.agent.title} is not installed")
        self._tmp = tmp = os.path.realpath(await asyncio.to_thread(_session_tmp, self._cfg))
        home = os.path.join(tmp, "home")
        os.makedirs(home, mode=0o700, exist_ok=True)
        boxed = self.spec.sandbox == "bubblewrap"
        # the sockets' folder (bound read-only inside): short, a Unix socket's path is ≤ 107 bytes
        self._sockets = relay_dir = tempfile.mkdtemp(prefix="cockpit-acp-")
        mcp_sock = await self._start_memory(relay_dir)
        a = self.agent
        if a.upstream:  # its own provider: that provider's key, from the spawning client's environment
            key = self._cfg.provider_keys.get(a.upstream_key_env) if a.upstream_key_env else None
            relay = ModelRelay(a.upstream, key, None, mcp_sock, auth=a.auth)
        else:
            relay = ModelRelay(self._cfg.base_url, self._cfg.api_key, self._cfg.auth_token, mcp_sock)
        self._relay = relay
        await relay.start(os.path.join(relay_dir, "relay.sock") if boxed else None, tcp=not boxed)
        base = relay.base_url(RELAY_PORT if boxed else None)
        env = self._agent_env(home, base)
        if boxed:
            argv = await asyncio.to_thread(self._boxed, argv, tmp, env)
        self._note("acp_start", command=list(self.agent.commands[0]), program=argv[0] if not boxed else "bwrap",
                        sandbox=self.spec.sandbox_note)
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, cwd=str(self.spec.cwd), env=env, start_new_session=True,
                limit=acp.core.DEFAULT_STDIO_BUFFER_LIMIT_BYTES)
        except OSError as exc:
            raise SessionFailure("acp", f"cannot start {self.agent.title} ({argv[0]}): {exc}") from None
        assert self._proc.stdin is not None and self._proc.stdout is not None and self._proc.stderr is not None
        clean = asyncio.StreamReader(limit=acp.core.DEFAULT_STDIO_BUFFER_LIMIT_BYTES)
        self._pumps = [asyncio.create_task(self._pump_stdout(self._proc.stdout, clean)),
                       asyncio.create_task(self._pump_stderr(self._proc.stderr))]
        self._conn = acp.connect_to_agent(_Client(self), self._proc.stdin, clean)  # type: ignore[arg-type]
        init = await self._handshake("initialize", self._conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION, client_capabilities=s.ClientCapabilities(),
            client_info=s.Implementation(name="cockpit", title="Cockpit", version=_cockpit_version())))
        info = init.agent_info
        caps = init.agent_capabilities
        http_mcp = bool(caps and caps.mcp_capabilities and caps.mcp_capabilities.http)
        servers: list[Any] = []
        if mcp_sock and http_mcp:
            servers.append(s.HttpMcpServer(type="http", name="cockpit", url=f"{base}/mcp", headers=[]))
        self.agent_info = {"name": getattr(info, "name", None), "version": getattr(info, "version", None),
                           "protocol_version": init.protocol_version, "memory_mcp": bool(servers)}
        new = await self._handshake("session/new", self._conn.new_session(cwd=str(self.spec.cwd), mcp_servers=servers))
        self.acp_session_id = new.session_id
        self._note("acp_session", session_id=new.session_id)  # the row's acp_session_id while it runs
        modes = [m.id for m in (new.modes.available_modes if new.modes else [])]
        mode = self.spec.permission_mode.value
        if mode in modes and mode != "auto":  # (the agent's "auto" is a classifier: not ours)
            with contextlib.suppress(Exception):
                await self._handshake("session/set_mode", self._conn.set_session_mode(
                    session_id=new.session_id, mode_id=mode))
        self._note("acp", session_id=new.session_id, agent=self.agent_info, modes=modes,
                        mode=mode if mode in modes else None)

    async def _start_memory(self, folder: str) -> str | None:
        if self.engine is None:
            return None
        from .memory_http import MemoryHttp

        sock = os.path.join(folder, "memory.sock")
        loop = asyncio.get_running_loop()

        def gate(name: str, description: str, body: str, priority: bool) -> str | None:  # (uvicorn's thread)
            future = asyncio.run_coroutine_threadsafe(self._ask_save(name, description, body, priority), loop)
            return future.result()

        self._memory = MemoryHttp(self.engine, sock, save_gate=gate)
        try:
            await asyncio.to_thread(self._memory.start)
        except Exception as exc:  # memory is an aid: the session goes on without the tools
            self._note("memory_error", message=f"memory MCP server not started: {exc}")
            self._memory = None
            return None
        return sock

    def _agent_env(self, home: str, base_url: str) -> dict[str, str]:
        """The agent's whole environment: no key, no variable of the server's beyond the basics."""
        env = {k: v for k, v in os.environ.items()
               if k in ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM", "USER", "LOGNAME", "SHELL")}
        env.update({k: os.environ[k] for k in self._cfg.pass_env if k in os.environ})
        env.update({"HOME": home, "XDG_CONFIG_HOME": f"{home}/.config", "XDG_DATA_HOME": f"{home}/.local/share",
                    "XDG_STATE_HOME": f"{home}/.local/state", "XDG_CACHE_HOME": f"{home}/.cache",
                    "CLAUDE_CONFIG_DIR": f"{home}/.claude", "TERM": "dumb", "NO_COLOR": "1",
                    "PWD": str(self.spec.cwd)})  # (Bun programs take their folder from $PWD)
        bins = str(agents_dir() / "node_modules" / ".bin")
        env["PATH"] = env.get("PATH", "/usr/bin:/bin") + os.pathsep + bins
        env.update(self.agent.env)
        a = self.agent
        model = self.spec.model
        if a.model_prefix and "/" not in model:
            model = a.model_prefix + model
        for k in a.key_env:
            env[k] = PLACEHOLDER_KEY
        for k in a.base_url_env:
            env[k] = base_url
        for k in a.model_env:
            env[k] = model
        if a.provider == "opencode":  # the model declared too: OpenCode refuses ids its own list lacks
            provider, _, model_id = model.rpartition("/")
            env["OPENCODE_CONFIG_CONTENT"] = json.dumps({
                "provider": {provider or "anthropic": {
                    "options": {"baseURL": f"{base_url}/v1", "apiKey": PLACEHOLDER_KEY},
                    "models": {model_id: {"name": model_id}}}},
                "model": model, "small_model": model, "autoupdate": False, "share": "disabled"})
        return env

    def _boxed(self, argv: list[str], tmp: str, env: dict[str, str]) -> list[str]:
        """``argv`` inside the session's sandbox: writes only in the working tree and its own
        folders, the network only to the relay (a forwarder on ``127.0.0.1:3128``)."""
        from cockpit.runtime import sandbox as sb

        w = self.spec.worktree
        settings = replace(self._cfg.sandbox_settings(), network="allow", allow_hosts=("model endpoint",))
        relay_sock = self._relay.socket_path if self._relay else None
        conf = sb.confinement_for(self._tree(), self.spec.cwd, tmp, settings, w.branch if w is not None else None,
                                  relay_sock, (str(self._cfg.resolved_worktrees_dir()),
                                               str(self._cfg.resolved_sessions_dir())))
        inner = {k: v for k, v in conf.env.items() if "proxy" not in k.lower()}
        home = env["HOME"]
        inner.update({"HOME": home, "XDG_CACHE_HOME": f"{home}/.cache", "npm_config_cache": f"{home}/.npm"})
        readonly = [*conf.readonly]
        agents = str(agents_dir())
        if os.path.isdir(agents):  # Cockpit's own agents folder, hidden with its data: the program back
            readonly.append(agents)
        conf = replace(conf, env=inner, readonly=tuple(readonly))
        return sb.BACKENDS["bubblewrap"].command(conf, argv)

    def _tree(self) -> Path:
        w = self.spec.worktree
        return Path(w.path) if w is not None else self.spec.cwd

    async def _handshake(self, what: str, call: Any) -> Any:
        timeout = self._cfg.acp_timeout or HANDSHAKE_TIMEOUT_S
        try:
            return await asyncio.wait_for(self._guarded(call), timeout)
        except TimeoutError:
            raise SessionFailure("acp", f"{self.agent.title} did not answer {what} within {timeout:.0f} s"
                                 + self._stderr_tail()) from None

    async def _silent(self) -> None:
        """Returns once the agent has sent nothing for :data:`IDLE_TIMEOUT_S` while no approval
        waits for the user (a hung agent, one whose pipe no longer reaches us)."""
        loop = asyncio.get_running_loop()
        self._last_seen = loop.time()
        while True:
            left = self._last_seen + IDLE_TIMEOUT_S - loop.time()
            if self.pending is not None:  # we wait for the user, not for the agent
                self._last_seen = loop.time()
                left = IDLE_TIMEOUT_S
            if left <= 0:
                return
            await asyncio.sleep(min(left, 5.0))

    async def _guarded(self, call: Any, idle: bool = False) -> Any:
        """``call`` (a request to the agent), or the agent's exit as a SessionFailure; ``idle``:
        also the agent's silence (:meth:`_silent`)."""
        assert self._proc is not None
        exited = asyncio.ensure_future(self._proc.wait())
        task = asyncio.ensure_future(call)
        watch = asyncio.ensure_future(self._silent()) if idle else None
        waits = {task, exited} | ({watch} if watch else set())
        try:
            done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            exited.cancel()
            if watch:
                watch.cancel()
            raise
        if watch is not None:
            watch.cancel()
            if watch in done and task not in done and exited not in done:
                task.cancel()
                exited.cancel()
                raise SessionFailure("acp", f"{self.agent.title} sent nothing for {IDLE_TIMEOUT_S:.0f} s"
                                     + self._stderr_tail())
        if task in done:
            try:
                return task.result()
            except acp.RequestError as exc:
                raise SessionFailure("acp", f"{self.agent.title} refused the request: {exc}") from None
            except (ConnectionError, OSError) as exc:
                with contextlib.suppress(TimeoutError):  # the agent exiting closes the pipe first
                    await asyncio.wait_for(asyncio.shield(exited), 2)
                if self._proc.returncode is None:
                    raise SessionFailure("acp", f"lost the connection to {self.agent.title}: {exc}"
                                         + self._stderr_tail()) from None
                await self._drain_stderr()
                raise SessionFailure("acp", f"{self.agent.title} exited (code {self._proc.returncode})"
                                     + self._stderr_tail()) from None
            finally:
                exited.cancel()
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        await self._drain_stderr()
        raise SessionFailure("acp", f"{self.agent.title} exited (code {self._proc.returncode})" + self._stderr_tail())

    async def _drain_stderr(self) -> None:
        """Until the exited agent's last stderr lines are read (at most 2 s)."""
        for pump in self._pumps[1:]:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(pump), 2)

    async def _turn(self, content: list[dict]) -> None:
        await self._budget_gate()
        self._set(S.STREAMING)
        self._turn_text = ""
        blocks = [s.TextContentBlock(type="text", text=str(b.get("text", "")))
                  for b in content if b.get("type") == "text"]
        self._in_turn = True
        try:
            resp = await self._guarded(self._conn.prompt(session_id=self.acp_session_id, prompt=blocks), idle=True)
        finally:
            self._in_turn = False
        reports, self._reports = self._reports, []
        await asyncio.gather(*reports, return_exceptions=True)
        self.stop_reason = resp.stop_reason
        self.acct.requests += 1
        self.detail = ""  # (a plan's progress line belonged to the turn)
        text = self._turn_text
        if text:
            self.final_text = text
            self._add_message("assistant", [{"type": "text", "text": text}])
        u = resp.usage
        turn = Usage(u.input_tokens, u.output_tokens, u.cached_write_tokens or 0, u.cached_read_tokens or 0) \
            if u is not None else Usage()
        self._account(turn)
        self._note("result", stop_reason=resp.stop_reason, usage=None if u is None else turn.__dict__,
                        agent_total_cost_usd=self._agent_cost)
        if resp.stop_reason == "refusal":
            raise SessionFailure("acp", f"{self.agent.title} refused the task")

    def _account(self, turn: Usage) -> None:
        acct = self.acct
        acct.usage = acct.usage + turn
        cost = None
        if self._agent_cost is not None:
            cost = max(0.0, self._agent_cost - (acct.cost_usd or 0.0))
            acct.cost_usd = self._agent_cost
        self._host.add_usage(turn, cost)
        self.rec.emit(UsageUpdate(self.id, turn, acct.usage, cost, acct.cost_usd, context_tokens=acct.context_tokens,
                                  context_window=acct.context_window, cost_source=self.cost_source,
                                  model=self.spec.model, stop_reason=self.stop_reason,
                                  agent_total_usd=self._agent_cost))

    async def _cleanup(self) -> None:
        conn, self._conn = self._conn, None
        proc, self._proc = self._proc, None
        if conn is not None and self.acp_session_id and proc is not None and proc.returncode is None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(conn.cancel(session_id=self.acp_session_id)), 1)
        if proc is not None:
            await _end_process(proc)
        for pump in self._pumps:
            pump.cancel()
        if conn is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(conn.close()), 2)
        if self._relay is not None:
            await self._relay.close()
        if self._memory is not None:
            await asyncio.to_thread(self._memory.close)
        if self._tmp is not None:  # (with the .gitconfig beside it)
            await asyncio.to_thread(scratch.remove, self._tmp)
        if self._sockets is not None:
            await asyncio.to_thread(shutil.rmtree, self._sockets, True)

    # -- the agent's output ---------------------------------------------------------------------
    async def _pump_stdout(self, raw: asyncio.StreamReader, clean: asyncio.StreamReader) -> None:
        """JSON-RPC lines on to the connection; anything else recorded and counted, not fatal."""
        try:
            while line := await raw.readline():
                text = line.strip()
                if not text:
                    continue
                try:
                    ok = isinstance(json.loads(text), dict)
                except ValueError:
                    ok = False
                self._last_seen = asyncio.get_running_loop().time()
                if ok:
                    clean.feed_data(line if line.endswith(b"\n") else line + b"\n")
                    continue
                self._garbage += 1
                shown = one_line(self._redact(text.decode("utf-8", "replace")), 200)
                self._note("acp_garbage", line=shown)
                if self._garbage == 1 or self._garbage % 50 == 0:
                    self._set(self.status, f"{self.agent.title} wrote {self._garbage} line(s) that are not ACP "
                                           f"on its stdout (ignored): {one_line(shown, 80)}")
        except (ValueError, asyncio.LimitOverrunError, ConnectionError) as exc:
            self._note("acp_garbage", line=f"stdout unreadable: {exc}")
        finally:
            clean.feed_eof()

    async def _pump_stderr(self, raw: asyncio.StreamReader) -> None:
        with contextlib.suppress(ValueError, ConnectionError, asyncio.LimitOverrunError):
            while line := await raw.readline():
                text = self._redact(line.decode("utf-8", "replace").rstrip())
                if text:
                    self._stderr.append(text)
                    self._note("stderr", line=text[:2000])

    def _stderr_tail(self) -> str:
        return f" — {one_line(self._stderr[-1], 240)}" if self._stderr else ""

    def _on_update(self, u: Any) -> None:
        kind = getattr(u, "session_update", "")
        if not self._in_turn and kind in ("agent_message_chunk", "tool_call", "tool_call_update", "plan"):
            self._note("acp_late_update", kind=kind)  # after its turn: not shown, the state stays
            return
        if kind == "agent_message_chunk":
            text = getattr(u.content, "text", "") or ""
            if text:
                self._chunks.append(text)
                self.rec.emit(TextDelta(self.id, text))
        elif kind == "agent_thought_chunk":
            self._note("thought", text=getattr(u.content, "text", ""))
        elif kind == "tool_call":
            self._on_tool_start(u)
        elif kind == "tool_call_update":
            self._on_tool_update(u)
        elif kind == "plan":
            entries = [(e.content, e.status) for e in u.entries]
            self._note("plan", entries=[{"content": c, "status": st} for c, st in entries])
            done = sum(1 for _, st in entries if st == "completed")
            now = next((c for c, st in entries if st == "in_progress"), "")
            if entries:
                self._set(self.status, one_line(f"plan {done}/{len(entries)}" + (f": {now}" if now else ""), 120))
        elif kind == "usage_update":
            self.acct.context_tokens = u.used
            self.acct.context_window = u.size or self.acct.context_window
            if u.cost is not None and u.cost.currency.upper() == "USD":
                amount = float(u.cost.amount)
                # the agent's own figure: taken only when sane (finite, not going back, < $10k)
                if math.isfinite(amount) and (self._agent_cost or 0.0) <= amount < 10_000:
                    self._agent_cost = amount
                else:
                    self._note("acp_cost_ignored", amount=repr(amount)[:40])
            self.rec.emit(UsageUpdate(self.id, Usage(), self.acct.usage, None,
                                      self._agent_cost if self._agent_cost is not None else self.acct.cost_usd,
                                      context_tokens=u.used, context_window=u.size, partial=True,
                                      cost_source=self.cost_source))
        elif kind == "current_mode_update":
            self._note("acp_mode", mode=u.current_mode_id)

    def _on_tool_start(self, u: Any) -> None:
        tid = u.tool_call_id
        name = u.title or u.kind or "tool"
        self._names[tid] = name
        self._kinds[tid] = u.kind or "other"
        self._inputs[tid] = u.raw_input
        self._open.add(tid)
        text = self._turn_text
        if text:  # text before the call: one assistant message, as our loop records it
            self._add_message("assistant", [{"type": "text", "text": text}])
            self.final_text = text
            self._turn_text = ""
        self.rec.emit(ToolCall(self.id, tid, name, u.raw_input if isinstance(u.raw_input, dict) else {}))
        self._set(S.RUNNING_TOOL, name)

    def _learn(self, u: Any) -> None:
        """What a ``tool_call_update`` (or a permission request's call) tells of a call: its title,
        kind and input. When they came after the call (an agent starts it while its input
        streams), the call is emitted again with them: the pane's line and the transcript's call."""
        tid = u.tool_call_id
        shown = (self._names.get(tid), self._inputs.get(tid))
        if u.title:
            self._names[tid] = u.title
        if u.kind:
            self._kinds[tid] = u.kind
        if u.raw_input:
            self._inputs[tid] = u.raw_input
        if tid in self._open and (self._names[tid], self._inputs.get(tid)) != shown:
            raw = self._inputs.get(tid)
            self.rec.emit(ToolCall(self.id, tid, self._names[tid], raw if isinstance(raw, dict) else {}))
            if self.status is S.RUNNING_TOOL:
                self._set(S.RUNNING_TOOL, self._names[tid])

    def _on_tool_update(self, u: Any) -> None:
        tid = u.tool_call_id
        self._learn(u)
        if u.status not in ("completed", "failed"):
            return
        name = self._names.get(tid, "tool")
        err = u.status == "failed"
        text = _text_of(u.content)
        if not text and u.raw_output is not None:
            text = u.raw_output if isinstance(u.raw_output, str) else json.dumps(u.raw_output, default=str)[:20000]
        self._open.discard(tid)
        self.rec.emit(ToolResult(self.id, tid, name, text, err))
        self.note_tool_use(name, self._inputs.pop(tid, None), err)
        self._set(S.STREAMING)
        if self._kinds.get(tid) in _CHANGING_KINDS:
            self._report_soon()

    async def _ask_save(self, name: str, description: str, body: str, priority: bool) -> str | None:
        """A ``memory_save`` of the agent's: decided like an edit (``plan``: refused; ``acceptEdits``,
        ``bypassPermissions``, sandboxed ``auto``: allowed; else asked). None = go on."""
        mode = self.spec.permission_mode.value
        what = f"save the note {name!r}{' (priority)' if priority else ''}: {description}"
        if mode == "plan":
            reason = "plan mode: nothing is changed"
        elif mode in ("acceptEdits", "bypassPermissions") or (mode == "auto" and self.spec.sandbox):
            reason = ""
        elif not self._in_turn:
            reason = "asked outside a turn"
        else:
            async with self._perm_lock:
                ask = ApprovalRequested(self.id, f"memory_save-{len(self._answers)}-{name}"[:80], "memory_save",
                                        "edit", one_line(what, 160), f"{description}\n\n{body}"[:4000], "")
                allowed, _scope, why = await self._await_answer(ask)
                reason = "" if allowed else (why or "the user denied it")
        self._note("memory_save", name=name, priority=priority, allowed=not reason, reason=reason)
        return reason or None

    def _report_soon(self) -> None:
        """One ``git diff`` at a time however fast edits finish (a flood queued one each)."""
        if any(not t.done() for t in self._reports):
            self._report_again = True
            return

        async def report() -> None:
            await self._report_changes()
            while self._report_again:
                self._report_again = False
                await self._report_changes()

        self._reports = [asyncio.get_running_loop().create_task(report())]

    # -- permissions ----------------------------------------------------------------------------
    async def _on_permission(self, tool_call: Any, options: list[Any]) -> s.RequestPermissionResponse:
        if not self._in_turn:  # nothing of the agent's may run while the session waits for you
            self._note("approval_auto", request_id=tool_call.tool_call_id, tool=tool_call.title,
                            kind=tool_call.kind, reason="asked outside a turn: refused")
            return s.RequestPermissionResponse(outcome=s.DeniedOutcome(outcome="cancelled"))
        async with self._perm_lock:
            return await self._permission(tool_call, options)

    async def _permission(self, tool_call: Any, options: list[Any]) -> s.RequestPermissionResponse:
        tid = tool_call.tool_call_id
        self._learn(tool_call)
        kind = tool_call.kind or self._kinds.get(tid) or "other"
        title = tool_call.title or self._names.get(tid) or kind
        by_kind = {o.kind: o.option_id for o in options}

        def pick(*kinds: str) -> s.RequestPermissionResponse:
            for k in kinds:
                if k in by_kind:
                    chosen = s.AllowedOutcome(outcome="selected", option_id=by_kind[k])
                    return s.RequestPermissionResponse(outcome=chosen)
            return s.RequestPermissionResponse(outcome=s.DeniedOutcome(outcome="cancelled"))

        mode = self.spec.permission_mode.value
        decided = None
        if mode == "bypassPermissions" or (mode == "auto" and self.spec.sandbox):
            decided = "allowed by permission mode " + mode
        elif mode == "acceptEdits" and kind in _EDIT_KINDS:
            decided = "an edit, allowed in acceptEdits"
        elif kind in self._always:
            decided = f"{kind} allowed for this session"
        elif kind in _HARMLESS_KINDS:
            decided = f"{kind}: nothing changes"
        if decided:
            self._note("approval_auto", request_id=tid, tool=title, kind=kind, reason=decided)
            return pick("allow_once", "allow_always")
        if mode == "plan" and kind in _CHANGING_KINDS:
            self._note("approval_auto", request_id=tid, tool=title, kind=kind, reason="plan mode: nothing changes")
            return pick("reject_once", "reject_always")
        detail = (json.dumps(tool_call.raw_input, indent=1, default=str)[:4000] if tool_call.raw_input
                  else _text_of(tool_call.content))
        ours = {"edit": "edit", "delete": "edit", "move": "edit", "execute": "bash", "fetch": "network"}.get(kind, kind)
        ask = ApprovalRequested(self.id, tid, title, ours, one_line(title, 160), detail, "")
        try:
            allowed, scope, _reason = await self._await_answer(ask)
        except asyncio.CancelledError:
            return s.RequestPermissionResponse(outcome=s.DeniedOutcome(outcome="cancelled"))
        if not allowed:
            return pick("reject_once", "reject_always")
        self._set(S.RUNNING_TOOL, title)
        if scope == "session":
            self._always.add(kind)
            return pick("allow_always", "allow_once")
        return pick("allow_once", "allow_always")


async def _end_process(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM to the agent's process group, SIGKILL after 3 s."""
    import signal

    if proc.returncode is not None:
        return
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            await asyncio.wait_for(proc.wait(), wait)
            return
        except TimeoutError:
            continue


def _session_tmp(cfg: Any) -> str:
    from cockpit.runtime import sandbox as sb

    return sb.session_tmp(cfg.resolved_worktrees_dir())


def _sdk_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agent-client-protocol")
    except PackageNotFoundError:
        return None


def _cockpit_version() -> str:
    from cockpit import __version__

    return str(__version__)


__all__ = ["AcpSession", "HANDSHAKE_TIMEOUT_S"]
