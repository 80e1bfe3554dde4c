"""ACP agents as sessions: the scripted agent (tests/acp_agent.py) for the protocol's cases, the
relay and memory server on their own, and the registry. The real agents are in test_acp_agents.py."""

import asyncio
import json
import sys
from pathlib import Path

import pytest
from helpers import make_repo
from standin import FactResponder, StandIn

from cockpit.events import (
    ApprovalRequested,
    BackendRecord,
    SessionStatus,
    TextDelta,
    ToolResult,
    UsageUpdate,
    WorktreeChanged,
)
from cockpit.runtime import ConfigError, RuntimeConfig, SessionManager, backends, fold, load_config, read_events
from cockpit.runtime.acp.agents import BUILTIN, AgentDef, parse_agents
from cockpit.runtime.acp.relay import PLACEHOLDER_KEY, ModelRelay
from cockpit.runtime.sandbox import detect
from cockpit.runtime.spawn import SpawnSpec

S = SessionStatus
KEY = "sk-test-acp-key-0123456789abcdef"
FAKE = (sys.executable, str(Path(__file__).parent / "acp_agent.py"))
BOXED = detect().backend is not None


def fake(mode: str = "") -> AgentDef:
    return AgentDef("fake", "Fake agent", (FAKE,), env={"ACP_FAKE": mode})


def cfg(tmp_path, mode: str = "", **kw) -> RuntimeConfig:
    base = dict(api_key=KEY, base_url="http://127.0.0.1:9", interactive=False, backend="acp:fake",
                agents=(fake(mode),), worktrees_dir=tmp_path / "wt", sessions_dir=tmp_path / "sessions",
                acp_timeout=20.0, model="standin-model")
    base.update(kw)
    return RuntimeConfig(**base)


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path / "repo")


def agent_log(s) -> list[dict]:
    """What the scripted agent said it got (its ``ACP_LOG`` stderr lines, kept in the transcript)."""
    out = []
    for r in read_events(s.transcript_path):
        if isinstance(r, BackendRecord) and r.kind == "stderr" and r.data["line"].startswith("ACP_LOG "):
            out.append(json.loads(r.data["line"][8:]))
    return out


async def run_one(mgr, task, **spawn):
    sub = mgr.subscribe()
    s = await mgr.spawn(SpawnSpec(task, **spawn))
    assert await mgr.wait_idle(timeout=120)
    sub.close()
    return s, [e async for e in sub if e.session_id == s.id]


async def next_event(sub, kind, timeout=60):
    async def _wait():
        async for ev in sub:
            if isinstance(ev, kind):
                return ev
    return await asyncio.wait_for(_wait(), timeout)


# -- a whole session --------------------------------------------------------------------------
class _Block:
    def __init__(self, text):
        self.text = text
        self.tokens = 42
        self.hits = []


class OneNote:
    """A memory backend whose preseed block is one fixed line."""

    ready = True
    BLOCK = "<project-notes>\n- staging-stack: staging runs on port 6443\n</project-notes>"

    def wait_ready(self, timeout=None):
        return True

    def build_preseed(self, query, top_k=5, **kw):
        return _Block(self.BLOCK)

    def search(self, query, top_k=5):
        return []

    def get(self, name):
        return None

    def save(self, *a, **k):
        raise ValueError("read-only")


@pytest.mark.parametrize("sandbox", [pytest.param(True, marks=pytest.mark.skipif(not BOXED, reason="no sandbox here")),
                                     False])
async def test_the_block_goes_into_the_first_prompt_before_the_task(repo, tmp_path, sandbox):
    mgr = SessionManager(OneNote(), cfg(tmp_path))
    s, events = await run_one(mgr, "which port does staging use?", workspace=repo, sandbox=sandbox)
    await mgr.aclose()
    assert s.status == S.DONE, s.error
    log = agent_log(s)
    new = next(x["new_session"] for x in log if "new_session" in x)
    prompt = next(x["prompt"] for x in log if "prompt" in x)
    # the env block, then the notes block, then the task: separate text blocks, in the first prompt
    assert prompt[0].startswith("<env>") and prompt[1] == OneNote.BLOCK and prompt[2] == "which port does staging use?"
    assert new["cwd"] == str(s.spec.cwd) and s.spec.worktree is not None and new["cwd"] == s.spec.worktree.path
    # our memory, offered as an MCP server over HTTP through the session's relay
    (mcp,) = new["mcp"]
    assert mcp["name"] == "cockpit" and mcp["url"].endswith("/mcp") and mcp["url"].startswith("http://127.0.0.1:")
    assert "blocks: 3" in s.final_text and OneNote.BLOCK in s.final_text
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == s.final_text
    # usage from the prompt's answer, cost as the agent reported it, labelled with its source
    final = [e for e in events if isinstance(e, UsageUpdate) and not e.partial]
    assert final and final[-1].cost_source == "acp:fake" and final[-1].total_cost_usd == pytest.approx(0.0125)
    assert s.usage.input == 1200 and s.usage.output == 100 and s.cost_usd == pytest.approx(0.0125)
    assert s.to_dict()["cost_source"] == "acp:fake" and s.to_dict()["agent"] == "fake"
    recs = read_events(s.transcript_path)
    told = fold(recs)
    assert told.backend == "acp:fake" and told.preseed_text == OneNote.BLOCK
    notes = [r for r in recs if isinstance(r, BackendRecord)]
    assert any(r.kind == "plan" and len(r.data["entries"]) == 2 for r in notes)
    assert any(r.kind == "acp" and r.data["session_id"] == "fake-1" and r.data["mode"] == "default" for r in notes)
    if sandbox:
        assert s.spec.sandbox == "bubblewrap" and "network only to its model endpoint" in s.spec.sandbox_note
    else:
        assert s.spec.sandbox == "" and s.spec.sandbox_note.startswith("unconfined")


async def test_the_key_never_reaches_the_agent(repo, tmp_path):
    """The agent's environment has a placeholder where the key would be; the relay holds it."""
    agent = AgentDef("fake", "Fake agent", (FAKE,), key_env=("ANTHROPIC_API_KEY",), base_url_env=("ANTHROPIC_BASE_URL",))
    mgr = SessionManager(None, cfg(tmp_path, agents=(agent,)))
    s = await mgr.spawn(SpawnSpec("say hi", workspace=repo, sandbox=False))
    seen = {}

    async def env_of_agent():
        while s._proc is None:
            await asyncio.sleep(0.01)
        return Path(f"/proc/{s._proc.pid}/environ").read_bytes()

    raw = await asyncio.wait_for(env_of_agent(), 30)
    assert await mgr.wait_idle(60)
    await mgr.aclose()
    for item in raw.split(b"\0"):
        k, _, v = item.decode().partition("=")
        seen[k] = v
    assert KEY not in raw.decode() and seen["ANTHROPIC_API_KEY"] == PLACEHOLDER_KEY
    assert seen["ANTHROPIC_BASE_URL"].startswith("http://127.0.0.1:") and seen["HOME"] != str(Path.home())
    assert s.status == S.DONE


async def test_edits_by_the_agents_own_tool_show_as_a_tool_result_and_a_changed_worktree(repo, tmp_path):
    mgr = SessionManager(None, cfg(tmp_path))
    s, events = await run_one(mgr, "EDIT hello.txt hi there", workspace=repo)
    await mgr.aclose()
    assert s.status == S.DONE, s.error
    result = next(e for e in events if isinstance(e, ToolResult))
    assert not result.is_error and "+hi there" in result.content
    # the title and input the agent sent after the call are the pane's (it showed "Write()")
    for h in (s.history, fold(read_events(s.transcript_path))):  # live, and the transcript read back
        tools = [(b.name, b.input, b.result) for b in h.blocks if b.kind == "tool"]
        assert tools == [("Write hello.txt", {"path": "hello.txt"}, result.content)]
    changed = [e for e in events if isinstance(e, WorktreeChanged)]
    assert changed and "hello.txt" in changed[-1].paths
    assert (Path(s.spec.worktree.path) / "hello.txt").read_text() == "hi there\n"


# -- permissions --------------------------------------------------------------------------------
async def test_permission_requests_go_through_the_approval_flow(repo, tmp_path):
    """Allow once, then deny: each answer reaches the agent as the option of that kind."""
    mgr = SessionManager(None, cfg(tmp_path, interactive=True))
    sub = mgr.subscribe()
    s = await mgr.spawn(SpawnSpec("PERMISSION please", workspace=repo))
    ask = await next_event(sub, ApprovalRequested)
    assert ask.tool == "Run make deploy" and ask.kind == "bash" and "make deploy" in ask.detail
    assert s.status == S.NEEDS_APPROVAL
    await mgr.answer(s.id, ask.request_id, True)
    ask2 = await next_event(sub, ApprovalRequested)
    await mgr.answer(s.id, ask2.request_id, False, reason="not now")
    while s.status != S.WAITING:
        await next_event(sub, object)
    sub.close()
    assert "outcomes: allow_once, reject_once" in s.final_text
    await mgr.aclose()


async def test_allow_for_the_session_is_the_agents_allow_always_and_stops_asking(repo, tmp_path):
    mgr = SessionManager(None, cfg(tmp_path, interactive=True))
    sub = mgr.subscribe()
    s = await mgr.spawn(SpawnSpec("PERMISSION please", workspace=repo))
    ask = await next_event(sub, ApprovalRequested)
    await mgr.answer(s.id, ask.request_id, True, scope="session")
    while s.status != S.WAITING:
        ev = await next_event(sub, object)
        assert not isinstance(ev, ApprovalRequested) or ev.request_id == ask.request_id
    sub.close()
    assert "outcomes: allow_always, allow_once" in s.final_text  # the second was decided by the session's rule
    await mgr.aclose()


async def test_headless_and_plan_mode_refuse_and_bypass_allows(repo, tmp_path):
    for mode, want in (("default", "reject_once, reject_once"), ("plan", "reject_once, reject_once"),
                       ("bypassPermissions", "allow_once, allow_once")):
        mgr = SessionManager(None, cfg(tmp_path / mode, permission_mode=mode))
        s, events = await run_one(mgr, "PERMISSION please", workspace=repo)
        await mgr.aclose()
        assert s.status == S.DONE and f"outcomes: {want}" in s.final_text, (mode, s.final_text, s.error)
        asked = [e for e in events if isinstance(e, ApprovalRequested)]
        assert len(asked) == (2 if mode == "default" else 0), mode  # headless: asked, denied with the reason


# -- failures are states ------------------------------------------------------------------------
async def test_kill_while_the_agent_works_cancels_it(repo, tmp_path):
    mgr = SessionManager(None, cfg(tmp_path, interactive=True))
    sub = mgr.subscribe()
    s = await mgr.spawn(SpawnSpec("WAIT for it", workspace=repo))
    while "waiting for cancel" not in s.final_text and "waiting for cancel" not in getattr(s, "_turn_text", ""):
        await next_event(sub, TextDelta)
    proc = s._proc
    await mgr.kill(s.id)
    sub.close()
    assert s.status == S.KILLED and proc.returncode is not None
    await mgr.aclose()


async def test_a_crashing_agent_is_an_error_with_its_exit_code_and_last_line(repo, tmp_path):
    mgr = SessionManager(None, cfg(tmp_path))
    s, _ = await run_one(mgr, "CRASH now", workspace=repo)
    await mgr.aclose()
    assert s.status == S.ERROR and s.error.kind == "acp"
    assert "Fake agent exited (code 3)" in s.error.message and "crashing on purpose" in s.error.message


async def test_an_agent_that_never_answers_is_an_error_after_the_timeout(repo, tmp_path):
    mgr = SessionManager(None, cfg(tmp_path, mode="hang", acp_timeout=1.0))
    s, _ = await run_one(mgr, "hello", workspace=repo)
    await mgr.aclose()
    assert s.status == S.ERROR and "did not answer initialize within 1 s" in s.error.message


async def test_garbage_on_stdout_is_recorded_and_the_session_goes_on(repo, tmp_path):
    mgr = SessionManager(None, cfg(tmp_path, mode="garbage"))
    s, events = await run_one(mgr, "hello", workspace=repo)
    await mgr.aclose()
    assert s.status == S.DONE and "blocks:" in s.final_text
    bad = [r.data["line"] for r in read_events(s.transcript_path)
           if isinstance(r, BackendRecord) and r.kind == "acp_garbage"]
    assert bad == ["this is not json", "{not json either", "[1, 2]"]
    assert any(getattr(e, "detail", "").startswith("Fake agent wrote 1 line(s) that are not ACP") for e in events)


async def test_a_missing_agent_says_how_to_install_it(repo, tmp_path):
    agent = AgentDef("ghost", "Ghost", (("no-such-agent-binary",),), npm="ghost-acp")
    mgr = SessionManager(None, cfg(tmp_path, agents=(agent,)))
    with pytest.raises(ValueError, match="Ghost is not installed .* cockpit agents install ghost"):
        await mgr.spawn(SpawnSpec("hi", workspace=repo, backend="acp:ghost"))
    with pytest.raises(ValueError, match="unknown ACP agent 'nope'"):
        await mgr.spawn(SpawnSpec("hi", workspace=repo, backend="acp:nope"))
    await mgr.aclose()


# -- the relay ----------------------------------------------------------------------------------
async def test_the_relay_puts_the_key_on_and_refuses_requests_without_the_token():
    import urllib.error
    import urllib.request

    def post(url):
        body = json.dumps({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}).encode()
        req = urllib.request.Request(url, body, {"x-api-key": PLACEHOLDER_KEY, "anthropic-version": "2023-06-01",
                                                 "content-type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    with StandIn(FactResponder()) as api:
        relay = ModelRelay(api.base_url, KEY)
        await relay.start(tcp=True)
        try:
            ok = await asyncio.to_thread(post, relay.base_url() + "/v1/messages")
            bad = await asyncio.to_thread(post, f"http://127.0.0.1:{relay.port}/v1/messages")
        finally:
            await relay.close()
        got = api.requests[-1]
    assert ok[0] == 200 and ok[1]["type"] == "message"
    assert got.headers.get("x-api-key") == KEY and got.path == "/v1/messages"
    assert bad[0] == 403 and "one session's agent only" in bad[1] and relay.refused == 1 and relay.requests == 1


async def test_the_memory_server_answers_through_the_relay(tmp_path):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from cockpit.runtime.acp.memory_http import MemoryHttp

    class Engine(OneNote):
        def search(self, query, top_k=5):
            from types import SimpleNamespace

            return [SimpleNamespace(name="staging-stack", description="staging runs on port 6443", snippet="6443",
                                    priority=False, score=0.9)]

    sock = str(tmp_path / "memory.sock")
    memory = MemoryHttp(Engine(), sock)
    await asyncio.to_thread(memory.start)
    relay = ModelRelay("http://127.0.0.1:9", KEY, mcp_socket=sock)
    await relay.start(tcp=True)
    try:
        async with streamable_http_client(relay.base_url() + "/mcp") as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                found = await session.call_tool("memory_search", {"query": "staging port"})
    finally:
        await relay.close()
        await asyncio.to_thread(memory.close)
    assert not found.is_error and "6443" in found.content[0].text


# -- the registry -------------------------------------------------------------------------------
def test_the_registry_has_the_agents_and_config_adds_and_overrides(tmp_path):
    assert {"claude", "codex", "gemini", "opencode", "goose"} <= set(BUILTIN)
    assert backends.known()[:2] == ["cockpit", "claude-code"] and "acp:opencode" in backends.known()
    f = tmp_path / "config.toml"
    f.write_text('backend = "acp:mine"\n[agents.mine]\ncommand = ["my-agent", "--acp"]\nkey_env = ["MY_KEY"]\n'
                 '[agents.claude]\ninstall = "ask your admin"\n')
    c = load_config({}, env={}, config_file=f)
    mine = next(a for a in c.agents if a.name == "mine")
    assert mine.commands == (("my-agent", "--acp"),) and mine.key_env == ("MY_KEY",) and c.backend == "acp:mine"
    claude = next(a for a in c.agents if a.name == "claude")
    assert claude.install == "ask your admin" and claude.commands == BUILTIN["claude"].commands
    assert "acp:mine" in backends.known(c)


@pytest.mark.parametrize("text, message", [
    ('[agents.x]\ntitle = "X"\n', "a new agent needs command"),
    ('[agents.x]\ncommand = "x"\n', "agents.x.command must be a list of strings"),
    ('[agents.x]\ncommand = ["x"]\ncomand = 1\n', "unknown key 'comand'"),
    ('backend = "acp:nobody"\n', "unknown ACP agent 'nobody'"),
    ('backend = "codex"\n', "unknown session backend 'codex'"),
])
def test_bad_agent_tables_are_one_clear_line(tmp_path, text, message):
    f = tmp_path / "config.toml"
    f.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config({}, env={}, config_file=f)


def test_parse_agents_keeps_builtin_env_under_an_override():
    (claude,) = parse_agents({"claude": {"env": {"EXTRA": "1"}}})
    assert claude.env["EXTRA"] == "1" and claude.env["DISABLE_AUTOUPDATER"] == "1"


def test_a_clients_agents_go_with_its_spawn_and_only_over_the_unix_socket():
    """A running server knows the [agents.NAME] tables the client read, not only its own (a table
    added after the server started works at once); over TCP they are refused (commands to run)."""
    from types import SimpleNamespace

    from cockpit import wire
    from cockpit.server.daemon import Server
    from cockpit.server.remote import config_payload

    mine = AgentDef("mine", "Mine", (("my-agent", "--acp"),), key_env=("K",), env={"A": "1"})
    payload = config_payload(RuntimeConfig(agents=(mine,), backend="acp:mine"))
    assert json.loads(json.dumps(payload))["agents"][0]["commands"] == [["my-agent", "--acp"]]
    server = Server.__new__(Server)
    server.config = RuntimeConfig()
    cfg = server._config(json.loads(json.dumps(payload)), True, SimpleNamespace(tcp=False))
    assert cfg.agents == (mine,) and cfg.backend == "acp:mine"
    with pytest.raises(wire.ParamError, match="Unix socket only"):
        server._config(payload, True, SimpleNamespace(tcp=True))
    with pytest.raises(wire.ParamError, match="malformed agent"):
        server._config({"agents": [{"name": "x"}]}, True, SimpleNamespace(tcp=False))


@pytest.mark.parametrize("auth, header, value", [("bearer", "authorization", "Bearer sk-openai-1"),
                                                 ("x-goog-api-key", "x-goog-api-key", "sk-openai-1"),
                                                 ("x-api-key", "x-api-key", "sk-openai-1")])
async def test_the_relay_speaks_each_providers_auth_to_its_own_upstream(auth, header, value):
    """An agent with its own provider (Codex: OpenAI, Gemini CLI: Google) reaches that provider's
    API through the relay, with that provider's key in that provider's header; whatever auth the
    agent sent is dropped."""
    import threading
    import urllib.request
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("content-length") or 0))
            seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
            self.send_response(200)
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *a):
            pass

    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    relay = ModelRelay(f"http://127.0.0.1:{upstream.server_port}/v1", "sk-openai-1", None, auth=auth)
    await relay.start(tcp=True)

    def post():
        req = urllib.request.Request(relay.base_url() + "/responses", b"{}", {
            "authorization": f"Bearer {PLACEHOLDER_KEY}", "x-goog-api-key": PLACEHOLDER_KEY,
            "content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status

    try:
        assert await asyncio.to_thread(post) == 200
    finally:
        await relay.close()
        upstream.shutdown()
    path, headers = seen[0]
    assert path == "/v1/responses" and headers[header] == value
    assert PLACEHOLDER_KEY not in json.dumps(headers)


def test_other_providers_keys_are_read_kept_secret_and_sent_with_a_spawn():
    from cockpit.server.remote import config_payload

    c = load_config({}, env={"OPENAI_API_KEY": "sk-openai-2", "ANTHROPIC_API_KEY": "a"}, config_file=Path("/dev/null"))
    assert c.provider_keys == {"OPENAI_API_KEY": "sk-openai-2"} and "sk-openai-2" not in repr(c)
    assert config_payload(c)["provider_keys"] == {"OPENAI_API_KEY": "sk-openai-2"}
    codex = BUILTIN["codex"]
    assert codex.upstream.startswith("https://api.openai.com") and codex.auth == "bearer"
    assert codex.upstream_key_env == "OPENAI_API_KEY"
    with pytest.raises(Exception, match="auth must be one of"):
        parse_agents({"x": {"command": ["x"], "auth": "basic"}})


async def test_an_agent_gone_silent_mid_prompt_is_an_error_not_a_hang(repo, tmp_path, monkeypatch):
    from cockpit.runtime.acp import session as acp_session

    monkeypatch.setattr(acp_session, "IDLE_TIMEOUT_S", 1.0)
    mgr = SessionManager(None, cfg(tmp_path))
    s, _ = await run_one(mgr, "SILENT please", workspace=repo)
    await mgr.aclose()
    assert s.status == S.ERROR and "sent nothing for 1 s" in s.error.message


async def test_the_relay_refuses_dot_segments_and_bare_line_feeds():
    relay = ModelRelay("http://127.0.0.1:9/api", KEY)
    await relay.start(tcp=True)

    async def send(raw: bytes) -> bytes:
        r, w = await asyncio.open_connection("127.0.0.1", relay.port)
        w.write(raw)
        await w.drain()
        data = await asyncio.wait_for(r.read(), 10)
        w.close()
        return data

    try:
        for path in ("/../../x", "/%2e%2e/x", "/a/%252e%252e/b"):
            got = await send(f"GET {relay.prefix}{path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            assert got.startswith(b"HTTP/1.1 400") and b"'..'" in got, path
        got = await send(f"POST {relay.prefix}/v1/messages HTTP/1.1\r\nHost: x\nX-Evil: 1\r\n\r\n".encode())
        assert got.startswith(b"HTTP/1.1 400")
    finally:
        await relay.close()
    assert relay.requests == 0  # nothing reached the upstream


def test_a_worktree_index_that_is_a_link_is_refused_not_read(repo, tmp_path):
    from cockpit.runtime import worktree as wt

    secret = tmp_path / "secret.txt"
    secret.write_text("the user's secret\n")
    info = wt.create(repo, "idx1", "t", tmp_path / "wts", str(tmp_path / "t.jsonl"))
    index = Path(wt.git("rev-parse", "--absolute-git-dir", cwd=info.path).strip()) / "index"
    index.unlink()
    index.symlink_to(secret)
    with pytest.raises(wt.WorktreeError, match="symbolic link"):
        wt._temp_index(info)
    copy_dir = Path(wt._private_tmp())
    assert not any("secret" in p.read_text(errors="replace") for p in copy_dir.glob("cockpit-index-*"))


def test_provider_keys_are_redacted_like_the_anthropic_key(tmp_path):
    from cockpit.runtime.acp.session import AcpSession
    from cockpit.runtime.session_base import SessionSpec

    c = cfg(tmp_path, provider_keys={"OPENAI_API_KEY": "sk-openai-secret-123456"})
    spec = SessionSpec(task="t", model="m", workspace=tmp_path, cwd=tmp_path, backend="acp:fake")
    s = AcpSession(SessionManager(None, c), spec, session_id="r1", transcript_path=tmp_path / "r1.jsonl", config=c)
    assert "sk-openai-secret-123456" not in s._redact("leaked: sk-openai-secret-123456 and " + KEY)
    assert KEY not in s._redact(KEY)


@pytest.mark.parametrize("mode, interactive, refused", [
    ("plan", False, "plan mode"), ("acceptEdits", False, None), ("bypassPermissions", False, None),
    ("default", False, "headless run"),
])
async def test_memory_save_from_an_agent_is_decided_like_an_edit(tmp_path, mode, interactive, refused):
    """A note saved through the memory MCP reaches every later session's first message: the
    permission mode decides it (headless default: denied with the reason), never saved unasked."""
    from cockpit.runtime.acp.session import AcpSession
    from cockpit.runtime.permissions import PermissionMode
    from cockpit.runtime.session_base import SessionSpec

    c = cfg(tmp_path, interactive=interactive)
    spec = SessionSpec(task="t", model="m", workspace=tmp_path, cwd=tmp_path, backend="acp:fake",
                       permission_mode=PermissionMode.parse(mode), interactive=interactive)
    s = AcpSession(SessionManager(None, c), spec, session_id="m1", transcript_path=tmp_path / "m1.jsonl", config=c)
    s._in_turn = True
    why = await s._ask_save("deploy", "run curl | sh first", "body", True)
    if refused is None:
        assert why is None
    else:
        assert why is not None and refused in why
    s._in_turn = False
    if mode == "default":
        assert "outside a turn" in (await s._ask_save("x", "d", "b", False) or "")


async def test_permission_asks_at_once_come_one_by_one_and_leave_the_slots_free(repo, tmp_path):
    """Three asks at once: the user sees them one after another; afterwards the session follows
    up, and with one concurrency slot another session still runs (no slot was lost)."""
    mgr = SessionManager(None, cfg(tmp_path, interactive=True, concurrency=1))
    sub = mgr.subscribe()
    s = await mgr.spawn(SpawnSpec("MANY asks", workspace=repo))
    for allow in (True, True, False):
        ask = await next_event(sub, ApprovalRequested)
        assert s.pending is ask
        await mgr.answer(s.id, ask.request_id, allow)
    while s.status != S.WAITING:
        await next_event(sub, object)
    assert s.final_text.startswith("many: ") and sorted(s.final_text[6:].split(", ")) == ["no", "yes", "yes"]
    await mgr.kill(s.id)
    other = await mgr.spawn(SpawnSpec("hello", workspace=repo))
    while other.status not in (S.WAITING, S.DONE, S.ERROR):
        await next_event(sub, object)
    sub.close()
    assert other.status == S.WAITING and "blocks:" in other.final_text
    await mgr.aclose()
