"""Coding sessions end to end against the stand-in: worktrees, approvals, modes, diff, merge."""

import asyncio
import json
import subprocess
from pathlib import Path

import pytest
from helpers import CALC, git, make_repo, wait_gone
from standin import HTTPError, Reply, ToolUse

from cockpit.events import (
    ApprovalRequested,
    ApprovalResolved,
    ContextNotice,
    Reviewed,
    SessionSpawned,
    SessionStatus,
    WorktreeChanged,
)
from cockpit.runtime import RuntimeConfig, SessionManager, read_events
from cockpit.runtime import worktree as wt
from cockpit.runtime.pricing import ModelPrice, PricingTable
from cockpit.runtime.spawn import SpawnSpec

S = SessionStatus
EDIT = "str_replace_based_edit_tool"


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path / "repo", {"calc.py": CALC, ".gitignore": ".env\n", ".worktreeinclude": ".env\n"},
                     untracked={".env": "TOKEN=local\n"})


def make_mgr(api, tmp_path, **cfg):
    base = dict(api_key="test-key", base_url=api.base_url, interactive=False, max_retries=0, timeout=10.0,
                model="test-model", worktrees_dir=tmp_path / "worktrees")
    base.update(cfg)
    price = ModelPrice(input=3.0, output=15.0, cache_write=3.75, cache_read=0.3, context_window=200_000)
    return SessionManager(None, RuntimeConfig(**base), pricing=PricingTable({"test-model": price}, source="t", date="d"))


async def next_event(sub, kind, timeout=20):
    async def _wait():
        async for ev in sub:
            if isinstance(ev, kind):
                return ev
    return await asyncio.wait_for(_wait(), timeout)


FIX_AND_RUN = [
    Reply("Creating the file.", [ToolUse(EDIT, {"command": "create", "path": "hello.py", "file_text": "print('hi from cockpit')\n"})]),
    Reply("Running it.", [ToolUse("bash", {"command": "python3 hello.py"})]),
    Reply("Done: hello.py prints a greeting."),
]


async def test_scripted_coding_session_in_its_worktree_then_merge(api, repo, tmp_path):
    api.script(*FIX_AND_RUN)
    mgr = make_mgr(api, tmp_path)
    sub = mgr.subscribe()
    s = await mgr.spawn(SpawnSpec("add hello.py and run it", workspace=repo, permission_mode="acceptEdits",
                        interactive=True))
    approval = await next_event(sub, ApprovalRequested)  # acceptEdits: the command asks
    assert approval.kind == "bash" and approval.detail == "python3 hello.py"
    assert s.status == S.NEEDS_APPROVAL
    await mgr.answer(s.id, approval.request_id, allow=True)
    assert await mgr.wait_idle(timeout=30)
    assert s.status == S.WAITING and s.final_text.startswith("Done")
    w = s.worktree
    assert w is not None and w.branch.startswith(f"cockpit/{s.id}/") and Path(w.path).is_dir()
    assert (Path(w.path) / "hello.py").read_text() == "print('hi from cockpit')\n"
    assert not (repo / "hello.py").exists()  # the user's checkout is untouched
    assert (Path(w.path) / ".env").read_text() == "TOKEN=local\n"  # .worktreeinclude
    results = [r for r in api.message_requests[2]["messages"][-1]["content"] if r["type"] == "tool_result"]
    assert "hi from cockpit" in results[0]["content"]
    # the request offered Anthropic's tool types; results went back as tool_result blocks
    tools = api.message_requests[0]["tools"]
    assert {"type": "bash_20250124", "name": "bash"} in tools
    assert any(t.get("type") == "text_editor_20250728" for t in tools)
    diff = await mgr.diff(s.id)
    assert [(f.path, f.status, f.added) for f in diff.files] == [("hello.py", "A", 1)]
    assert "+print('hi from cockpit')" in diff.files[0].patch
    changed = await next_event(sub, WorktreeChanged)  # after the create: one file, one line
    assert (changed.files, changed.added, changed.removed) == (1, 1, 0)
    report = s.to_dict()
    assert report["worktree"]["branch"] == w.branch and report["worktree"]["base_commit"] == w.base_commit
    result = await mgr.review(s.id, "merge")
    assert result.ok and "fast-forward" in result.message
    assert (repo / "hello.py").read_text() == "print('hi from cockpit')\n"
    assert not Path(w.path).exists()
    assert w.branch not in git(repo, "branch", "--list")
    assert s.status == S.DONE
    recs = read_events(s.transcript_path)
    assert isinstance(recs[0], SessionSpawned) and recs[0].worktree.branch == w.branch
    assert isinstance(recs[-1], Reviewed)
    await mgr.aclose()


async def test_default_mode_asks_and_a_denial_reason_reaches_the_model(api, repo, tmp_path):
    api.script(
        Reply("", [ToolUse(EDIT, {"command": "str_replace", "path": "calc.py", "old_str": "a - b", "new_str": "a + b"})]),
        Reply("", [ToolUse("bash", {"command": "rm -rf /tmp/whatever"})]),
        Reply("ok, I will not."),
    )
    mgr = make_mgr(api, tmp_path, interactive=True)
    sub = mgr.subscribe()
    s = await mgr.spawn(SpawnSpec("fix add", workspace=repo))
    ask = await next_event(sub, ApprovalRequested)
    assert ask.kind == "edit" and "-    return a - b" in ask.detail and "+    return a + b" in ask.detail
    assert ask.suggestion == "Edit"
    await mgr.answer(s.id, None, allow=True, scope="once")
    ask2 = await next_event(sub, ApprovalRequested)
    assert ask2.kind == "bash" and ask2.suggestion == "Bash(rm *)"
    await mgr.answer(s.id, ask2.request_id, allow=False, reason="never delete things")
    resolved = await next_event(sub, ApprovalResolved)
    assert not resolved.allowed and resolved.reason == "never delete things"
    assert await mgr.wait_idle(timeout=30)
    last = api.message_requests[-1]["messages"][-1]["content"][0]
    assert last["is_error"] is True and "never delete things" in last["content"] and "denied" in last["content"]
    assert "a + b" in (Path(s.worktree.path) / "calc.py").read_text()
    assert "a - b" in (repo / "calc.py").read_text()
    with pytest.raises(KeyError):
        await mgr.answer(s.id, "nope", allow=True)
    await mgr.aclose()


async def test_allow_for_the_session_stops_asking_for_that_command(api, repo, tmp_path):
    api.script(
        Reply("", [ToolUse("bash", {"command": "git status --short"})]),
        Reply("", [ToolUse("bash", {"command": "git status"})]),
        Reply("", [ToolUse("bash", {"command": "git log -1 --oneline"})]),
        Reply("done"),
    )
    mgr = make_mgr(api, tmp_path, interactive=True)
    sub = mgr.subscribe()
    s = await mgr.spawn(SpawnSpec("look", workspace=repo))
    ask = await next_event(sub, ApprovalRequested)
    await mgr.answer(s.id, ask.request_id, allow=True, scope="session")
    ask2 = await next_event(sub, ApprovalRequested)  # `git status` was allowed; `git log` asks
    assert ask2.summary == "git log -1 --oneline"
    await mgr.answer(s.id, ask2.request_id, allow=True)
    assert await mgr.wait_idle(timeout=30)
    results = [e for e in s.messages if e["role"] == "user"][1:]
    assert all(not b.get("is_error") for m in results for b in m["content"] if b.get("type") == "tool_result")
    await mgr.aclose()


async def test_plan_mode_refuses_edits_and_headless_asks_are_denied(api, repo, tmp_path):
    create = Reply("", [ToolUse(EDIT, {"command": "create", "path": "x.py", "file_text": "x"})])
    api.script(create, Reply("planned"), create, Reply("gave up"))
    mgr = make_mgr(api, tmp_path)
    plan = await mgr.spawn(SpawnSpec("plan it", workspace=repo, permission_mode="plan"))
    assert await mgr.wait_idle(timeout=30)
    res = api.message_requests[1]["messages"][-1]["content"][0]
    assert res["is_error"] and "plan mode is read-only" in res["content"]
    sub = mgr.subscribe()
    headless = await mgr.spawn(SpawnSpec("do it", workspace=repo))  # default mode, nobody to answer
    resolved = await next_event(sub, ApprovalResolved)
    assert not resolved.allowed and resolved.scope == "auto" and "headless" in resolved.reason
    assert await mgr.wait_idle(timeout=30)
    res = api.message_requests[3]["messages"][-1]["content"][0]
    assert res["is_error"] and "--permission-mode" in res["content"]
    assert headless.status == S.DONE and plan.status == S.DONE
    # neither changed anything: their worktrees and branches are gone
    assert "cockpit/" not in git(repo, "branch", "--list")
    assert len(git(repo, "worktree", "list").splitlines()) == 1
    await mgr.aclose()


async def test_two_sessions_editing_the_same_file_end_on_two_branches(api, repo, tmp_path):
    def responder(body):
        first = body["messages"][0]["content"][-1]["text"]
        if len(body["messages"]) == 1:
            return Reply("", [ToolUse(EDIT, {"command": "str_replace", "path": "calc.py", "old_str": "a - b",
                                             "new_str": f"a + b  # {first}"})])
        return Reply("edited")

    api.responder = responder
    mgr = make_mgr(api, tmp_path, permission_mode="acceptEdits")
    one = await mgr.spawn(SpawnSpec("one", workspace=repo))
    two = await mgr.spawn(SpawnSpec("two", workspace=repo))
    assert await mgr.wait_idle(timeout=30)
    assert "# one" in (Path(one.worktree.path) / "calc.py").read_text()
    assert "# two" in (Path(two.worktree.path) / "calc.py").read_text()
    assert one.worktree.branch != two.worktree.branch
    assert "a - b" in (repo / "calc.py").read_text()
    first = await mgr.review(one.id, "merge")
    assert first.ok
    assert (await mgr.describe(one.id))["reviewed"] == {"action": "merge", "ok": True, "message": first.message}
    second = await mgr.review(two.id, "merge")  # the same line changed on main: a conflict, never forced
    assert not second.ok and "conflict" in second.message and second.message.count("calc.py") >= 1
    assert (await mgr.describe(two.id))["reviewed"]["ok"] is False  # (`ls` keeps showing its branch)
    assert "# one" in (repo / "calc.py").read_text() and "<<<<" not in (repo / "calc.py").read_text()
    assert two.worktree.branch in git(repo, "branch", "--list")
    kept = await mgr.review(two.id, "keep")
    assert kept.ok and two.worktree.branch in git(repo, "branch", "--list")
    assert not Path(two.worktree.path).exists()
    for action in ("keep", "send-back"):
        with pytest.raises(ValueError, match=f"branch {two.worktree.branch} is kept without a worktree: "
                                             "merge or discard it$"):
            await mgr.review(two.id, action)
    kept_diff = await mgr.diff(two.id)  # a kept branch is still reviewed: its diff (the app's `d`)
    assert [f.path for f in kept_diff.files] == ["calc.py"] and "# two" in kept_diff.files[0].patch
    # the kept branch discarded through the runtime, as `cockpit worktrees discard` does with a server:
    # every client sees it in the session's history
    gone = await mgr.review(two.id, "discard")
    assert gone.ok and gone.message == f"discarded the kept branch {two.worktree.branch}"
    assert two.worktree.branch not in git(repo, "branch", "--list")
    assert (await mgr.describe(two.id))["reviewed"]["action"] == "discard"
    with pytest.raises(ValueError, match="already merged, kept or discarded"):
        await mgr.review(two.id, "discard")
    with pytest.raises(ValueError, match="already merged, kept or discarded"):
        await mgr.diff(two.id)
    await mgr.aclose()


async def test_discard_removes_worktree_and_branch(api, repo, tmp_path):
    api.script(Reply("", [ToolUse(EDIT, {"command": "create", "path": "junk.txt", "file_text": "junk"})]), Reply("ok"))
    mgr = make_mgr(api, tmp_path, permission_mode="bypassPermissions")
    s = await mgr.spawn(SpawnSpec("make junk", workspace=repo))
    assert await mgr.wait_idle(timeout=30)
    before = git(repo, "worktree", "list")
    assert s.worktree.path in before
    listed = wt.list_all(tmp_path / "worktrees")
    assert [w.session_id for w in listed] == [s.id]
    result = await mgr.review(s.id, "discard")
    assert result.ok
    after = git(repo, "worktree", "list")
    assert s.worktree.path not in after and s.worktree.branch not in git(repo, "branch", "--list")
    assert wt.list_all(tmp_path / "worktrees") == []
    for action in ("merge", "keep", "discard"):  # a second review says why, not a git usage error
        with pytest.raises(ValueError, match="already merged, kept or discarded"):
            await mgr.review(s.id, action)
    await mgr.aclose()


async def test_resume_after_discard_gets_a_new_worktree_never_the_checkout(api, repo, tmp_path):
    api.script(Reply("", [ToolUse(EDIT, {"command": "create", "path": "junk.txt", "file_text": "junk"})]), Reply("ok"))
    mgr = make_mgr(api, tmp_path, permission_mode="bypassPermissions")
    s = await mgr.spawn(SpawnSpec("make junk", workspace=repo))
    assert await mgr.wait_idle(timeout=30)
    assert (await mgr.review(s.id, "discard")).ok
    api.script(Reply("", [ToolUse(EDIT, {"command": "create", "path": "again.txt", "file_text": "x"})]), Reply("ok"))
    r = await mgr.resume(s.transcript_path, interactive=True)
    assert await mgr.wait_idle(timeout=30)
    await mgr.send(r.id, "make it again")
    await asyncio.sleep(0)
    assert await mgr.wait_idle(timeout=30)
    assert r.worktree is not None and r.spec.placement == "worktree" and r.worktree.path != s.worktree.path
    assert Path(r.spec.cwd) == Path(r.worktree.cwd) and (Path(r.worktree.path) / "again.txt").exists()
    assert not (repo / "again.txt").exists()  # the user's checkout is never written
    assert r.worktree.branch.startswith(f"cockpit/{r.id}/")
    await mgr.aclose()


async def test_a_session_that_changed_nothing_says_so_when_asked_for_its_diff(api, repo, tmp_path):
    api.script(Reply("nothing to change"))
    mgr = make_mgr(api, tmp_path)
    s = await mgr.spawn(SpawnSpec("just answer", workspace=repo))
    assert await mgr.wait_idle(timeout=30)
    assert s.worktree is not None and not Path(s.worktree.path).exists()
    with pytest.raises(ValueError, match="changed nothing: its worktree was removed when it ended"):
        await mgr.diff(s.id)
    with pytest.raises(ValueError, match="changed nothing"):
        await mgr.review(s.id, "merge")
    await mgr.aclose()


def test_merge_and_discard_when_the_base_branch_the_worktree_or_the_repo_went_away(tmp_path):
    import shutil

    root = tmp_path / "worktrees"
    repo = make_repo(tmp_path / "r", {"calc.py": CALC})
    git(repo, "checkout", "-q", "-b", "feature")
    gone_base = wt.create(repo, "s1", "t", root)
    (Path(gone_base.path) / "n.py").write_text("n\n")
    git(repo, "checkout", "-q", "main")
    git(repo, "branch", "-D", "feature")
    res = wt.merge(gone_base, "m")
    assert not res.ok and "base branch feature no longer exists" in res.message
    assert gone_base.branch in git(repo, "branch", "--list")  # the work is kept
    dirty = wt.create(repo, "s2", "t", root)
    (Path(dirty.path) / "calc.py").write_text("session\n")
    (repo / "calc.py").write_text("user's uncommitted edit\n")
    res = wt.merge(dirty, "m")
    assert not res.ok and "calc.py" in res.message and "Aborting" not in res.message
    assert (repo / "calc.py").read_text() == "user's uncommitted edit\n"
    by_hand = wt.create(repo, "s3", "t", root)
    shutil.rmtree(by_hand.path)
    with pytest.raises(wt.WorktreeError, match="no longer exists"):
        wt.diff(by_hand)
    assert wt.discard(by_hand).startswith("discarded") and wt.find(root, "s3") is None
    other = make_repo(tmp_path / "other", {"a.txt": "a"})
    orphan = wt.create(other, "s4", "t", root)
    (Path(orphan.path) / "b.txt").write_text("b\n")
    shutil.rmtree(other)
    with pytest.raises(wt.WorktreeError, match=f"its repository {other} is gone"):  # (not "the branch …")
        wt.merge(orphan, "m")
    assert wt.discard(orphan).startswith("discarded")
    assert not Path(orphan.path).exists() and wt.find(root, "s4") is None


async def test_in_place_when_not_a_repository_or_asked(api, repo, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    api.responder = lambda body: Reply("ok")
    mgr = make_mgr(api, tmp_path)
    a = await mgr.spawn(SpawnSpec("q", workspace=plain))
    b = await mgr.spawn(SpawnSpec("q", workspace=repo, worktree=False))
    assert await mgr.wait_idle(timeout=30)
    assert a.worktree is None and "not a git repository" in a.spec.placement and a.cwd == plain.resolve()
    assert b.worktree is None and "--no-worktree" in b.spec.placement and b.cwd == repo.resolve()
    envs = [r["messages"][0]["content"][0]["text"] for r in api.message_requests]
    env = next(e for e in envs if str(plain.resolve()) in e)
    assert env.startswith("<env>") and "not a git repository" in env
    await mgr.aclose()


async def test_endpoint_rejecting_client_tools_gives_one_clear_error_and_portable_works(api, repo, tmp_path):
    api.script(HTTPError(400, message="tools.0: Input tag 'bash_20250124' found using 'type' does not match"))
    mgr = make_mgr(api, tmp_path)
    s = await mgr.spawn(SpawnSpec("hi", workspace=repo))
    assert await mgr.wait_idle(timeout=30)
    assert s.status == S.ERROR and s.error.kind == "tools_unsupported" and "--tools portable" in s.error.message
    api.script(Reply("portable ok"))
    p = await mgr.spawn(SpawnSpec("hi", workspace=repo, tools="portable"))
    assert await mgr.wait_idle(timeout=30)
    assert p.status == S.DONE and all("input_schema" in t for t in api.message_requests[-1]["tools"])
    await mgr.aclose()


async def test_context_full_then_continue_in_a_fresh_session(api, repo, tmp_path):
    api.script(
        Reply("", [ToolUse(EDIT, {"command": "create", "path": "f.txt", "file_text": "partial work"})]),
        HTTPError(400, message="prompt is too long: 210000 tokens > 200000 maximum"),
        Reply("Finished the rest."),
    )
    mgr = make_mgr(api, tmp_path, interactive=True, permission_mode="acceptEdits")
    sub = mgr.subscribe()
    s = await mgr.spawn(SpawnSpec("long job", workspace=repo))
    notice = await next_event(sub, ContextNotice)
    assert notice.level == "full"
    assert await mgr.wait_idle(timeout=30)
    assert s.status == S.WAITING and s.context_full and "context full" in s.detail
    new = await mgr.continue_fresh(s.id)
    assert await mgr.wait_idle(timeout=30)
    assert s.status == S.DONE and new.final_text == "Finished the rest."
    first = api.message_requests[-1]["messages"][0]["content"]
    summary = first[-1]["text"]
    assert "long job" in summary and "create f.txt" in summary
    assert new.worktree == s.worktree and (Path(new.worktree.path) / "f.txt").exists()
    await mgr.aclose()


async def test_context_management_is_asked_for_near_the_window_and_dropped_when_refused(api, repo, tmp_path):
    big = {"input": 10, "cache_read": 165_000, "cache_write": 0, "output": 5}
    api.script(
        Reply("", [ToolUse(EDIT, {"command": "view", "path": "calc.py"})], usage=big),
        Reply("", [ToolUse(EDIT, {"command": "view", "path": "calc.py"})]),
        Reply("done"),
    )
    mgr = make_mgr(api, tmp_path)
    sub = mgr.subscribe()
    s = await mgr.spawn(SpawnSpec("read", workspace=repo))
    warn = await next_event(sub, ContextNotice)
    assert warn.level == "warn" and warn.window == 200_000
    assert await mgr.wait_idle(timeout=30)
    second = api.message_requests[1]
    assert second["context_management"]["edits"][0]["type"] == "clear_tool_uses_20250919"
    beta = [r for r in api.requests if r.method == "POST"][1].headers.get("anthropic-beta", "")
    assert "context-management-2025-06-27" in beta
    assert s.status == S.DONE and mgr.context_management_supported is True
    await mgr.aclose()


async def test_a_kill_during_a_command_kills_its_process_group(api, repo, tmp_path):
    marker = tmp_path / "started"
    api.script(Reply("", [ToolUse("bash", {"command": f"sleep 300 & echo $! > {marker}; wait"})]))
    # unconfined (the sandbox's own kill-everything is tests/test_sandbox.py's): the marker is outside
    mgr = make_mgr(api, tmp_path, permission_mode="bypassPermissions", sandbox=False)
    s = await mgr.spawn(SpawnSpec("hang", workspace=repo))
    while not marker.exists() or not marker.read_text().strip():
        await asyncio.sleep(0.02)
    child = int(marker.read_text())
    await mgr.kill(s.id)
    assert s.status == S.KILLED
    await wait_gone(child, "the command's child, after the kill")
    await mgr.aclose()


async def test_instruction_files_go_to_the_system_block_and_rules_to_matching_paths(api, repo, tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-home"))
    (repo / "CLAUDE.md").write_text("Always run `make check` before you finish.\n")
    (repo / "AGENTS.md").write_text("Use tabs in Makefiles.\n")
    rules = repo / ".claude" / "rules"
    rules.mkdir(parents=True)
    (rules / "api.md").write_text("---\npaths: src/api/**\n---\nAPI errors use the RFC 7807 shape.\n")
    (rules / "style.md").write_text("Prefer small functions.\n")
    cursor = repo / ".cursor" / "rules"
    cursor.mkdir(parents=True)
    (cursor / "db.mdc").write_text("---\nglobs: *.sql\nalwaysApply: false\n---\nMigrations are reversible.\n")
    (cursor / "deploy.mdc").write_text("---\ndescription: How to deploy to staging\n---\nUse make ship-v2.\n")
    (repo / "src" / "api").mkdir(parents=True)
    (repo / "src" / "api" / "users.py").write_text("x = 1\n")
    (repo / "schema.sql").write_text("create table t (id int);\n")
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "rules"], cwd=repo, check=True)
    api.script(Reply("", [ToolUse(EDIT, {"command": "view", "path": "schema.sql"})]), Reply("seen"))
    mgr = make_mgr(api, tmp_path)
    sub = mgr.subscribe()
    s = await mgr.spawn(SpawnSpec("fix the bug in src/api/users.py", workspace=repo))
    assert await mgr.wait_idle(timeout=30)
    first = api.message_requests[0]
    system = first["system"]
    assert len(system) == 2 and system[1]["cache_control"] == {"type": "ephemeral"}
    assert "make check" in system[1]["text"] and "Use tabs in Makefiles" in system[1]["text"]
    assert "Prefer small functions" in system[1]["text"]
    assert ".cursor/rules/deploy.mdc: How to deploy to staging" in system[1]["text"]
    assert "RFC 7807" not in system[1]["text"] and "reversible" not in system[1]["text"]
    texts = [b["text"] for b in first["messages"][0]["content"]]
    assert any("RFC 7807" in t for t in texts[:-1]) and texts[-1] == "fix the bug in src/api/users.py"
    result = api.message_requests[1]["messages"][-1]["content"][0]["content"]
    assert "create table" in result and "Migrations are reversible" in result
    events = []
    while not sub._q.empty():  # drain what was published
        events.append(sub._q.get_nowait())
    loaded = next(e for e in events if type(e).__name__ == "InstructionsLoaded")
    assert set(loaded.always) == {"CLAUDE.md", "AGENTS.md", ".claude/rules/style.md"}
    assert set(loaded.path_scoped) == {".claude/rules/api.md", ".cursor/rules/db.mdc"}
    applied = [(e.rule, e.where) for e in events if type(e).__name__ == "RuleApplied"]
    assert applied[0] == (".claude/rules/api.md", "task") and applied[1][0] == ".cursor/rules/db.mdc"
    assert s.status == S.DONE
    await mgr.aclose()


def test_an_unreadable_worktreeinclude_file_is_skipped_not_a_failed_spawn(tmp_path, monkeypatch, caplog):
    import shutil

    repo = make_repo(tmp_path / "r", {"calc.py": CALC, ".gitignore": "*.env\n", ".worktreeinclude": "*.env\n"},
                     untracked={"a.env": "A=1\n", "b.env": "B=2\n"})
    real_copy = shutil.copy2

    def copy2(src, dst, **kw):
        if str(src).endswith("a.env"):
            raise PermissionError(13, "Permission denied")
        return real_copy(src, dst, **kw)

    monkeypatch.setattr(shutil, "copy2", copy2)
    info = wt.create(repo, "s1", "t", tmp_path / "worktrees")
    assert info.included == ("b.env",) and (Path(info.path) / "b.env").read_text() == "B=2\n"
    assert "a.env not copied into the worktree: Permission denied" in caplog.text


def test_a_huge_generated_file_does_not_make_a_diff_no_client_can_read(tmp_path, monkeypatch):
    monkeypatch.setattr(wt, "MAX_PATCH_CHARS", 50_000)
    monkeypatch.setattr(wt, "MAX_DIFF_CHARS", 120_000)
    repo = make_repo(tmp_path / "r", {"calc.py": CALC})
    info = wt.create(repo, "s1", "t", tmp_path / "worktrees")
    for name in ("a.txt", "b.txt", "c.txt"):
        (Path(info.path) / name).write_text("".join(f"line {i}\n" for i in range(20_000)))
    d = wt.diff(info)
    assert [f.added for f in d.files] == [20_000] * 3  # the counts stay exact
    assert all("not shown; git diff in the worktree shows all" in f.patch for f in d.files)
    assert sum(len(f.patch) for f in d.files) < 120_000 + 1_000
    assert d.files[0].patch.splitlines()[-2].startswith("+line ")  # cut at a line end


def test_merge_never_aborts_a_merge_the_user_is_in_the_middle_of(tmp_path):
    repo = make_repo(tmp_path / "r", {"calc.py": "a\n"})
    info = wt.create(repo, "s1", "t", tmp_path / "worktrees")
    (Path(info.path) / "new.py").write_text("session\n")
    git(repo, "checkout", "-q", "-b", "side")
    (repo / "calc.py").write_text("side\n")
    git(repo, "commit", "-qam", "side")
    git(repo, "checkout", "-q", "main")
    (repo / "calc.py").write_text("main\n")
    git(repo, "commit", "-qam", "main")
    subprocess.run(["git", "merge", "side"], cwd=repo, capture_output=True)  # a conflict the user works on
    (repo / "calc.py").write_text("my careful resolution\n")
    res = wt.merge(info, "m")
    assert not res.ok and "in the middle of a merge" in res.message and res.conflicts == ()
    assert (repo / ".git" / "MERGE_HEAD").exists() and (repo / "calc.py").read_text() == "my careful resolution\n"
    assert info.branch in git(repo, "branch", "--list")


async def test_a_command_that_prints_the_api_key_hands_on_stars(api, repo, tmp_path):
    """The key is never in the shell's environment, but a command can still find it (a file, a
    parent's /proc/<pid>/environ under --no-server): its output reaches the model, the events
    and the transcript with the key replaced by ***."""
    key = "sk-ant-test-SECRET-0123456789"
    (tmp_path / "leak.txt").write_text(f"ANTHROPIC_API_KEY={key}\n")
    api.script(Reply("Reading.", [ToolUse("bash", {"command": f"cat {tmp_path / 'leak.txt'}; env"})]),
               Reply("Done."))
    mgr = make_mgr(api, tmp_path, api_key=key)
    sub = mgr.subscribe()
    s = await mgr.spawn(SpawnSpec("look", workspace=repo, permission_mode="bypassPermissions"))
    assert await mgr.wait_idle(timeout=30)
    sub.close()
    events = [e async for e in sub]
    result = [r for r in api.message_requests[1]["messages"][-1]["content"] if r["type"] == "tool_result"][0]
    assert "ANTHROPIC_API_KEY=***" in str(result["content"]) and key not in json.dumps(api.message_requests[1])
    assert all(key not in repr(e) for e in events)
    assert key not in s.transcript_path.read_text() and "***" in s.transcript_path.read_text()
    await mgr.aclose()


async def test_every_change_awaiting_review_keeps_its_events_for_an_attaching_app(api, repo, tmp_path):
    """A late-attaching app gets the events of at most LOG_SESSIONS finished sessions: after a
    restart with 74 changes awaiting review, the app had panes for 64 and said nothing of the
    rest. A session whose change waits for its review keeps its events."""
    from cockpit.runtime import manager as m

    api.script(Reply("", [ToolUse(EDIT, {"command": "create", "path": "a.txt", "file_text": "a\n"})]),
               Reply("made a"))
    first = make_mgr(api, tmp_path)
    s = await first.spawn(SpawnSpec("make a.txt", workspace=repo, permission_mode="acceptEdits"))
    assert await first.wait_idle(timeout=30) and s.status == S.DONE
    await first.aclose()
    text = Path(s.transcript_path).read_text()
    copies = []
    for i in range(m.LOG_SESSIONS + 6):  # its transcript as many sessions' (the same worktree)
        sid = f"copy{i:08d}"
        path = tmp_path / f"{sid}.jsonl"
        path.write_text(text.replace(f'"session_id": "{s.id}"', f'"session_id": "{sid}"'))
        copies.append((sid, path))
    later = make_mgr(api, tmp_path)
    for _sid, path in copies:
        assert later.restore(path) is not None
    spawned = {e.session_id for e in later.snapshot() if isinstance(e, SessionSpawned)}
    assert spawned == {sid for sid, _ in copies}
    await later.aclose()
