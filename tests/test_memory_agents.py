"""Our memory for agents outside the cockpit: the MCP server, the Claude Code hook, rule files."""

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from seed_data import QUESTION, write_seed

from cockpit.cli import main
from cockpit.hook_fast import handle
from cockpit.notes_location import auto_memory_dir, project_key, resolve_notes
from cockpit.runtime.spawn import SpawnSpec
from memory.instructions import discover, for_task, parse, paths_named


@pytest.fixture(scope="module")
def notes(tmp_path_factory):
    notes, _ws = write_seed(tmp_path_factory.mktemp("agent-notes"))
    return notes


# -- MCP ------------------------------------------------------------------------------------------
async def _mcp_session(notes: Path, env: dict, calls):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "cockpit", "memory", "mcp", "--notes", str(notes)],
                                   env=env)
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as session:
            init = await session.initialize()
            from cockpit import __version__

            assert init.server_info.name == "cockpit-memory" and init.server_info.version == __version__
            return await calls(session)


def test_mcp_server_tools_and_resource(notes, tmp_path):
    env = {**os.environ, "COCKPIT_NO_SERVER": "1", "HF_HUB_OFFLINE": "1"}

    async def calls(session):
        tools = sorted(t.name for t in (await session.list_tools()).tools)
        found = await session.call_tool("memory_search", {"query": "which port does staging use?", "top_k": 2})
        note = await session.call_tool("memory_get", {"name": "deploy-command"})
        missing = await session.call_tool("memory_get", {"name": "no-such-note"})
        bad = await session.call_tool("memory_search", {"query": "  "})
        saved = await session.call_tool("memory_save", {"name": "db-port", "description": "The database listens on 5433.",
                                                        "body": "Postgres runs on 5433 in every environment."})
        again = await session.call_tool("memory_save", {"name": "db-port", "description": "x", "body": "y"})
        index = await session.read_resource("notes://index")
        return tools, found, note, missing, bad, saved, again, index

    tools, found, note, missing, bad, saved, again, index = asyncio.run(_mcp_session(notes, env, calls))
    assert tools == ["memory_get", "memory_save", "memory_search"]
    hits = found.structured_content["result"]
    assert hits[0]["name"] == "staging-stack" and hits[0]["priority"] is True and 0 < hits[0]["score"] <= 1
    assert json.loads(note.content[0].text)["body"].startswith("Run `make ship-v2` from the repository root.")
    assert missing.is_error and "no note named 'no-such-note'" in missing.content[0].text
    assert bad.is_error and "empty" in bad.content[0].text
    assert not saved.is_error and (notes / "db-port.md").exists()
    assert again.is_error and "exists" in again.content[0].text  # never overwrites
    text = index.contents[0].text
    assert "★ staging-stack: Staging runs on port 6443" in text and "db-port" in text
    (notes / "db-port.md").unlink()


def test_the_agents_search_tools_say_a_decision_was_superseded(tmp_path):
    """`memory_search` (MCP and the session's own tool) and `notes://index` gave a superseded
    decision as the top hit with nothing saying so (the CLI and the block did): an agent that
    searched was handed the retired decision."""
    from cockpit.runtime.tools import format_hits
    from memory.types import Hit

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "error-format-v1.md").write_text(
        "---\nname: error-format-v1\ndescription: API errors are returned as one error string field.\n"
        "status: superseded\nsuperseded_by: error-format-problem-json\n---\nErrors are one JSON string field.\n")
    (notes / "error-format-problem-json.md").write_text(
        "---\nname: error-format-problem-json\ndescription: API errors use RFC 9457 problem+json.\n"
        "status: accepted\n---\ntype, title, status, detail, instance.\n")
    env = {**os.environ, "COCKPIT_NO_SERVER": "1", "HF_HUB_OFFLINE": "1"}

    async def calls(session):
        found = await session.call_tool("memory_search", {"query": "how are API errors returned", "top_k": 5})
        return found, await session.read_resource("notes://index")

    found, index = asyncio.run(_mcp_session(notes, env, calls))
    hits = {h["name"]: h for h in found.structured_content["result"]}
    assert hits["error-format-v1"]["status"] == "superseded"
    assert hits["error-format-v1"]["superseded_by"] == "error-format-problem-json"
    assert "status" not in hits["error-format-problem-json"] or hits["error-format-problem-json"]["status"] != "superseded"
    text = index.contents[0].text
    assert "- error-format-v1 (superseded by error-format-problem-json): API errors" in text
    assert "- error-format-problem-json: API errors use" in text
    hit = Hit("error-format-v1", "API errors …", "", False, 0.7, Path("e.md"), status="superseded",
              superseded_by="error-format-problem-json")
    assert format_hits([hit]).startswith("1. error-format-v1 [superseded by error-format-problem-json] (score 0.700)")


# -- the hook -------------------------------------------------------------------------------------
def _payload(session="s-1", prompt=QUESTION, event="UserPromptSubmit", cwd="/"):
    return {"session_id": session, "transcript_path": "/tmp/t.jsonl", "cwd": cwd, "permission_mode": "default",
            "hook_event_name": event, "prompt": prompt}


def test_hook_preseeds_the_first_prompt_only(notes):
    out = handle(_payload(), str(notes), None, 5)
    ctx = out["hookSpecificOutput"]
    assert ctx["hookEventName"] == "UserPromptSubmit"
    assert ctx["additionalContext"].startswith("<project-notes>")
    assert "6443" in ctx["additionalContext"] and "make ship-v2" in ctx["additionalContext"]
    assert handle(_payload(prompt="and the database?"), str(notes), None, 5) is None  # later prompt: nothing
    start = handle(_payload("s-2", event="SessionStart"), str(notes), None, 5)
    assert start["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert handle({**_payload("s-3", event="SessionStart"), "prompt": None}, str(notes), None, 5) is None
    # an unrelated task: no line, only the small folder's whole index ("may be relevant")
    unrelated = handle(_payload("s-4", prompt="bake a sourdough loaf"), str(notes), None, 5)["hookSpecificOutput"]
    lines = unrelated["additionalContext"].splitlines()[2:-1]
    assert lines[0].startswith("★ [staging-stack]")  # the priority note: given whatever the task
    assert lines[1] == "May be relevant (read with memory_get before relying on it):"
    assert all(line.startswith("- [") for line in lines[2:])


def test_the_hook_records_a_note_read_in_full_that_was_not_a_line(notes, capsys):
    from cockpit.cli import main

    out = handle(_payload("s-miss"), str(notes), None, 5)
    block = out["hookSpecificOutput"]["additionalContext"]
    assert "★ [staging-stack]" in block and "- [deploy-command]" in block  # a line, and an index entry

    def post(tool, data):
        return {"session_id": "s-miss", "cwd": "/", "hook_event_name": "PostToolUse", "tool_name": tool,
                "tool_input": data, "tool_response": {}}

    assert handle(post("mcp__cockpit__memory_get", {"name": "staging-stack"}), str(notes), None, 5) is None  # a line
    assert handle(post("mcp__cockpit__memory_get", {"name": "deploy-command"}), str(notes), None, 5) is None
    assert handle(post("Read", {"file_path": str(notes / "deploy-command.md")}), str(notes), None, 5) is None  # again
    assert handle(post("Read", {"file_path": "/etc/hosts"}), str(notes), None, 5) is None  # not a note
    # a file whose name is not its note's: the frontmatter's name counts (it recorded the file name)
    renamed = {"staging-stack.md": "stack.md", "deploy-command.md": "deploy.md"}
    try:
        for old, new in renamed.items():
            (notes / old).rename(notes / new)  # (the module's folder: named back below)
        assert handle(post("Read", {"file_path": str(notes / "stack.md")}), str(notes), None, 5) is None  # a line
        assert handle(post("Read", {"file_path": str(notes / "deploy.md")}), str(notes), None, 5) is None  # again
    finally:
        for old, new in renamed.items():
            if (notes / new).exists():
                (notes / new).rename(notes / old)
    assert main(["memory", "misses", "--json", "--notes", str(notes)]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["note"], r["via"], r["in_index"], r["session"]) for r in rows] == [
        ("deploy-command", "mcp__cockpit__memory_get", True, "s-miss")]
    assert rows[0]["task"] == QUESTION


def test_the_installed_hook_also_watches_for_misses_and_uninstalls_cleanly():
    from cockpit.memory_hook import MISS_MATCHER, with_hook, without_hook

    settings = with_hook({"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
                                                                                  "command": "lint"}]}]}}, "x -m cockpit memory hook")
    post = settings["hooks"]["PostToolUse"]
    assert post[-1]["matcher"] == MISS_MATCHER and len(post) == 2
    # Claude Code's matcher is a regex over mcp__<server>__<tool>: the server as the claude-code
    # backend names it and as the guide's `claude mcp add cockpit-memory …` does (it missed that one)
    import re

    seen = [t for t in ("mcp__cockpit__memory_get", "mcp__cockpit-memory__memory_get", "Read",
                        "mcp__cockpit__memory_search", "mcp__other__memory_get", "Bash") if re.fullmatch(MISS_MATCHER, t)]
    assert seen == ["mcp__cockpit__memory_get", "mcp__cockpit-memory__memory_get", "Read"]
    assert with_hook(settings, "x -m cockpit memory hook") == settings  # idempotent
    assert without_hook(settings) == {"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "lint"}]}]}}


def test_the_hook_gives_the_block_a_cockpit_session_gets(notes, tmp_path):
    """Not a smaller one: without --top-k the hook's block is the token-budgeted block (it was
    cut to 5 notes)."""
    from memory import MemoryEngine

    for i in range(8):  # more notes that the question's words reach than 5
        (notes / f"staging-extra-{i}.md").write_text(
            f"---\nname: staging-extra-{i}\ndescription: Staging detail {i} - the staging deploy host runs check {i}\n"
            f"---\nStaging port checks, part {i}.\n")
    proc = subprocess.run([sys.executable, "-m", "cockpit", "memory", "hook", "--notes", str(notes)],
                          input=json.dumps(_payload("s-budget")).encode(), capture_output=True, timeout=120,
                          env={**os.environ, "COCKPIT_NO_SERVER": "1"})
    out = json.loads(proc.stdout)
    with MemoryEngine(notes, index_path=tmp_path / "i.sqlite") as engine:
        engine.start_warmup()
        engine.sync()
        block = engine.build_preseed(QUESTION).text
    assert out["hookSpecificOutput"]["additionalContext"] == block and block.count("staging-extra-") > 3
    for i in range(8):
        (notes / f"staging-extra-{i}.md").unlink()


def test_hook_is_silent_inside_a_cockpit_claude_code_session(notes, monkeypatch):
    """Cockpit's claude-code backend preseeds the first prompt itself; a hook from the user's
    settings must not add the block a second time."""
    monkeypatch.setenv("COCKPIT_SESSION_ID", "abc123")
    assert handle(_payload("s-cockpit"), str(notes), None, 5) is None
    monkeypatch.delenv("COCKPIT_SESSION_ID")
    assert handle(_payload("s-cockpit"), str(notes), None, 5) is not None


@pytest.mark.parametrize("stdin", [b"", b"not json", b"[1,2]", b'{"hook_event_name": "UserPromptSubmit"}',
                                   b"\xff\xfe\x00garbage"])
def test_hook_with_broken_input_prints_nothing_and_exits_0(stdin, notes):
    proc = subprocess.run([sys.executable, "-m", "cockpit", "memory", "hook", "--notes", str(notes)], input=stdin,
                          capture_output=True, env={**os.environ, "COCKPIT_NO_SERVER": "1"}, timeout=120)
    assert proc.returncode == 0 and proc.stdout == b""


def test_hook_process_output_is_claude_code_json(notes):
    proc = subprocess.run([sys.executable, "-m", "cockpit", "memory", "hook", "--notes", str(notes)],
                          input=json.dumps(_payload("proc-1")).encode(), capture_output=True, timeout=120,
                          env={**os.environ, "COCKPIT_NO_SERVER": "1"})
    out = json.loads(proc.stdout)
    assert proc.returncode == 0 and "callisto" in out["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize("existing", [None, '{\n    "model": "opus",\n    "hooks": {"PreToolUse": []}\n}\n', "{}",
                                      '{"x": "\\ud800", "hooks": {}}\n'])  # a lone surrogate escape
def test_hook_install_uninstall_round_trip_is_byte_identical(tmp_path, monkeypatch, capsys, existing):
    monkeypatch.chdir(tmp_path)
    settings = tmp_path / ".claude" / "settings.json"
    if existing is not None:
        settings.parent.mkdir()
        settings.write_text(existing)
    before = settings.read_bytes() if existing is not None else None
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("y\n"))
    assert main(["memory", "hook", "--install", "--project", "--notes", "notes"]) == 0
    shown = capsys.readouterr().out
    assert "+" in shown and "memory hook" in shown  # the diff was shown before asking
    data = json.loads(settings.read_text())
    hook = data["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    # a project's file is committed: the portable command, the notes folder relative to the session's cwd
    assert hook["type"] == "command" and hook["command"] == "cockpit memory hook --notes notes"
    assert str(tmp_path) not in json.dumps(data) and sys.executable not in json.dumps(data)
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("y\n"))
    assert main(["memory", "hook", "--install", "--project", "--notes", "notes"]) == 0  # idempotent
    assert capsys.readouterr().out.strip().endswith("nothing to change")
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("y\n"))
    assert main(["memory", "hook", "--uninstall", "--project"]) == 0
    if before is None:
        assert not settings.exists() and not settings.parent.exists()  # the folder it made is gone too
    else:
        assert settings.read_bytes() == before


def test_hook_install_keeps_the_files_indent(tmp_path, monkeypatch, capsys):
    """A committed 4-space settings file was rewritten with 2 spaces: every line of it changed in
    the team's diff, not only the hook's."""
    monkeypatch.chdir(tmp_path)
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{\n    "model": "opus",\n    "permissions": {\n        "allow": []\n    }\n}\n')
    assert main(["memory", "hook", "--install", "--project", "--notes", "notes", "--yes"]) == 0
    text = settings.read_text()
    assert text.startswith('{\n    "model": "opus",\n    "permissions": {\n        "allow": []\n    },\n')
    assert '\n    "hooks": {\n        "UserPromptSubmit": [' in text


def test_uninstall_keeps_a_claude_folder_that_was_there_before(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".claude").mkdir()
    assert main(["memory", "hook", "--install", "--yes"]) == 0
    assert main(["memory", "hook", "--uninstall", "--yes"]) == 0
    assert (tmp_path / ".claude").is_dir() and not (tmp_path / ".claude" / "settings.json").exists()


def test_uninstall_with_nothing_installed_touches_nothing(tmp_path, monkeypatch, capsys):
    """No entry of ours: no file made (it wrote `{}` into a new .claude/settings.json), and a
    user's own settings are not reformatted (they were rewritten as indented JSON)."""
    monkeypatch.chdir(tmp_path)
    assert main(["memory", "hook", "--uninstall", "--yes"]) == 0
    assert not (tmp_path / ".claude").exists()
    assert "no such file: nothing to change" in capsys.readouterr().out
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    (tmp_path / "cc").mkdir()
    user = tmp_path / "cc" / "settings.json"
    user.write_text('{"model": "opus",   "env": {"A": "1"}}')
    assert main(["memory", "hook", "--uninstall", "--user", "--yes"]) == 0
    assert user.read_text() == '{"model": "opus",   "env": {"A": "1"}}'
    assert "no Cockpit hook in it: nothing to change" in capsys.readouterr().out
    empty = '{\n    "model": "opus",\n    "hooks": {"PreToolUse": [], "UserPromptSubmit": [{"hooks": []}]}\n}\n'
    user.write_text(empty)  # empty hook lists are the user's too (they were pruned and reformatted)
    assert main(["memory", "hook", "--uninstall", "--user", "--yes"]) == 0
    assert user.read_text() == empty


def test_hook_install_refused_answer_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("n\n"))
    assert main(["memory", "hook", "--install"]) == 1
    assert not (tmp_path / ".claude" / "settings.json").exists()


def test_uninstall_removes_only_ours_when_the_file_changed_since(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["memory", "hook", "--install", "--yes"]) == 0
    settings = tmp_path / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    data["hooks"]["UserPromptSubmit"].append({"hooks": [{"type": "command", "command": "echo other"}]})
    data["env"] = {"A": "1"}
    settings.write_text(json.dumps(data))
    assert main(["memory", "hook", "--uninstall", "--yes"]) == 0
    left = json.loads(settings.read_text())
    assert left == {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo other"}]}]},
                    "env": {"A": "1"}}


# -- where notes and rules are ------------------------------------------------------------------------
def test_auto_memory_folder_is_named_as_claude_code_names_it(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    project = tmp_path / "my_app.v2"
    project.mkdir()
    key = project_key(project)
    assert key == str(project.resolve()).replace("/", "-").replace("_", "-").replace(".", "-")
    expected = tmp_path / "cc" / "projects" / key / "memory"
    assert auto_memory_dir(project) == expected
    assert resolve_notes("auto", project) == expected
    assert resolve_notes("docs/notes", project) == project / "docs" / "notes"


def test_notes_auto_reaches_cockpit_run_and_the_in_process_app(tmp_path, monkeypatch):
    import argparse

    from cockpit import headless, tui_cli
    from cockpit.tui.app import CockpitApp

    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    project = tmp_path / "proj"
    project.mkdir()
    memory_dir = tmp_path / "cc" / "projects" / project_key(project) / "memory"
    monkeypatch.chdir(project)
    with pytest.raises(Exception, match="notes folder not found: .*memory"):  # named, not "auto"
        headless._notes_folder(argparse.Namespace(notes=Path("auto")))
    memory_dir.mkdir(parents=True)
    assert headless._notes_folder(argparse.Namespace(notes=Path("auto"))) == memory_dir

    seen = []

    class Recorded(tui_cli._DeferredEngine):
        def __init__(self, notes_dir):
            seen.append(notes_dir)
            super().__init__(notes_dir)

    monkeypatch.setattr(tui_cli, "_DeferredEngine", Recorded)
    monkeypatch.setattr(CockpitApp, "run", lambda self, *a, **k: None)
    assert main(["--no-server", "--notes", "auto"]) == 0
    assert seen == [memory_dir]


def test_rule_parsing_is_forgiving():
    fields, body = parse(b"\xef\xbb\xbf---\r\nglobs: *.ts, src/**/*.tsx\r\nalwaysApply: false\r\n---\r\nUse strict mode.\r\n")
    assert fields["globs"] == "*.ts, src/**/*.tsx" and body == "Use strict mode."
    fields, _ = parse(b"---\npaths: {src,lib}/**\n---\nx\n")
    assert fields["paths"] == "{src,lib}/**"
    fields, _ = parse(b"---\npaths:\n  - a/**\n  - b/*.py\n---\nx\n")
    assert fields["paths"] == ["a/**", "b/*.py"]
    with pytest.raises(ValueError):
        parse(b"\x00\x01binary")


def test_discover_sorts_instruction_files(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    (tmp_path / "cc").mkdir()
    (tmp_path / "cc" / "CLAUDE.md").write_text("user-wide rule")
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "CLAUDE.md").write_text("project rule")
    (root / "CLAUDE.local.md").write_text("my local rule")
    (root / "pkg" / "web").mkdir(parents=True)
    (root / "pkg" / "web" / "AGENTS.md").write_text("web rule")
    (root / ".claude" / "rules").mkdir(parents=True)
    (root / ".claude" / "rules" / "py.md").write_text("---\npaths:\n  - '**/*.py'\n---\npython rule")
    (root / ".claude" / "rules" / "broken.md").write_bytes(b"\xff\xfe bad")
    (root / ".cursor" / "rules").mkdir(parents=True)
    (root / ".cursor" / "rules" / "always.mdc").write_text("---\nalwaysApply: true\n---\ncursor always")
    (root / ".cursor" / "rules" / "ts.mdc").write_text("---\nglobs: *.ts\n---\nts rule")
    (root / ".cursor" / "rules" / "ask.mdc").write_text("---\ndescription: Release checklist\n---\nsteps")
    (root / ".cursor" / "rules" / "manual.mdc").write_text("no frontmatter: manual only")
    found, warnings = discover(root)
    by = {i.rel if not i.rel.startswith("/") else "USER": i for i in found}
    assert {k for k, v in by.items() if v.scope == "always"} == {"USER", "CLAUDE.md", "CLAUDE.local.md",
                                                                  ".cursor/rules/always.mdc"}
    assert {k for k, v in by.items() if v.scope == "paths"} == {".claude/rules/py.md", ".cursor/rules/ts.mdc",
                                                                 "pkg/web/AGENTS.md"}
    assert by[".cursor/rules/ask.mdc"].scope == "description" and "manual" not in " ".join(by)
    assert len(warnings) == 1 and "broken.md" in warnings[0] and "not UTF-8" in warnings[0]
    assert by[".claude/rules/py.md"].matches("deep/x/mod.py") and by["pkg/web/AGENTS.md"].matches("pkg/web/app.js")
    assert not by["pkg/web/AGENTS.md"].matches("pkg/api/app.js")
    assert [i.rel for i in for_task(found, "fix pkg/web/index.ts and app.py")] == [
        ".claude/rules/py.md", ".cursor/rules/ts.mdc", "pkg/web/AGENTS.md"]
    assert paths_named("edit src/app.py, then docs/") == ["src/app.py", "docs/"]


def test_agent_requested_rules_are_matched_to_the_task_by_meaning(tmp_path):
    from memory.gate import load_gate
    from memory.instructions import described_for_task

    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / ".cursor" / "rules").mkdir(parents=True)
    (root / ".cursor" / "rules" / "release.mdc").write_text("---\ndescription: How to cut a release\n---\nTag, then ship.")
    (root / ".cursor" / "rules" / "db.mdc").write_text("---\ndescription: Database migrations\n---\nReversible only.")
    found, _ = discover(root, user_config=tmp_path / "none")
    gate = load_gate()
    asked = []

    def similarity(query, texts):
        asked.append((query, list(texts)))
        return [gate.threshold + 0.05 if "release" in t else 0.0 for t in texts]

    chosen = described_for_task(found, "cut the 2.4 release for the app", similarity)
    assert [i.rel for i in chosen] == [".cursor/rules/release.mdc"]
    assert asked == [("cut the 2.4 release for the app", ["How to cut a release", "Database migrations"])] or \
        asked == [("cut the 2.4 release for the app", ["Database migrations", "How to cut a release"])]
    assert described_for_task(found, "bake bread", lambda q, t: [0.0] * len(t)) == []


async def test_a_session_gets_the_agent_requested_rule_its_task_is_about(tmp_path):
    from standin import Reply, StandIn

    from cockpit.runtime import RuntimeConfig, SessionManager
    from memory.gate import load_gate

    ws = tmp_path / "ws"
    (ws / ".cursor" / "rules").mkdir(parents=True)
    (ws / ".cursor" / "rules" / "release.mdc").write_text("---\ndescription: How to cut a release\n---\nTag, then ship.")
    threshold = load_gate().threshold

    class Engine:
        ready = True

        def wait_ready(self, timeout=None):
            return True

        def build_preseed(self, query, top_k=None, **kw):
            from types import SimpleNamespace
            return SimpleNamespace(text="", tokens=0, hits=[])

        def search(self, query, top_k=5):
            return []

        def save(self, *a, **k):
            raise ValueError("read-only")

        def similarity(self, query, texts):
            return [threshold + 0.1 for _ in texts]

    with StandIn() as api:
        api.script(Reply("ok"))
        mgr = SessionManager(Engine(), RuntimeConfig(api_key="k", base_url=api.base_url, interactive=False,
                                                     max_retries=0))
        s = await mgr.spawn(SpawnSpec("cut the release", workspace=ws))
        assert await mgr.wait_idle(timeout=30)
        first = [b["text"] for b in api.message_requests[0]["messages"][0]["content"]]
        await mgr.aclose()
    assert any('<rule file=".cursor/rules/release.mdc" about="How to cut a release">' in t and "Tag, then ship." in t
               for t in first)
    assert s.status.value == "done"


@pytest.mark.parametrize("existing, key", [
    ('{"hooks": []}', '"hooks"'),
    ('{"hooks": {"UserPromptSubmit": {}}}', '"hooks.UserPromptSubmit"'),
    ('{"hooks": {"UserPromptSubmit": [1]}}', '"hooks.UserPromptSubmit[0]"'),
    ('{"hooks": {"UserPromptSubmit": [{"hooks": "x"}]}}', '"hooks.UserPromptSubmit[0]"'),
])
@pytest.mark.parametrize("action", ["--install", "--uninstall"])
def test_hook_install_refuses_settings_it_does_not_understand_and_keeps_them(
        tmp_path, monkeypatch, capsys, existing, key, action):
    monkeypatch.chdir(tmp_path)
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(existing)
    assert main(["memory", "hook", action, "--yes"]) != 0
    assert key in capsys.readouterr().err
    assert settings.read_text() == existing


def test_hook_install_on_a_folder_or_through_a_symlink(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".claude" / "settings.json").mkdir(parents=True)
    assert main(["memory", "hook", "--install", "--yes"]) != 0
    assert "cannot read" in capsys.readouterr().err
    (tmp_path / ".claude" / "settings.json").rmdir()
    real = tmp_path / "dotfiles" / "settings.json"
    real.parent.mkdir()
    real.write_text('{"model": "opus"}')
    (tmp_path / ".claude" / "settings.json").symlink_to(real)
    assert main(["memory", "hook", "--install", "--yes"]) == 0
    assert (tmp_path / ".claude" / "settings.json").is_symlink()
    assert "UserPromptSubmit" in real.read_text()
    assert main(["memory", "hook", "--uninstall", "--yes"]) == 0
    assert (tmp_path / ".claude" / "settings.json").is_symlink() and real.read_text() == '{"model": "opus"}'


def test_instruction_files_that_are_fifos_huge_or_binary_are_skipped_with_a_warning(tmp_path, monkeypatch):
    import threading

    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / ".claude" / "rules").mkdir(parents=True)
    (root / "CLAUDE.md").write_text("project rule")
    fifos = [root / ".claude" / "rules" / "pipe.md", root / "sub" / "AGENTS.md"]
    fifos[1].parent.mkdir()
    for f in fifos:
        os.mkfifo(f)
    (root / ".claude" / "rules" / "huge.md").write_text("x" * (300 * 1024))
    (root / ".claude" / "rules" / "bin.md").write_bytes(b"\x00\x01\x02")
    got: list = []
    t = threading.Thread(target=lambda: got.append(discover(root)), daemon=True)
    t.start()
    t.join(30)
    if t.is_alive():  # blocked on a FIFO: let it go, then fail
        for f in fifos:
            with contextlib.suppress(OSError):
                os.close(os.open(f, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("discover blocked reading a FIFO")
    found, warnings = got[0]
    assert [i.rel for i in found] == ["CLAUDE.md"]
    assert sorted(w.split(": skipped: ")[1] for w in warnings) == [
        "307,200 bytes, over the 262,144-byte cap", "binary file", "not a regular file", "not a regular file"]


# -- the hook never blocks a prompt -----------------------------------------------------------------
def _hook(notes: Path, payload: dict, env: dict) -> tuple[subprocess.CompletedProcess, float]:
    import time

    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "cockpit", "memory", "hook", "--notes", str(notes)],
                          input=json.dumps(payload).encode(), capture_output=True, timeout=60, env=env)
    return proc, time.monotonic() - started


@pytest.fixture
def server_env(tmp_path, monkeypatch):
    """The environment of a hook that uses the server (a fresh data folder); any server it
    started is killed afterwards."""
    from cockpit.server.client import server_pid, wait_for_stop

    monkeypatch.delenv("COCKPIT_NO_SERVER", raising=False)
    env = {k: v for k, v in os.environ.items() if k != "COCKPIT_NO_SERVER"}
    env["HF_HUB_OFFLINE"] = "1"
    yield env
    pid = server_pid()
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)
            os.kill(pid, 18)  # SIGCONT: a stopped one dies too
        assert wait_for_stop(pid, 30)


def _until(pred, timeout: float = 120.0):
    import time

    deadline = time.monotonic() + timeout
    while not (value := pred()):
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)
    return value


def test_hook_cold_start_returns_at_once_then_a_later_prompt_gets_the_block(notes, server_env):
    from cockpit.server.client import BlockingClient, server_running

    proc, _ = _hook(notes, _payload("cold-1"), server_env)
    assert proc.returncode == 0 and proc.stdout == b""
    assert b"starting one in the background" in proc.stderr  # it did not wait for the server (no clock)
    _until(server_running)  # the hook started it, detached

    def engine_ready() -> bool:
        with BlockingClient() as c:
            engines = c.call("server.status")["engines"]
        return any(e["ready"] for e in engines)
    _until(engine_ready)  # … and had it warm the notes' engine
    # the session was not marked preseeded: its next prompt gets the block
    proc, _ = _hook(notes, _payload("cold-1", prompt="and the staging port?"), server_env)
    out = json.loads(proc.stdout)
    assert proc.returncode == 0
    assert out["hookSpecificOutput"]["additionalContext"].startswith("<project-notes>")
    proc, _ = _hook(notes, _payload("cold-1", prompt="and again?"), server_env)
    assert proc.stdout == b""  # once per session


def test_hook_with_a_stopped_server_prints_nothing_and_says_why(notes, server_env):
    """Found from the server's process state (SIGSTOP), not by waiting for a read timeout: the
    line that names it is the proof (no clock: a loaded machine only makes it later)."""
    import signal

    from cockpit.server.client import server_pid, start_server

    start_server()
    os.kill(server_pid(), signal.SIGSTOP)
    proc, _ = _hook(notes, _payload("hung-1"), server_env)
    assert proc.returncode == 0 and proc.stdout == b""
    assert b"is stopped (SIGSTOP or Ctrl-Z)" in proc.stderr


def test_hook_with_a_dead_servers_socket_prints_nothing_and_starts_one(notes, server_env):
    import socket

    from cockpit.server import paths

    sock = paths.socket_path()
    paths.ensure_private_dir(sock.parent)
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(sock))  # a crashed server's socket file: nobody listens
    dead.close()
    proc, _ = _hook(notes, _payload("dead-1"), server_env)
    assert proc.returncode == 0 and proc.stdout == b""
    from cockpit.server.client import server_running

    _until(server_running)


def test_mcp_tool_on_a_stopped_server_is_a_clear_tool_error(notes, server_env):
    import signal

    from cockpit.server.client import server_pid, start_server

    start_server()
    os.kill(server_pid(), signal.SIGSTOP)

    async def calls(session):
        return await asyncio.wait_for(session.call_tool("memory_search", {"query": "staging port"}), 30)

    found = asyncio.run(_mcp_session(notes, {**server_env, "COCKPIT_SERVER_TIMEOUT": "1"}, calls))
    assert found.is_error and "is stopped (SIGSTOP or Ctrl-Z)" in found.content[0].text



def test_the_mcp_server_keeps_answering_across_a_cockpit_server_restart(notes, server_env):
    """A long-lived MCP server (one per agent session) on the Cockpit server's engine: the Cockpit
    server stopped under it (`cockpit server stop`, a crash), the next tool call starts one again
    and answers — it does not fail for the rest of the agent's session."""
    from helpers import stop_server

    from cockpit.server.client import server_pid, start_server

    start_server()
    first = server_pid()

    async def calls(session):
        before = await asyncio.wait_for(session.call_tool("memory_search", {"query": "staging port"}), 120)
        await asyncio.to_thread(stop_server)
        after = await asyncio.wait_for(session.call_tool("memory_search", {"query": "staging port"}), 120)
        return before, after

    try:
        before, after = asyncio.run(_mcp_session(notes, server_env, calls))
        assert not before.is_error and not after.is_error, after.content
        assert "6443" in after.content[0].text
        assert server_pid() not in (None, first)  # a new server answered
    finally:
        stop_server()


@pytest.mark.parametrize("agent,file,event", [
    ("codex", ".codex/hooks.json", "UserPromptSubmit"),
    ("gemini", ".gemini/settings.json", "BeforeAgent"),
])
def test_the_installer_for_codex_and_gemini_round_trips(tmp_path, monkeypatch, capsys, agent, file, event):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / file
    path.parent.mkdir()
    original = '{\n  "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo hi"}]}]},\n  "x": 1\n}\n'
    path.write_text(original)
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("y\n"))
    assert main(["memory", "hook", "--install", "--agent", agent, "--project"]) == 0
    out = capsys.readouterr().out
    data = json.loads(path.read_text())  # the agent's own file still parses
    entry = data["hooks"][event][0]["hooks"][0]
    assert entry["command"] == "cockpit memory hook" and data["x"] == 1 and "SessionStart" in data["hooks"]
    assert "PostToolUse" not in data["hooks"]  # the misses watcher is Claude Code's only
    assert "cockpit installed" in out
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("y\n"))
    assert main(["memory", "hook", "--uninstall", "--agent", agent, "--project"]) == 0
    assert path.read_text() == original  # byte for byte


def test_a_gemini_before_agent_payload_gets_the_block_in_its_own_output_form(notes):
    payload = {"session_id": "g-1", "transcript_path": "/tmp/t.json", "cwd": "/", "hook_event_name": "BeforeAgent",
               "timestamp": "2026-12-02T08:00:00Z", "prompt": QUESTION}
    out = handle(payload, str(notes), None, 5)
    assert out["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    assert "6443" in out["hookSpecificOutput"]["additionalContext"]
    codex = handle(_payload("c-1"), str(notes), None, 5)  # Codex: Claude Code's wire format
    assert codex["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"


@pytest.mark.parametrize("argv", [["ls"], ["memory", "hook", "--notes", "{notes}"], ["approve", "abcd"],
                                  ["memory", "search", "staging", "--notes", "{notes}"]])
def test_thin_clients_import_neither_numpy_nor_the_engine_nor_anthropic(notes, server_env, argv):
    """With a server running, the hook and the CLI's session and memory commands are its clients:
    they import no numpy, no model runtime, no engine and no Anthropic SDK (their start-up cost)."""
    from cockpit.server.client import BlockingClient, start_server

    start_server()
    with BlockingClient() as c:
        c.call("memory.wait_ready", notes=str(notes), index=None, timeout=120)
    argv = [a.replace("{notes}", str(notes)) for a in argv]
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "cockpit", *argv],
                          input=json.dumps(_payload("thin-1")).encode(), capture_output=True, timeout=60, env=server_env)
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.decode().splitlines() if "|" in line}
    assert "cockpit.cli" in imported or "cockpit.memory_hook" in imported  # (the listing is there)
    heavy = {m for m in imported if m.split(".")[0] in ("numpy", "onnxruntime", "tokenizers", "anthropic", "textual")
             or m in ("memory.engine", "memory.embedder", "memory.store")}
    assert heavy == set(), heavy


def test_the_hooks_own_flags_are_read_without_argparse_and_anything_else_goes_to_it():
    from cockpit.hook_fast import quick_args

    a = quick_args(["--notes", "docs/notes", "--top-k=3", "--index", "/i.sqlite"])
    assert (a["notes"], a["top_k"], a["index"]) == ("docs/notes", 3, "/i.sqlite")
    assert quick_args([])["notes"] is None
    for other in (["--install"], ["--notes"], ["--top-k", "x"], ["--agent", "codex"], ["--help"]):
        assert quick_args(other) is None, other  # the full parser (and its errors, its --help)

def test_the_hooks_hot_path_imports_only_c_modules_and_gives_the_block(notes, server_env):
    """A warm prompt hook (the common case, before every first prompt): the block comes back, and
    the process imports no json/socket/signal wrappers, no re, enum, typing, pathlib or
    platformdirs (what made it cost 4-5× `python -c pass` of CPU), let alone the engine."""
    from cockpit.server.client import BlockingClient, start_server

    start_server()
    with BlockingClient() as c:
        c.call("memory.wait_ready", notes=str(notes), index=None, timeout=120)
    env = {k: v for k, v in server_env.items() if k != "PYTHONWARNINGS"}
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c",
                           "import sys; from cockpit.cli import main; sys.exit(main())",
                           "memory", "hook", "--notes", str(notes)],
                          input=json.dumps(_payload("hot-1")).encode(), capture_output=True, timeout=60, env=env)
    assert proc.returncode == 0
    assert "6443" in json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    names = [line.rsplit("|", 1)[-1].strip() for line in proc.stderr.decode().splitlines() if "|" in line]
    imported = set(names[names.index("site") + 1:])  # after the interpreter's start (an editable install's finder)
    assert "cockpit.hook_fast" in imported
    slow = {"json", "socket", "signal", "re", "enum", "typing", "pathlib", "platformdirs", "argparse",
            "subprocess", "cockpit.memory_hook", "cockpit.server.client", "memory.text", "numpy"}
    assert imported & slow == set()


@pytest.mark.parametrize("value", [
    {"a": [1, 2.5, -3, True, False, None], "b": "café ✓ \u2028 \"q\" \\ \n\t", "c": {}, "d": []},
    "caf\udce9", 0.1, 10 ** 30, -0.0, [["x"]], {"k": {"k": {"k": "v"}}},
])
def test_the_hot_paths_json_reads_and_writes_what_json_does(value):
    from cockpit.hook_fast import dumps, loads, utf8_line

    assert loads(json.dumps(value)) == value
    assert json.loads(dumps(value)) == value
    assert json.loads(utf8_line(value)) == value
    assert loads(json.dumps(value, ensure_ascii=False, indent=2)) == value
    for bad in ("", "{", "[1,]", "1 2", "nul"):
        with pytest.raises(ValueError):
            loads(bad)


@pytest.mark.parametrize("xdg_data", [None, "/x/data", "relative/data"])
def test_the_data_folder_is_where_platformdirs_puts_it(monkeypatch, xdg_data):
    """cockpit.places (no platformdirs: the hook's start-up) and platformdirs agree on Linux, so
    a data folder made by an earlier version is still found."""
    import platformdirs

    from cockpit import places

    monkeypatch.delenv("COCKPIT_DATA_DIR", raising=False)
    if xdg_data is None:
        monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_DATA_HOME", xdg_data)
    assert places.data_root() == str(platformdirs.user_data_path("cockpit"))


def test_the_runtime_folder_and_a_long_socket_path(monkeypatch, tmp_path):
    from cockpit import places

    monkeypatch.delenv("COCKPIT_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert places.socket_path() == str(tmp_path / "cockpit" / "server.sock")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "missing"))
    assert "missing" not in places.runtime_dir()
    deep = tmp_path / ("d" * 120)
    deep.mkdir()
    monkeypatch.setenv("COCKPIT_DATA_DIR", str(deep))
    sock = places.socket_path()
    assert len(os.fsencode(sock)) <= places.SOCKET_MAX and sock.endswith(".sock")
    assert places.socket_path() == sock  # the same for every client and the server


def test_block_names_reads_the_lines_and_the_index():
    from cockpit.hook_fast import block_names

    text = "<project-notes>\n★ [deploy-command] Deploy with make\n[staging-stack] port 6443\nprose [x]\n" \
           "Index:\n- [db-choice] Postgres\n- [] empty\n</project-notes>"
    assert block_names(text) == (["deploy-command", "staging-stack"], ["db-choice"])


@pytest.mark.parametrize(("front", "name"), [
    ("name: deploy # a comment", "deploy"),
    ("name: 'it''s'", "it's"),
    ('name: "quoted # not a comment"', "quoted # not a comment"),
    ("name: &a anch", "anch"),
    ("name: ~", ""),
    ("name: >-", ""),
    ("name: first\nname: second", "second"),
])
def test_the_hooks_front_name_reads_as_the_index_does(tmp_path, front, name):
    from cockpit.memory_hook import _front_name

    f = tmp_path / "note.md"
    f.write_text(f"\n---\n{front}\ndescription: d\n---\nbody\n")
    assert _front_name(f) == name
    f.write_text(f"---\n{front}\nbody with no closing line\n")
    assert _front_name(f) == ""  # not frontmatter


def test_a_note_the_block_named_is_known_by_its_path(tmp_path, monkeypatch):
    """The server's answer names each note's file: a Read of it is matched by path, whatever its
    frontmatter looks like to a line match."""
    from cockpit import hook_fast
    from cockpit.memory_hook import read_misses, record_miss

    notes = tmp_path / "notes"
    notes.mkdir()
    odd = notes / "odd.md"
    odd.write_text("---\nname: >-\n  folded-name\ndescription: d\n---\nbody\n")
    hook_fast.remember_given("s-path", "[folded-name] d\n", "task", str(notes), {str(odd.resolve()): "folded-name"})
    record_miss({"session_id": "s-path", "tool_name": "Read", "tool_input": {"file_path": str(odd)}})
    assert read_misses() == []  # a line: no miss (the line match alone reads no name: a false miss)
