"""The claude-code backend end to end: the real bundled Claude Code CLI against the stand-in.

Offline: ``ANTHROPIC_BASE_URL`` points Claude Code at the stand-in (real HTTP + SSE on loopback);
a throwaway ``CLAUDE_CONFIG_DIR``, ``setting_sources`` none, ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC``
and ``ENABLE_TOOL_SEARCH=false`` (so the MCP memory tools are in the request, not behind tool
search). Skipped, with the reason, when the ``claude-code`` extra is not installed.
"""

import asyncio
import json
from pathlib import Path

import pytest

pytest.importorskip("claude_agent_sdk", reason="the claude-code extra is not installed (pip install -e '.[claude-code]')")

from helpers import assert_implements, make_repo, stop_server
from seed_data import FACTS, QUESTION, WRONG, write_seed
from standin import FactResponder, Reply, StandIn, ToolUse

from cockpit.cli import main
from cockpit.events import (
    ApprovalRequested,
    ApprovalResolved,
    Preseeded,
    SessionStatus,
    ToolCall,
    ToolResult,
    UsageUpdate,
    WorktreeChanged,
)
from cockpit.runtime import RuntimeConfig, SessionManager, read_transcript
from cockpit.runtime.spawn import SpawnSpec

S = SessionStatus
KEY = "sk-test-cockpit-key-0123456789"


@pytest.fixture(autouse=True)
def claude_env(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path_factory.mktemp("claude-config")))
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    monkeypatch.setenv("ENABLE_TOOL_SEARCH", "false")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


@pytest.fixture(scope="module")
def seed(tmp_path_factory):
    from memory import MemoryEngine

    root = tmp_path_factory.mktemp("cc-seed")
    notes, ws = write_seed(root)
    engine = MemoryEngine(notes, index_path=root / "index.sqlite")
    engine.start_warmup()
    engine.sync()
    assert engine.wait_ready(120)
    yield engine, ws, notes
    engine.close()


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path / "repo")


def cfg(api, tmp_path, **kw):
    base = dict(api_key=KEY, base_url=api.base_url, interactive=False, max_retries=0, timeout=30.0,
                model="standin-model", backend="claude-code", claude_setting_sources=(),
                worktrees_dir=tmp_path / "worktrees")
    base.update(kw)
    return RuntimeConfig(**base)


async def run_one(mgr, task, **spawn):
    sub = mgr.subscribe()
    s = await mgr.spawn(SpawnSpec(task, **spawn))
    assert await mgr.wait_idle(timeout=120)
    sub.close()
    events = [e async for e in sub if e.session_id == s.id]
    return s, events


async def next_event(sub, kind, timeout=60):
    async def _wait():
        async for ev in sub:
            if isinstance(ev, kind):
                return ev
    return await asyncio.wait_for(_wait(), timeout)


def first_user_texts(body) -> list[str]:
    first = body["messages"][0]
    assert first["role"] == "user"
    content = first["content"]
    return [content] if isinstance(content, str) else [b.get("text", "") for b in content if b.get("type") == "text"]


# ---------------------------------------------------------------------------------------------
async def test_seed_question_answered_from_the_preseed_in_the_first_request(seed, tmp_path):
    engine, ws, _ = seed
    with StandIn(FactResponder()) as api:
        mgr = SessionManager(engine, cfg(api, tmp_path))
        s, events = await run_one(mgr, QUESTION, workspace=ws)
        await mgr.aclose()
        first = api.message_requests[0]
    assert s.status == S.DONE, s.error
    assert s.spec.backend == "claude-code" and s.to_dict()["backend"] == "claude-code"
    for fact in FACTS:
        assert fact in s.final_text, (fact, s.final_text)
    for wrong in WRONG:
        assert wrong not in s.final_text
    texts = first_user_texts(first)
    # the very first request, before any model turn or tool call (Claude Code adds a system-role
    # environment message after the user message)
    assert "assistant" not in [m["role"] for m in first["messages"]]
    assert s.preseed_text in texts and texts[-1] == QUESTION  # the block, then the task, as in our loop
    assert texts.index(s.preseed_text) < texts.index(QUESTION)
    assert not any(isinstance(e, ToolCall) for e in events)
    assert {n.name for n in s.injected} == {"staging-stack", "deploy-command"}
    pre = next(e for e in events if isinstance(e, Preseeded))
    assert pre.tokens == s.preseed_tokens > 0 and pre.text == s.preseed_text
    usage = [e for e in events if isinstance(e, UsageUpdate)]
    final = [e for e in usage if not e.partial]
    assert len(final) == 1 and all(e.cost_source == "claude-code" for e in usage)
    assert final[0].usage == s.usage and final[0].cost_usd == s.cost_usd > 0 and final[0].context_window
    assert any(e.partial for e in usage)  # live figures while it streamed
    # Claude Code's own tools and our memory tools were offered; ours from the in-process MCP server
    names = {t["name"] for t in first["tools"]}
    assert {"Read", "Bash", "mcp__cockpit__memory_search", "mcp__cockpit__memory_save"} <= names
    recs = read_transcript(s.transcript_path)
    h = recs[0]
    assert h["backend"] == "claude-code" and h["preseed_text"] == s.preseed_text
    assert [n["name"] for n in h["injected"]] == [n.name for n in s.injected] and h["preseed_tokens"] > 0
    assert any(r["type"] == "claude_code" and r["session_id"] == s.claude_session_id for r in recs)
    assert [r["role"] for r in recs if r["type"] == "message"] == ["user", "assistant"]


async def test_no_preseed_makes_the_model_call_the_mcp_memory_search(seed, tmp_path):
    engine, ws, _ = seed
    with StandIn(FactResponder()) as api:
        mgr = SessionManager(engine, cfg(api, tmp_path))
        s, events = await run_one(mgr, QUESTION, workspace=ws, preseed=False)
        await mgr.aclose()
        first = api.message_requests[0]
    assert s.status == S.DONE, s.error
    system = "\n".join(b["text"] for b in first["system"])
    assert "Start by calling mcp__cockpit__memory_search" in system
    assert not any(f in "\n".join(first_user_texts(first)) for f in FACTS)
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [c.name for c in calls] == ["mcp__cockpit__memory_search"]
    result = next(e for e in events if isinstance(e, ToolResult))
    assert not result.is_error and "staging-stack" in result.content  # the same warm engine answered
    assert all(f in s.final_text for f in FACTS), s.final_text
    assert s.injected == () and s.requests == 2


class NotesEngine:
    """A memory backend that records saves (the MCP server's wiring, without a model load)."""

    ready = True

    def __init__(self, folder: Path):
        self.folder = folder
        self.saved: list[tuple] = []

    def wait_ready(self, timeout=None):
        return True

    def build_preseed(self, query, top_k=5):
        from memory import Preseed

        return Preseed(text="", hits=[], tokens=0, considered=0)

    def search(self, query, top_k=5):
        return []

    def get(self, name):
        return None

    def save(self, name, description, body, priority=False):
        self.saved.append((name, description, body, priority))
        path = self.folder / f"{name}.md"
        path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}\n")
        return path


def test_the_notes_engine_fake_implements_the_memory_backend():
    from cockpit.runtime.protocols import MemoryBackend

    assert_implements(NotesEngine, MemoryBackend)


def tool_results(body) -> list[dict]:
    return [b for m in body["messages"] if m["role"] == "user" and isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "tool_result"]


def result_text(block) -> str:
    c = block.get("content")
    return c if isinstance(c, str) else "\n".join(x.get("text", "") for x in c or [])


async def test_an_approval_is_asked_in_the_pane_and_denied_with_a_reason(repo, tmp_path):
    with StandIn() as api:
        api.script(
            Reply("Creating it.", [ToolUse("Write", {"file_path": "hello.py", "content": "print('hi')\n"})]),
            Reply("Understood, I did not create it."),
        )
        mgr = SessionManager(None, cfg(api, tmp_path, interactive=True))
        sub = mgr.subscribe()
        s = await mgr.spawn(SpawnSpec("add hello.py", workspace=repo))  # default mode: edits ask
        ask = await next_event(sub, ApprovalRequested)
        assert ask.tool == "Write" and ask.kind == "create" and ask.summary == "create hello.py (+1 -0)"
        assert "+print('hi')" in ask.detail and ask.suggestion
        assert s.status == S.NEEDS_APPROVAL and s.pending == ask
        await mgr.answer(s.id, None, allow=False, reason="not now, the release is frozen")
        resolved = await next_event(sub, ApprovalResolved)
        assert (resolved.request_id, resolved.allowed) == (ask.request_id, False)
        assert await mgr.wait_idle(timeout=60)
        assert s.status == S.WAITING and s.final_text == "Understood, I did not create it."
        denial = tool_results(api.message_requests[-1])[-1]
        assert denial.get("is_error") and "the release is frozen" in result_text(denial)
        assert not (Path(s.cwd) / "hello.py").exists()
        await mgr.aclose()
    recs = read_transcript(s.transcript_path)
    assert [r["allowed"] for r in recs if r["type"] == "approval_result"] == [False]


async def test_allow_for_the_session_stops_asking_and_memory_save_asks_like_an_edit(repo, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    engine = NotesEngine(notes)
    with StandIn() as api:
        api.script(
            Reply("", [ToolUse("Write", {"file_path": "a.txt", "content": "a\n"})]),
            Reply("", [ToolUse("Write", {"file_path": "b.txt", "content": "b\n"})]),
            Reply("", [ToolUse("mcp__cockpit__memory_save", {"name": "staging-port", "description": "Staging runs on 6443",
                                                                 "body": "Port 6443."})]),
            Reply("Both files written and the fact saved."),
        )
        mgr = SessionManager(engine, cfg(api, tmp_path, interactive=True))
        sub, every = mgr.subscribe(), mgr.subscribe()
        s = await mgr.spawn(SpawnSpec("write two files", workspace=repo, preseed=False))
        first = await next_event(sub, ApprovalRequested)
        assert first.kind == "create"
        await mgr.answer(s.id, first.request_id, allow=True, scope="session")
        save = await next_event(sub, ApprovalRequested)  # b.txt did not ask; memory_save does
        assert save.tool == "mcp__cockpit__memory_save" and save.kind == "memory_save"
        assert "staging-port" in save.summary and "Port 6443." in save.detail
        await mgr.answer(s.id, save.request_id, allow=True)
        assert await mgr.wait_idle(timeout=60)
        assert s.status == S.WAITING, s.error
        await mgr.aclose()
    events = [e async for e in every]
    assert sum(isinstance(e, ApprovalRequested) for e in events) == 2
    changed = [e for e in events if isinstance(e, WorktreeChanged)]
    assert (changed[0].files, changed[-1].files, changed[-1].added) == (1, 2, 2)  # after each Write (PostToolUse)
    assert (Path(s.worktree.path) / "a.txt").is_file() and (Path(s.worktree.path) / "b.txt").is_file()
    assert engine.saved == [("staging-port", "Staging runs on 6443", "Port 6443.", False)]


async def test_headless_asks_are_denied_with_the_reason(repo, tmp_path):
    with StandIn() as api:
        api.script(
            Reply("", [ToolUse("Write", {"file_path": "x.txt", "content": "x\n"})]),
            Reply("I could not write it."),
        )
        mgr = SessionManager(None, cfg(api, tmp_path))
        s, events = await run_one(mgr, "write x", workspace=repo)
        await mgr.aclose()
        denial = tool_results(api.message_requests[-1])[-1]
    assert s.status == S.DONE
    resolved = next(e for e in events if isinstance(e, ApprovalResolved))
    assert not resolved.allowed and resolved.scope == "auto"
    assert "nobody can answer approvals in a headless run" in result_text(denial)
    assert s.worktree_removed  # nothing changed: no worktree left behind


async def test_kill_while_an_approval_waits(repo, tmp_path):
    with StandIn() as api:
        api.script(Reply("", [ToolUse("Bash", {"command": "rm -rf build", "description": "clean"})]))
        mgr = SessionManager(None, cfg(api, tmp_path, interactive=True))
        sub = mgr.subscribe()
        s = await mgr.spawn(SpawnSpec("clean up", workspace=repo))
        ask = await next_event(sub, ApprovalRequested)
        assert ask.kind == "bash" and ask.detail == "rm -rf build"
        await mgr.kill(s.id)
        assert s.status == S.KILLED and s.pending is None
        await mgr.aclose()


async def test_resume_by_claude_code_session_id_after_a_restart(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    with StandIn() as api:
        api.script(Reply("Noted: kumquat."))
        mgr = SessionManager(None, cfg(api, tmp_path, interactive=True))
        s1, _ = await run_one(mgr, "remember the word kumquat", workspace=ws)
        assert s1.status == S.WAITING, s1.error
        cc_id = s1.claude_session_id
        first_cost = s1.cost_usd
        await mgr.aclose()  # the cockpit stops; Claude Code's session stays on disk

        api.script(Reply("The word was kumquat."))
        mgr2 = SessionManager(None, cfg(api, tmp_path, interactive=True))
        s2 = await mgr2.resume(cc_id)
        assert await mgr2.wait_idle(timeout=60) and s2.status == S.WAITING
        assert s2.spec.backend == "claude-code" and s2.resumed_from == str(s1.transcript_path)
        await mgr2.send(s2.id, "what was the word?")
        assert await mgr2.wait_idle(timeout=60)
        last = api.message_requests[-1]
        await mgr2.aclose()
    said = json.dumps(last["messages"])
    assert "remember the word kumquat" in said and "Noted: kumquat." in said and "what was the word?" in said
    assert s2.final_text == "The word was kumquat." and s2.claude_session_id == cc_id
    assert 0 < s2.cost_usd < first_cost  # this session's own turn, not Claude Code's cumulative figure
    header = read_transcript(s2.transcript_path)[0]
    assert header["claude_code"]["resume"] == cc_id


def test_cockpit_run_json_report_worktree_usage_cost_and_no_key_leak(repo, tmp_path, monkeypatch, capsys):
    data = Path(__import__("os").environ["COCKPIT_DATA_DIR"])
    (data / "config.toml").write_text('[permissions]\nallow = ["Bash(python3 *)", "Bash(env)"]\n')
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    with StandIn() as api:
        api.script(
            Reply("Creating the file.", [ToolUse("Write", {"file_path": "hello.py", "content": "print('hi from cockpit')\n"})]),
            Reply("Trying outside too.", [ToolUse("Write", {"file_path": "../escape.txt", "content": "x\n"})]),
            Reply("Running it.", [ToolUse("Bash", {"command": "python3 hello.py", "description": "run"})]),
            Reply("Checking the environment.", [ToolUse("Bash", {"command": "env", "description": "env"})]),
            Reply("Done: hello.py prints a greeting."),
        )
        code = main(["run", "add hello.py and run it", "--backend", "claude-code", "--permission-mode", "acceptEdits",
                     "--claude-setting-sources", "none", "--base-url", api.base_url, "--workspace", str(repo),
                     "--model", "standin-model", "--json"])
        bodies = api.message_requests
        keys = {r.headers.get("x-api-key") for r in api.requests if r.path.endswith("/v1/messages")}
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out
    row = out["sessions"][0]
    assert row["backend"] == "claude-code" and row["status"] == "done"
    assert row["answer"] == "Done: hello.py prints a greeting."
    assert row["cost_source"] == "claude-code" and row["cost_usd"] > 0
    assert row["usage"]["total"] > 0 and row["requests"] == 5 and row["claude_session_id"]
    assert out["totals"]["cost_usd"] == row["cost_usd"] and out["totals"]["usage"] == row["usage"]
    wt = Path(row["worktree"]["path"])
    assert (wt / "hello.py").read_text() == "print('hi from cockpit')\n"
    assert not (repo / "hello.py").exists() and not (repo.parent / "escape.txt").exists()
    assert not (wt.parent / "escape.txt").exists()
    assert row["diff"] == {"files": 1, "added": 1, "removed": 0}
    results = [result_text(b) for b in tool_results(bodies[-1])]
    assert "refused" in results[1] and "working tree" in results[1]
    assert "hi from cockpit" in results[2]
    env_out = results[3]
    assert "COCKPIT_SESSION_ID=" in env_out and KEY not in env_out  # the key is not in the shell's environment
    assert keys == {KEY}  # …yet Claude Code authenticated with it (apiKeyHelper)
    transcript = Path(row["transcript"]).read_text()
    assert KEY not in transcript


# -- the parts, without the CLI ------------------------------------------------------------------
def test_describe_shows_an_edit_as_a_diff_of_the_file(tmp_path):
    from cockpit.runtime.claude_code.approvals import describe

    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    d = describe("Edit", {"file_path": str(tmp_path / "calc.py"), "old_string": "a - b", "new_string": "a + b"}, tmp_path)
    assert (d.kind, d.summary, d.rule) == ("edit", "edit calc.py (+1 -1)", "Edit")
    assert "-    return a - b\n+    return a + b" in d.detail
    d = describe("Bash", {"command": "pytest -q tests"}, tmp_path)
    assert (d.kind, d.detail, d.rule) == ("bash", "pytest -q tests", "Bash(pytest *)")
    d = describe("WebFetch", {"url": "https://example.com"}, tmp_path)
    assert d.kind == "tool" and "example.com" in d.summary


def test_edits_outside_the_working_tree_are_refused(tmp_path):
    from cockpit.runtime.claude_code.approvals import refused_path

    root = tmp_path / "tree"
    root.mkdir()
    (root / "link").symlink_to(tmp_path)
    assert refused_path("Write", {"file_path": "ok.txt"}, root) is None
    assert refused_path("Edit", {"file_path": str(root / "sub" / "ok.py")}, root) is None
    for bad in ("../x", str(tmp_path / "x"), "link/x", "~/.bashrc", ".git/config"):
        assert "refused" in refused_path("Write", {"file_path": bad}, root), bad
    assert refused_path("NotebookEdit", {"notebook_path": "/etc/n.ipynb"}, root)
    assert refused_path("Read", {"file_path": "/etc/passwd"}, root) is None  # reading is Claude Code's call


def test_permission_rules_follow_the_mode_and_the_config():
    from cockpit.runtime.claude_code.options import permission_rules
    from cockpit.runtime.permissions import PermissionMode as M

    c = RuntimeConfig(allow=("Bash(pytest *)", "memory_save"), deny=("Bash(rm *)",))
    r = permission_rules(c, M.DEFAULT)
    assert r == {"allow": ["mcp__cockpit__memory_search", "mcp__cockpit__memory_get", "Bash(pytest *)", "mcp__cockpit__memory_save"],
                 "deny": ["Bash(rm *)"]}
    r = permission_rules(RuntimeConfig(), M.ACCEPT_EDITS)  # memory_save writes outside the tree: it asks
    assert "mcp__cockpit__memory_save" not in r["allow"] and r["deny"] == []
    assert "mcp__cockpit__memory_save" in permission_rules(RuntimeConfig(), M.BYPASS)["allow"]
    r = permission_rules(RuntimeConfig(), M.PLAN)
    assert r["deny"] == ["mcp__cockpit__memory_save"]
    assert permission_rules(RuntimeConfig(), M.DEFAULT) == {"allow": ["mcp__cockpit__memory_search", "mcp__cockpit__memory_get"], "deny": []}


def test_claude_codes_own_sandbox_gets_cockpits_policy(tmp_path, monkeypatch):
    """settings.sandbox on (bash auto-allowed in auto only), network as configured, the hidden
    paths as Read deny rules (less the session's own worktree), protected paths as ask rules."""
    import json as _json

    from cockpit.runtime.claude_code.options import agent_options
    from cockpit.runtime.permissions import PermissionMode as M
    from cockpit.runtime.session_base import SessionSpec

    data = Path(__import__("os").environ["COCKPIT_DATA_DIR"])
    tree = data / "worktrees" / "repo-x" / "s1"
    tree.mkdir(parents=True)
    (data / "worktrees" / "repo-x" / "s2").mkdir()
    (data / "sessions").mkdir()
    cfg = RuntimeConfig(network="allow", allow_hosts=("pypi.org",))
    spec = SessionSpec("t", "m", tree, tree, permission_mode=M.AUTO, sandbox="claude-code", network="allow")
    opts = agent_options(spec, cfg, session_id="s1", key_file=None, mcp_server=None, can_use_tool=lambda *a: None,
                         hooks={}, stderr=lambda _: None)
    settings = _json.loads(opts.settings)
    assert opts.permission_mode == "acceptEdits"
    assert settings["sandbox"] == {"enabled": True, "autoAllowBashIfSandboxed": True, "allowUnsandboxedCommands": True,
                                   "network": {"allowedDomains": ["pypi.org"]}}
    deny = settings["permissions"]["deny"]
    assert "Read(~/.ssh/**)" in deny and f"Read(/{data}/sessions/**)" in deny
    assert f"Read(/{data}/worktrees/repo-x/s2/**)" in deny  # another session's worktree
    assert not any(str(tree) in r for r in deny)  # never its own
    assert "Edit(**/.githooks/**)" in settings["permissions"]["ask"] and "Edit(**/CLAUDE.md)" in settings["permissions"]["ask"]
    spec = SessionSpec("t", "m", tree, tree, permission_mode=M.DEFAULT, sandbox="")
    opts = agent_options(spec, cfg, session_id="s1", key_file=None, mcp_server=None, can_use_tool=lambda *a: None,
                         hooks={}, stderr=lambda _: None)
    assert "sandbox" not in _json.loads(opts.settings)


def test_the_key_file_is_private_and_removed(monkeypatch):
    import os
    import stat

    from cockpit.runtime.claude_code.options import KeyFile, process_env

    kf = KeyFile(KEY)
    assert stat.S_IMODE(os.stat(kf.folder).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(kf.path).st_mode) == 0o600 and kf.path.read_text() == KEY
    assert kf.helper.startswith("cat ") and KEY not in kf.helper
    env = process_env(RuntimeConfig(api_key=KEY, base_url="http://127.0.0.1:9"), "abc", kf)
    assert env["ANTHROPIC_API_KEY"] == "" and env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9"
    assert KEY not in json.dumps(env)
    kf.remove()
    assert not kf.folder.exists()
    assert "ANTHROPIC_API_KEY" not in process_env(RuntimeConfig(), "abc", None)  # Claude Code's own login


def test_resume_info_and_finding_a_transcript_by_claude_code_session_id(tmp_path):
    from cockpit.runtime.claude_code import find_transcript, looks_like_session_id, resume_info
    from cockpit.runtime.transcript import TranscriptWriter

    sid = "0d00cb17-2e57-4387-bf42-b66d2e9c9e89"
    w = TranscriptWriter(tmp_path / "20260101-000000-abc.jsonl")
    w.write("header", session_id="abc", backend="claude-code")
    w.write("claude_code", session_id=sid)
    w.write("usage", usage={}, claude_total_cost_usd=0.25)
    w.close()
    assert looks_like_session_id(sid) and not looks_like_session_id("abc")
    assert find_transcript(tmp_path, sid) == tmp_path / "20260101-000000-abc.jsonl"
    assert find_transcript(tmp_path, "11111111-2e57-4387-bf42-b66d2e9c9e89") is None
    assert resume_info(read_transcript(w.path)) == {"claude_session_id": sid, "claude_total_cost_usd": 0.25}


def test_allow_for_the_session_without_a_suggestion_adds_our_rule_to_the_session_only():
    from cockpit.runtime.claude_code.session import _rule_update

    assert _rule_update("Bash(pytest *)").to_dict() == {
        "type": "addRules", "destination": "session", "behavior": "allow",
        "rules": [{"toolName": "Bash", "ruleContent": "pytest *"}]}
    assert _rule_update("mcp__cockpit__memory_save").to_dict()["rules"] == [{"toolName": "mcp__cockpit__memory_save"}]


def test_cockpit_run_through_the_background_server(tmp_path, monkeypatch, capsys):
    """The default path of `cockpit run`: sessions run in the per-user server, which starts Claude Code."""

    from cockpit.server.client import BlockingClient

    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("COCKPIT_NO_SERVER", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    try:
        with StandIn() as api:
            api.script(Reply("Answered by Claude Code in the server."))
            code = main(["run", "which port?", "--backend", "claude-code", "--claude-setting-sources", "none",
                         "--base-url", api.base_url, "--workspace", str(ws), "--model", "standin-model", "--json"])
            with BlockingClient() as c:
                hello = c.call("hello", client="test")
        out = json.loads(capsys.readouterr().out)
        row = out["sessions"][0]
        assert code == 0 and row["backend"] == "claude-code" and row["status"] == "done"
        assert row["answer"] == "Answered by Claude Code in the server."
        assert row["cost_source"] == "claude-code" and row["cost_usd"] > 0 and row["claude_session_id"]
        assert "claude-code" in hello["backends"]
    finally:
        stop_server()
