"""Pilot tests of issue #22 in the app ("from a session to a merged change without leaving the
cockpit"): the diff screen's check (``t``), merge after a failed check, a note's check command
confirmed once, a conflicting merge sent back (``b``), the pull request dialog (``p``), the shell
key (``s``), the spawn dialog's "where will it work" line, and the conflict radar. The real runtime
(``SessionManager`` + the Messages API stand-in) in temporary git repositories; the spawn dialog
against the fake manager."""

from __future__ import annotations

import hashlib
import json
import stat
from pathlib import Path
from typing import Any

import pytest
from helpers import CALC, fake_gh, git, make_repo, with_remote
from standin import Reply, StandIn, ToolUse
from tui_fakes import FakeEngine, FakeManager, settled, text_of, until

from cockpit.events import SessionStatus as S
from cockpit.runtime import RuntimeConfig, SessionManager
from cockpit.runtime.pricing import ModelPrice, PricingTable
from cockpit.tui import CockpitApp
from cockpit.tui.screens.dialogs import ConfirmDialog
from cockpit.tui.screens.diff import DiffScreen, PullRequestDialog
from cockpit.tui.screens.spawn import SpawnDialog

EDIT = "str_replace_based_edit_tool"
PRICING = PricingTable({"test-model": ModelPrice(2.0, 10.0, 2.5, 0.2, 100_000)}, source="test")
SIZE = (160, 48)
TEST_CALC = "from calc import add\nassert add(2, 2) == 4, 'add is wrong'\nprint('ok')\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"calc.py": CALC, "test_calc.py": TEST_CALC})


@pytest.fixture
def api():
    with StandIn() as server:
        yield server
        server.release()


def manager(api: StandIn, tmp_path: Path, engine: Any = None, **cfg) -> SessionManager:
    config = dict(api_key="test-key", base_url=api.base_url, model="test-model", max_retries=0,
                  sessions_dir=tmp_path / "sessions", worktrees_dir=tmp_path / "worktrees", interactive=True,
                  permission_mode="bypassPermissions", sandbox=False)
    config.update(cfg)
    return SessionManager(engine, RuntimeConfig(**config), pricing=PRICING)


class FakeNotifier:
    async def send(self, title: str, message: str) -> bool:
        return True


def app_for(mgr, repo: Path) -> CockpitApp:
    return CockpitApp(mgr, None, workspace=repo, os_notifier=FakeNotifier())


def only_view(app):
    (view,) = app.views.values()
    return view


def tree_digest(path: Path) -> dict[str, str]:
    """Every file of a checkout (``.git`` included, but for objects and the sessions' own refs and
    worktree admin folders) → its content's hash: byte-identical or not."""
    skip = (".git/objects/", ".git/worktrees/", ".git/refs/heads/cockpit/", ".git/logs/refs/heads/cockpit/")
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file() and not str(p.relative_to(path)).startswith(skip)}


def edit_calc(new: str) -> Reply:
    return Reply("", [ToolUse(EDIT, {"command": "str_replace", "path": "calc.py", "old_str": "a - b",
                                     "new_str": new})])


def request_text(api: StandIn, index: int) -> str:
    """The last user message of the stand-in's ``index``-th request, as text."""
    content = api.message_requests[index]["messages"][-1]["content"]
    return content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)


async def open_diff(pilot, app) -> DiffScreen:
    """``d`` on the (only) session; returns the diff screen once its diff is read."""
    await pilot.press("d")
    screen = app.screen
    assert isinstance(screen, DiffScreen)
    await until(pilot, lambda: screen.diff is not None, "the diff")
    return screen


async def spawn_and_wait(pilot, app, task: str):
    app.spawn(task)
    await until(pilot, lambda: app.views and only_view(app).status is S.WAITING, "the session waits")
    view = only_view(app)
    await until(pilot, lambda: view.changes is not None and view.changes.files > 0, "its change")
    return view


def check_box(screen: DiffScreen) -> str:
    return text_of(screen.query_one("#diff-check"))


# -- 1. the check: running → failed (tail) → m asks again → passed ------------------------------
async def test_check_runs_then_fails_with_the_tail_and_merge_asks_again_no_merges_nothing(api, tmp_path, repo):
    gate = tmp_path / "gate"
    api.script(Reply("", [ToolUse(EDIT, {"command": "create", "path": "other.py", "file_text": "x = 1\n"})]),
               Reply("Done."))
    # the check waits for the gate: the screen is seen saying "running" before any result
    mgr = manager(api, tmp_path, check_command=f"while [ ! -e {gate} ]; do sleep 0.05; done; python3 test_calc.py")
    app = app_for(mgr, repo)
    try:
        async with app.run_test(size=SIZE) as pilot:
            view = await spawn_and_wait(pilot, app, "add other.py")
            screen = await open_diff(pilot, app)
            assert not screen.query_one("#diff-check").display  # nothing until a check runs

            await pilot.press("t")
            await until(pilot, lambda: screen.check_state == "running", "the check running")
            await pilot.pause()
            assert screen.query_one("#diff-check").display and "check running" in check_box(screen)
            gate.touch()
            await until(pilot, lambda: screen.check_state == "failed", "the check failing")
            await pilot.pause()
            shown = check_box(screen)
            assert "✗" in shown and "check failed" in shown and "exit 1" in shown
            assert "add is wrong" in shown  # the output's tail

            await pilot.press("m")  # a failed check: asked again
            await until(pilot, lambda: isinstance(app.screen, ConfirmDialog), "the question")
            assert "The last check did not pass (failed). Merge anyway?" in app.screen.question
            await pilot.press("n")
            await until(pilot, lambda: app.screen is screen, "back on the diff screen")
            await settled(pilot, app)
            assert view.reviewed is None and not (repo / "other.py").exists()  # nothing merged
            assert Path(view.worktree.path).is_dir()

            # the session's change fixed (pending in its worktree): the check passes, m merges at once
            (Path(view.worktree.path) / "calc.py").write_text(CALC.replace("a - b", "a + b"))
            await pilot.press("t")
            await until(pilot, lambda: screen.check_state == "passed", "the check passing")
            await pilot.pause()
            assert "✓" in check_box(screen) and "check passed" in check_box(screen)
            await pilot.press("m")
            await until(pilot, lambda: view.reviewed is not None, "the merge")
            assert not isinstance(app.screen, ConfirmDialog)
            assert view.reviewed.ok and (repo / "other.py").read_text() == "x = 1\n"
            assert "a + b" in (repo / "calc.py").read_text()
            await app.shutdown()
    finally:
        gate.touch()  # never leave a check waiting


async def test_a_note_sourced_check_command_is_confirmed_once(api, tmp_path, repo):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "test-command.md").write_text("---\nname: test-command\ndescription: how to test\n---\n"
                                           "Run `python3 test_calc.py` from the top.\n")
    engine = FakeEngine()
    engine.notes_dir = notes  # type: ignore[attr-defined]  # the notes folder the session was given
    api.script(edit_calc("a + b"), Reply("Fixed."))
    mgr = manager(api, tmp_path, engine=engine)
    results: list = []  # every review result, in order (a spy on the real manager)
    real_review = mgr.review

    async def review(session_id, action):
        result = await real_review(session_id, action)
        results.append((action, result.action, result.ok))
        return result

    mgr.review = review  # type: ignore[method-assign]
    app = app_for(mgr, repo)
    async with app.run_test(size=SIZE) as pilot:
        await spawn_and_wait(pilot, app, "fix add")
        screen = await open_diff(pilot, app)

        await pilot.press("t")  # the command comes from a note: shown, asked
        await until(pilot, lambda: isinstance(app.screen, ConfirmDialog), "the question")
        assert "test-command note" in app.screen.question and "python3 test_calc.py" in app.screen.question
        await pilot.press("n")
        await until(pilot, lambda: app.screen is screen, "back on the diff screen")
        await settled(pilot, app)
        assert screen.check_state == "" and not screen.query_one("#diff-check").display  # nothing ran

        await pilot.press("t")  # not confirmed yet: asked again
        await until(pilot, lambda: isinstance(app.screen, ConfirmDialog), "the question again")
        await pilot.press("y")
        await until(pilot, lambda: screen.check_state == "passed", "the check passing")
        await pilot.pause()
        assert "check passed" in check_box(screen) and "python3 test_calc.py" in check_box(screen)

        assert results == [("check", "check-confirm", False), ("check", "check-confirm", False),
                           ("check-confirmed", "check", True)]

        await pilot.press("t")  # confirmed once: runs without asking
        await until(pilot, lambda: len(results) == 4 or isinstance(app.screen, ConfirmDialog), "the second check")
        assert app.screen is screen and results[3] == ("check", "check", True)
        assert screen.check_state == "passed"
        await app.shutdown()


# -- 2. a conflicting merge: nothing touched, sent back with the files named ---------------------
async def test_a_conflicting_merge_leaves_the_checkout_byte_identical_and_b_sends_it_back(api, tmp_path, repo):
    api.script(edit_calc("a + b"), Reply("Fixed add."), Reply("Merging main into my branch now."))
    mgr = manager(api, tmp_path)
    app = app_for(mgr, repo)
    async with app.run_test(size=SIZE) as pilot:
        view = await spawn_and_wait(pilot, app, "fix add")
        (repo / "calc.py").write_text(CALC.replace("a - b", "b + a  # fixed on main"))
        git(repo, "commit", "-q", "-am", "a fix on main")
        (repo / "scratch.txt").write_text("untracked, mine\n")
        before = tree_digest(repo)
        head = git(repo, "rev-parse", "main").strip()
        screen = await open_diff(pilot, app)

        await pilot.press("m")
        await until(pilot, lambda: "conflict in calc.py" in text_of(screen.query_one("#diff-status")),
                    "the conflict reported")
        status = text_of(screen.query_one("#diff-status"))
        assert "✗ merge" in status and "b send it back to the session" in status and "s shell" in status
        assert tree_digest(repo) == before and git(repo, "rev-parse", "main").strip() == head  # aborted: untouched
        assert Path(view.worktree.path).is_dir() and screen.diff is not None  # still there to send back

        requests = len(api.message_requests)
        await pilot.press("b")
        await until(pilot, lambda: len(api.message_requests) > requests, "the session's next request")
        followup = request_text(api, requests)
        assert "conflicts in these files:\n- calc.py" in followup
        assert "git merge main" in followup and view.worktree.branch in followup
        await until(pilot, lambda: "send back" in text_of(screen.query_one("#diff-status")), "the result shown")
        assert f"sent back to session {view.session_id}" in text_of(screen.query_one("#diff-status"))
        await until(pilot, lambda: view.status is S.WAITING, "the session answering")
        assert tree_digest(repo) == before
        await app.shutdown()


# -- 3. the pull request dialog ------------------------------------------------------------------




async def test_p_drafts_the_pull_request_edits_reach_pull_request_and_escape_cancels(api, tmp_path, repo,
                                                                                     monkeypatch):
    remote = with_remote(repo, tmp_path)
    record = fake_gh(tmp_path, monkeypatch)
    api.script(edit_calc("a + b"), Reply("Fixed add: it subtracted."))
    mgr = manager(api, tmp_path, check_command="python3 test_calc.py")
    calls: list[tuple] = []
    real = mgr.pull_request

    async def recording(session_id, title="", body=""):
        calls.append((session_id, title, body, False))
        return await real(session_id, title, body)

    mgr.pull_request = recording  # type: ignore[method-assign]
    app = app_for(mgr, repo)
    async with app.run_test(size=SIZE) as pilot:
        view = await spawn_and_wait(pilot, app, "fix add in calc.py")
        screen = await open_diff(pilot, app)
        await pilot.press("t")
        await until(pilot, lambda: screen.check_state == "passed", "the check passing")

        await pilot.press("p")
        await until(pilot, lambda: isinstance(app.screen, PullRequestDialog), "the pull request dialog")
        dialog = app.screen
        await pilot.pause()
        title = dialog.query_one("#pr-title")
        body = dialog.query_one("#pr-body")
        assert title.value == "fix add in calc.py"  # from the task
        assert body.text.startswith("## Task\n\nfix add in calc.py")
        assert "## Check\n\ncheck passed: `python3 test_calc.py`" in body.text  # the check's result
        assert "Fixed add: it subtracted." in body.text  # the session's final answer
        await pilot.press("escape")  # cancelled: nothing pushed, no gh
        await until(pilot, lambda: app.screen is screen, "back on the diff screen")
        await settled(pilot, app)
        assert [c for c in calls if not c[3]] == [] and not record.exists()
        assert view.worktree.branch not in git(remote, "branch", "--list")

        await pilot.press("p")
        await until(pilot, lambda: isinstance(app.screen, PullRequestDialog), "the dialog again")
        dialog = app.screen
        await pilot.pause()
        dialog.query_one("#pr-title").focus()
        await pilot.press("end", *" in one line")
        dialog.query_one("#pr-body").focus()
        await pilot.press(*"Reviewed in the cockpit", "enter")  # typed at the top of the body
        edited_body = dialog.query_one("#pr-body").text
        assert edited_body.startswith("Reviewed in the cockpit\n## Task")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: any(not c[3] for c in calls), "the pull request call")
        assert [c for c in calls if not c[3]] == [(view.session_id, "fix add in calc.py in one line",
                                                   edited_body, False)]
        await until(pilot, lambda: "pull request opened" in text_of(screen.query_one("#diff-status")),
                    "the result shown")
        assert "https://github.com/acme/calc/pull/7" in text_of(screen.query_one("#diff-status"))
        args = json.loads(record.read_text())
        assert args[:2] == ["pr", "create"]
        assert args[args.index("--title") + 1] == "fix add in calc.py in one line"
        assert args[args.index("--body") + 1] == edited_body
        assert args[args.index("--head") + 1] == view.worktree.branch and args[args.index("--base") + 1] == "main"
        assert "a + b" in git(remote, "show", f"{view.worktree.branch}:calc.py")  # pushed
        await app.shutdown()


async def test_p_asks_before_pushing_changed_protected_paths(api, tmp_path, repo, monkeypatch):
    """`p` pushed a new .github workflow without a word (it runs on the forge's CI with the
    repository's secrets) where `m` asks first: it asks too, and a no pushes nothing."""
    remote = with_remote(repo, tmp_path)
    record = fake_gh(tmp_path, monkeypatch)
    api.script(edit_calc("a + b"), Reply("Fixed add."))
    mgr = manager(api, tmp_path)
    app = app_for(mgr, repo)
    async with app.run_test(size=SIZE) as pilot:
        view = await spawn_and_wait(pilot, app, "fix add in calc.py")
        workflows = Path(view.worktree.path) / ".github" / "workflows"
        workflows.mkdir(parents=True)
        (workflows / "ci.yml").write_text("on: push\njobs: {}\n")
        screen = await open_diff(pilot, app)
        await pilot.press("p")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDialog), "the question")
        question = app.screen.question
        assert ".github/workflows/ci.yml" in question and "Push and open the pull request anyway?" in question
        await pilot.press("n")
        await until(pilot, lambda: app.screen is screen, "back on the diff screen")
        await settled(pilot, app)
        assert not record.exists() and view.worktree.branch not in git(remote, "branch", "--list")
        await pilot.press("p")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDialog), "the question again")
        await pilot.press("y")
        await until(pilot, lambda: isinstance(app.screen, PullRequestDialog), "the pull request dialog")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "pull request opened" in text_of(screen.query_one("#diff-status")), "opened")
        assert record.exists()
        await pilot.press("x")  # a discard now deletes the change here only: it says so
        await until(pilot, lambda: isinstance(app.screen, ConfirmDialog), "the discard question")
        assert "the branch pushed for its pull request stays on the remote" in app.screen.question
        await app.shutdown()


async def test_on_a_phone_the_diff_stacks_and_its_buttons_merge(api, tmp_path, repo):
    """At a phone's width the diff screen kept two columns (the diff cut at ~30 characters) and its
    footer showed only Back: merge, keep, discard, check, send back and pull request were out of
    reach without a keyboard. Narrow, the files stack above the diff and a row of buttons does what
    the keys do; a wide screen has no buttons."""
    api.script(edit_calc("a + b"), Reply("Fixed add."))
    app = app_for(manager(api, tmp_path), repo)
    async with app.run_test(size=(48, 40)) as pilot:
        view = await spawn_and_wait(pilot, app, "fix add in calc.py")
        app.screen.focus_pane(app.panes[view.session_id])
        await pilot.press("d")
        screen = app.screen
        assert isinstance(screen, DiffScreen)
        await until(pilot, lambda: screen.diff is not None, "the diff")
        await settled(pilot, app)
        assert screen.has_class("-narrow")
        files, diff = screen.query_one("#diff-left").region, screen.query_one("#diff-view").region
        assert files.bottom <= diff.y and diff.width >= 44  # stacked: the diff has the width
        merge = screen.query_one("#diff-bar-merge")
        assert merge.display and screen.region.contains_region(merge.region)
        await pilot.click("#diff-bar-merge")
        await until(pilot, lambda: screen.ended, "merged")
        assert "a + b" in (repo / "calc.py").read_text()
        await settled(pilot, app)
        assert not merge.display and screen.query_one("#diff-bar-back").display
        await pilot.click("#diff-bar-back")
        await until(pilot, lambda: app.screen is not screen, "back")
        await app.shutdown()
    app = app_for(manager(api, tmp_path), repo)
    async with app.run_test(size=SIZE) as pilot:
        await app.push_screen(DiffScreen(app.manager, view))
        await settled(pilot, app)
        assert not app.screen.has_class("-narrow") and not app.screen.query_one("#diff-actions").display
        await app.shutdown()


# -- 4. the shell key ----------------------------------------------------------------------------
@pytest.fixture
def suspendable(monkeypatch):
    """The pilot's headless driver made able to suspend (a real terminal's driver can): the app's
    real ``App.suspend`` runs; entering and leaving application mode are recorded instead of done,
    with whether the shell had already run (its record file exists) at that moment."""
    from textual.drivers.headless_driver import HeadlessDriver

    log: list[tuple[str, bool]] = []
    state: dict[str, Path] = {}
    monkeypatch.setattr(HeadlessDriver, "can_suspend", property(lambda self: True), raising=False)
    monkeypatch.setattr(HeadlessDriver, "suspend_application_mode",
                        lambda self: log.append(("suspend", state["out"].exists())), raising=False)
    monkeypatch.setattr(HeadlessDriver, "resume_application_mode",
                        lambda self: log.append(("resume", state["out"].exists())), raising=False)
    return log, state


def recording_shell(tmp_path: Path, monkeypatch) -> Path:
    """``$SHELL``: a script that writes its working folder into a file and exits."""
    out = tmp_path / "shell-cwd"
    script = tmp_path / "fake-shell"
    script.write_text(f"#!/bin/sh\npwd -P > {out}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("SHELL", str(script))
    return out


@pytest.mark.parametrize("where", ["main screen", "diff screen"])
async def test_s_suspends_the_app_and_runs_the_shell_in_the_sessions_worktree(api, tmp_path, repo, monkeypatch,
                                                                               suspendable, where):
    log, state = suspendable
    out = state["out"] = recording_shell(tmp_path, monkeypatch)
    api.script(edit_calc("a + b"), Reply("Fixed."))
    app = app_for(manager(api, tmp_path), repo)
    async with app.run_test(size=SIZE) as pilot:
        view = await spawn_and_wait(pilot, app, "fix add")
        if where == "diff screen":
            await open_diff(pilot, app)
        await pilot.press("s")
        await until(pilot, lambda: out.exists() and len(log) == 2, "the shell run and the app resumed")
        assert out.read_text().strip() == str(Path(view.worktree.path).resolve())
        assert log == [("suspend", False), ("resume", True)]  # it ran while the app was suspended
        assert app.is_running and (app.screen.id == "diff") == (where == "diff screen")
        await app.shutdown()


async def test_s_where_the_app_cannot_suspend_says_so_and_runs_nothing(api, tmp_path, repo, monkeypatch):
    out = recording_shell(tmp_path, monkeypatch)
    api.script(edit_calc("a + b"), Reply("Fixed."))
    app = app_for(manager(api, tmp_path), repo)
    notes: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        await spawn_and_wait(pilot, app, "fix add")
        real_notify = app.notify
        monkeypatch.setattr(app, "notify", lambda message, **kw: notes.append(str(message)) or real_notify(message, **kw))
        await pilot.press("s")
        await until(pilot, lambda: notes, "the notification")
        # (it said "cannot open a shell here: App.suspend is not supported in this environment")
        view = only_view(app)
        assert notes[0].startswith(f"a shell needs a terminal of its own: there, run cockpit shell {view.session_id}")
        assert not out.exists()
        await app.shutdown()


async def test_s_over_a_repository_the_session_planted_says_so_and_runs_nothing(api, tmp_path, repo, monkeypatch,
                                                                                suspendable):
    log, state = suspendable
    out = state["out"] = recording_shell(tmp_path, monkeypatch)
    api.script(Reply("", [ToolUse("bash", {"command": "mkdir -p tools/x && cd tools/x && git init -q && echo made"})]),
               Reply("Made a repository."))
    app = app_for(manager(api, tmp_path), repo)
    notes: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        app.spawn("make a repo")
        await until(pilot, lambda: app.views and only_view(app).status is S.WAITING, "the session waits")
        real_notify = app.notify
        monkeypatch.setattr(app, "notify", lambda message, **kw: notes.append(str(message)) or real_notify(message, **kw))
        await pilot.press("s")
        await until(pilot, lambda: notes, "the notification")
        assert "no shell opened" in notes[0] and "tools/x" in notes[0] and "--force" in notes[0]
        assert not out.exists() and log == []
        await app.shutdown()


# -- 5. the spawn dialog: where the session will work --------------------------------------------
async def open_spawn(pilot, app) -> SpawnDialog:
    await pilot.press("n")
    dialog = app.screen
    assert isinstance(dialog, SpawnDialog)
    return dialog


async def test_spawn_dialog_outside_a_repository_says_in_place_and_disables_the_worktree_toggle(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    mgr = FakeManager()
    app = CockpitApp(mgr, FakeEngine(), workspace=plain)
    async with app.run_test(size=SIZE) as pilot:
        dialog = await open_spawn(pilot, app)
        where = dialog.query_one("#spawn-where")
        await until(pilot, lambda: where.display, "the where line")
        assert text_of(where) == "in place: not a git repository (edits your files directly)"
        box = dialog.query_one("#spawn-worktree")
        assert box.disabled and box.value is False
        await pilot.click("#spawn-worktree")  # disabled: clicking does nothing
        assert box.value is False
        dialog.query_one("#spawn-task").focus()
        await pilot.press(*"look around", "enter")
        await until(pilot, lambda: mgr.spawned == ["look around"], "the spawn")
        assert mgr.spawn_options[0]["worktree"] is False and mgr.spawn_options[0]["workspace"] == str(plain)
        await app.shutdown()


async def test_spawn_dialog_in_a_repository_shows_no_line_and_keeps_the_toggle(tmp_path, repo):
    app = CockpitApp(FakeManager(), FakeEngine(), workspace=repo)
    async with app.run_test(size=SIZE) as pilot:
        dialog = await open_spawn(pilot, app)
        where = dialog.query_one("#spawn-where")
        # the placement is read in a thread: once its line is set, the dialog knows — and shows nothing
        await until(pilot, lambda: "own git worktree on a new branch" in text_of(where), "the placement read")
        assert not where.display and not dialog.query_one("#spawn-worktree").disabled
        await pilot.click("#spawn-worktree")  # own worktree off: now it says so
        await until(pilot, lambda: where.display, "the where line")
        assert "in place: own git worktree off" in text_of(where)
        await app.shutdown()


async def test_spawn_dialog_refuses_a_bare_repository_with_its_message(tmp_path, repo):
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    mgr = FakeManager()
    app = CockpitApp(mgr, FakeEngine(), workspace=bare)
    async with app.run_test(size=SIZE) as pilot:
        dialog = await open_spawn(pilot, app)
        where = dialog.query_one("#spawn-where")
        await until(pilot, lambda: where.display, "the where line")
        message = f"{bare} is a bare git repository (no working tree): start the session in a clone or a worktree of it"
        assert text_of(where) == message
        await pilot.press(*"fix add", "enter")
        error = dialog.query_one("#spawn-error")
        await until(pilot, lambda: error.display, "the refusal")
        assert text_of(error) == message
        assert app.screen is dialog and mgr.spawned == []  # the dialog stays; nothing spawned
        await app.shutdown()


async def test_a_spawn_the_runtime_refuses_reopens_the_dialog_with_what_was_typed_and_why(tmp_path, repo):
    class Refusing(FakeManager):
        refusals = ["the server's budget cap ($5) is reached"]

        async def spawn(self, spec, *, host=None):
            if self.refusals:
                raise RuntimeError(self.refusals.pop())
            return await super().spawn(spec, host=host)

    mgr = Refusing()
    app = CockpitApp(mgr, FakeEngine(), workspace=repo)
    async with app.run_test(size=SIZE) as pilot:
        dialog = await open_spawn(pilot, app)
        dialog.query_one("#spawn-model").value = "claude-opus-4-1"
        dialog.query_one("#spawn-budget").value = "2.5"
        dialog.query_one("#spawn-task").focus()
        await pilot.press(*"fix add", "enter")
        await until(pilot, lambda: isinstance(app.screen, SpawnDialog) and app.screen is not dialog,
                    "the dialog again")
        again = app.screen
        error = again.query_one("#spawn-error")
        await until(pilot, lambda: error.display, "the reason")
        await settled(pilot, app)
        assert error.display, "the reason stays while the task is the one refused"
        assert text_of(error) == "the spawn was refused: the server's budget cap ($5) is reached"
        assert again.query_one("#spawn-task").value == "fix add"
        assert again.query_one("#spawn-model").value == "claude-opus-4-1"
        assert again.query_one("#spawn-budget").value == "2.5"
        assert mgr.spawned == []
        again.query_one("#spawn-task").focus()
        await pilot.press("!", "enter")  # edited: the reason goes; submitted: it spawns
        await until(pilot, lambda: mgr.spawned == ["fix add!"], "the spawn")
        assert mgr.spawn_options[0]["model"] == "claude-opus-4-1" and mgr.spawn_options[0]["max_budget_usd"] == 2.5
        assert not isinstance(app.screen, SpawnDialog)
        await app.shutdown()


# -- 6. the conflict radar -----------------------------------------------------------------------
async def test_the_conflict_radar_warns_in_the_header_both_panes_and_the_diff_screen(api, tmp_path, repo):
    api.script(edit_calc("a + b"), Reply("Done one."), edit_calc("b + a"), Reply("Done two."))
    mgr = manager(api, tmp_path)
    app = app_for(mgr, repo)
    async with app.run_test(size=SIZE) as pilot:
        app.spawn("fix add")
        await until(pilot, lambda: len(app.views) == 1 and only_view(app).status is S.WAITING, "the first session")
        first = only_view(app)
        await until(pilot, lambda: first.changes is not None and first.changes.paths == ("calc.py",), "its change")
        assert not first.overlap  # alone: no warning
        app.spawn("fix add too")
        await until(pilot, lambda: len(app.views) == 2, "the second session")
        second = next(v for v in app.views.values() if v is not first)
        await until(pilot, lambda: second.status is S.WAITING and first.overlap and second.overlap, "the radar")
        assert first.overlap == {"calc.py": [second.session_id]}
        assert second.overlap == {"calc.py": [first.session_id]}
        await until(pilot, lambda: "⚠ calc.py changed by 2 sessions" in text_of(app.screen.query_one("#totals")),
                    "the header's warning")
        for one, other in ((first, second), (second, first)):
            strip = text_of(app.panes[one.session_id].query_one("#pane-strip"))
            assert f"⚠ 1 also in {other.session_id}" in strip

        app.open_diff(first.session_id)
        screen = app.screen
        assert isinstance(screen, DiffScreen)
        await until(pilot, lambda: screen.diff is not None, "the diff")
        files = screen.query_one("#diff-files")
        assert f"⚠ also {second.session_id}" in str(files.get_option_at_index(0).prompt)
        await pilot.press("escape")

        # the other one discarded: the warnings go
        assert (await mgr.review(second.session_id, "discard")).ok
        await until(pilot, lambda: not first.overlap, "the radar cleared")
        await until(pilot, lambda: "changed by" not in text_of(app.screen.query_one("#totals")), "the header cleared")
        assert "also in" not in text_of(app.panes[first.session_id].query_one("#pane-strip"))
        await app.shutdown()
