"""Pilot tests of the coding-session UI against the real runtime: ``SessionManager`` + the loopback
Messages API stand-in, in a temp git repository (approvals in the pane, the diff screen with
merge / discard / review comments, "which session needs you", quitting, the spawn dialog's
options, attaching late, continuing a full context, closing a pane)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import git, make_repo
from standin import HTTPError, Reply, StandIn, ToolUse
from tui_fakes import settled, text_of, until

from cockpit import events as ev
from cockpit.events import SessionStatus as S
from cockpit.runtime import RuntimeConfig, SessionManager, read_events
from cockpit.runtime.pricing import ModelPrice, PricingTable
from cockpit.runtime.spawn import SpawnSpec
from cockpit.tui import CockpitApp
from cockpit.tui.screens.approval import ApprovalDialog
from cockpit.tui.screens.dialogs import ChoiceDialog, CommentDialog, ConfirmDialog, QuitDialog
from cockpit.tui.screens.diff import DiffScreen
from cockpit.tui.screens.spawn import SpawnDialog

EDIT = "str_replace_based_edit_tool"
PRICING = PricingTable({"test-model": ModelPrice(2.0, 10.0, 2.5, 0.2, 100_000),
                        "other-model": ModelPrice(1.0, 5.0, 1.25, 0.1, 100_000)}, source="test")
SIZE = (160, 48)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


@pytest.fixture
def api():
    with StandIn() as server:
        yield server
        server.release()


def manager(api: StandIn, tmp_path: Path, **cfg) -> SessionManager:
    config = dict(api_key="test-key", base_url=api.base_url, model="test-model", max_retries=0,
                  sessions_dir=tmp_path / "sessions", worktrees_dir=tmp_path / "worktrees", interactive=True)
    config.update(cfg)
    return SessionManager(None, RuntimeConfig(**config), pricing=PRICING)


class FakeNotifier:
    """Records OS notifications (the app's ``os_notifier``)."""

    def __init__(self):
        self.sent: list[tuple[str, str]] = []

    async def send(self, title: str, message: str) -> bool:
        self.sent.append((title, message))
        return True


def app_for(mgr, repo, **kw) -> CockpitApp:
    kw.setdefault("os_notifier", FakeNotifier())
    return CockpitApp(mgr, None, workspace=repo, **kw)


async def killed_with_its_change(pilot, app, task: str):
    """Spawn ``task`` (the app's only session), wait for its change and its answer, kill it (`x`,
    `y`): its view, settled."""
    app.spawn(task)
    await until(pilot, lambda: len(app.views) == 1 and only_view(app).status is S.WAITING, "waiting")
    view = only_view(app)
    await until(pilot, lambda: view.changes is not None, "changes")
    await pilot.press("x", "y")
    await until(pilot, lambda: view.status is S.KILLED, "killed")
    await settled(pilot, app)
    return view


def only_view(app):
    (view,) = app.views.values()
    return view


def tool_results(api: StandIn) -> list[dict]:
    last = api.message_requests[-1]["messages"][-1]["content"]
    return [b for b in last if b.get("type") == "tool_result"]


async def test_approvals_in_the_pane_once_for_the_session_and_denied_with_a_reason(api, tmp_path, repo):
    api.script(
        Reply("Fixing add.", [ToolUse(EDIT, {"command": "str_replace", "path": "calc.py",
                                             "old_str": "a - b", "new_str": "a + b"})]),
        Reply("", [ToolUse("bash", {"command": "git status --short"})]),
        Reply("", [ToolUse("bash", {"command": "git status"})]),  # allowed by the session rule
        Reply("", [ToolUse("bash", {"command": "rm -rf build"})]),
        Reply("All done."),
    )
    mgr = manager(api, tmp_path)
    app = app_for(mgr, repo)
    async with app.run_test(size=SIZE) as pilot:
        app.spawn("fix add in calc.py")
        await until(pilot, lambda: app.views and only_view(app).pending is not None, "first ask")
        view = only_view(app)
        pane = app.panes[view.session_id]
        await until(pilot, lambda: pane.query_one("#pane-approval").display, "the ask in the pane")
        panel = text_of(pane.query_one("#pane-approval"))
        assert "edit a file" in panel and "str_replace calc.py" in panel
        assert "-     return a - b" in panel and "+     return a + b" in panel  # the edit's diff, numbered
        assert "allow once" in panel and "(Edit)" in panel
        assert "needs approval" in text_of(app.screen.query_one("#totals"))

        await pilot.press("y")  # allow once
        await until(pilot, lambda: view.pending is not None and view.pending.kind == "bash", "the command asks")
        assert "a + b" in (Path(view.worktree.path) / "calc.py").read_text()
        assert "a - b" in (repo / "calc.py").read_text()  # the user's checkout is untouched
        edit_block = next(b for b in view.blocks if b.kind == "tool" and b.name == EDIT)
        assert edit_block.approval == "allowed once"

        await pilot.press("a")  # allow for this session: Bash(git status *)
        await until(pilot, lambda: view.pending is not None and "rm -rf" in view.pending.summary, "rm asks")
        git_blocks = [b for b in view.blocks if b.kind == "tool" and b.name == "bash"]
        assert git_blocks[0].approval == "allowed for this session" and git_blocks[1].approval == ""

        await pilot.press("enter")  # the approval dialog
        dialog = app.screen
        assert isinstance(dialog, ApprovalDialog)
        assert "rm -rf build" in text_of(dialog.query_one("#approval-text"))
        # y / a / d act on keys here: the dialog says to press d before typing a reason
        assert "press d, then type" in text_of(dialog.query_one("#approval-reason-label"))
        await pilot.press("d", *"keep the build folder", "enter")
        await until(pilot, lambda: view.status is S.WAITING, "the turn ends")
        denied = tool_results(api)[0]
        assert denied["is_error"] and "keep the build folder" in denied["content"]
        rm_block = [b for b in view.blocks if b.kind == "tool" and b.name == "bash"][-1]
        assert rm_block.approval == "denied: keep the build folder"
        await until(pilot, lambda: not pane.query_one("#pane-approval").display
                    and "✗ denied: keep the build folder" in pane.query_one("#pane-body").plain_text(), "the denial shown")
        body = pane.query_one("#pane-body").plain_text()
        assert "✗ denied: keep the build folder" in body and "$ rm -rf build" in body
        await app.shutdown()


async def test_y_and_a_are_greyed_out_without_a_pending_approval(api, tmp_path, repo):
    api.script(Reply("Hello."))
    app = app_for(manager(api, tmp_path), repo)
    async with app.run_test(size=SIZE) as pilot:
        app.spawn("say hello")
        await until(pilot, lambda: app.views and only_view(app).status is S.WAITING, "waiting")
        await until(pilot, lambda: not app.screen.active_bindings["y"].enabled
                    and app.screen.active_bindings["enter"].binding.action == "follow_up", "the keys of a waiting session")
        keys = app.screen.active_bindings
        assert not keys["y"].enabled and not keys["a"].enabled
        assert keys["enter"].binding.action == "follow_up"  # enter follows up when nothing waits
        await pilot.press("y")  # nothing happens, nothing breaks
        assert only_view(app).status is S.WAITING
        await app.shutdown()


async def test_diff_screen_comment_then_merge_into_the_base_branch(api, tmp_path, repo):
    api.script(
        Reply("Creating it.", [ToolUse(EDIT, {"command": "create", "path": "hello.py",
                                              "file_text": "def hello():\n    return 'hi'\n"})]),
        Reply("Created hello.py."),
        Reply("Noted: I will add a docstring later."),
    )
    mgr = manager(api, tmp_path, permission_mode="acceptEdits")
    app = app_for(mgr, repo)
    async with app.run_test(size=SIZE) as pilot:
        app.spawn("add hello.py")
        await until(pilot, lambda: app.views and only_view(app).status is S.WAITING, "waiting")
        view = only_view(app)
        await until(pilot, lambda: view.changes is not None, "the diff stat")
        await until(pilot, lambda: "1 file +2 -0" in text_of(app.panes[view.session_id].query_one("#pane-strip")),
                    "the diff stat in the strip")
        assert "1 file +2 -0" in text_of(app.panes[view.session_id].query_one("#pane-strip"))

        await pilot.press("d")
        screen = app.screen
        assert isinstance(screen, DiffScreen)
        await until(pilot, lambda: screen.diff is not None, "the diff")
        files = screen.query_one("#diff-files")
        assert files.option_count == 1 and "hello.py" in str(files.get_option_at_index(0).prompt)
        diffview = screen.query_one("#diff-view")
        shown = [c.plain for c in diffview.selected_contents()]
        assert any("def hello():" in line for line in shown)  # the cursor starts on the first change
        assert "return 'hi'" in "\n".join(line.text for line in diffview.lines)

        # a review comment on the two new lines goes to the session as a follow-up
        await pilot.press("shift+down", "c")
        assert isinstance(app.screen, CommentDialog)
        await pilot.press(*"add a docstring", "enter")
        await until(pilot, lambda: len(api.message_requests) == 3, "the follow-up request")
        follow_up = api.message_requests[2]["messages"][-1]["content"][-1]["text"]
        assert follow_up.startswith("Review comment on hello.py, lines 1-2:")
        assert "+def hello():" in follow_up and "+    return 'hi'" in follow_up and "add a docstring" in follow_up
        await until(pilot, lambda: view.status is S.WAITING and any(
            "Noted" in b.text for b in view.blocks), "the answer to the comment")

        await pilot.press("m")  # merge
        await until(pilot, lambda: view.reviewed is not None, "the merge result")
        assert view.reviewed.ok and "fast-forward" in view.reviewed.message
        assert (repo / "hello.py").read_text() == "def hello():\n    return 'hi'\n"
        assert not Path(view.worktree.path).exists()
        await until(pilot, lambda: "merged" in text_of(screen.query_one("#diff-status")), "result shown")
        await until(pilot, lambda: screen.query_one("#diff-files").option_count == 0, "the file list emptied")
        # nothing stale is left: no file list, and the view says what happened (not "already merged…")
        assert screen.query_one("#diff-files").option_count == 0
        assert text_of(screen.query_one("#diff-files-label")) == "Files"
        shown = "\n".join(line.text for line in diffview.lines)
        assert "merged" in shown and "already" not in shown
        # the keys that act on the change leave the footer and do nothing; Back stays
        await until(pilot, lambda: "m" not in screen.active_bindings, "the footer without merge")
        assert "escape" in screen.active_bindings and "x" not in screen.active_bindings
        await pilot.press("m", "x")
        assert app.screen is screen and "already" not in text_of(screen.query_one("#diff-status"))
        await pilot.press("escape")
        assert view.status is S.DONE
        await until(pilot, lambda: "merged" in text_of(app.panes[view.session_id].query_one("#pane-strip")), "merged")
        assert "merged" in text_of(app.panes[view.session_id].query_one("#pane-strip"))
        await app.shutdown()


async def test_discard_asks_first_then_removes_worktree_and_branch(api, tmp_path, repo):
    api.script(Reply("", [ToolUse(EDIT, {"command": "create", "path": "junk.txt", "file_text": "junk"})]),
               Reply("Made junk."))
    mgr = manager(api, tmp_path, permission_mode="bypassPermissions")
    app = app_for(mgr, repo)
    async with app.run_test(size=SIZE) as pilot:
        app.spawn("make junk")
        await until(pilot, lambda: app.views and only_view(app).status is S.WAITING, "waiting")
        view = only_view(app)
        path, branch = view.worktree.path, view.worktree.branch
        assert path in git(repo, "worktree", "list")
        await pilot.press("d")
        screen = app.screen
        await until(pilot, lambda: screen.diff is not None, "the diff")
        await pilot.press("x")
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.press("n")  # changed my mind: nothing happens
        await until(pilot, lambda: not isinstance(app.screen, ConfirmDialog), "the dialog closed")
        await pilot.pause()
        assert Path(path).exists() and view.reviewed is None
        await pilot.press("x", "y")
        await until(pilot, lambda: view.reviewed is not None, "discarded")
        assert view.reviewed.ok
        assert path not in git(repo, "worktree", "list") and branch not in git(repo, "branch", "--list")
        assert not (repo / "junk.txt").exists()
        await app.shutdown()


async def test_a_session_in_place_has_no_diff_and_the_screen_says_why(api, tmp_path, repo):
    api.script(Reply("ok"))
    app = app_for(manager(api, tmp_path), repo)
    async with app.run_test(size=SIZE) as pilot:
        app.spawn(SpawnSpec("look around", worktree=False))
        await until(pilot, lambda: app.views and only_view(app).status is S.WAITING, "waiting")
        view = only_view(app)
        await until(pilot, lambda: "in place: --no-worktree" in text_of(app.panes[view.session_id].query_one("#pane-status")),
                    "in place")
        assert "in place: --no-worktree" in text_of(app.panes[view.session_id].query_one("#pane-status"))
        await pilot.press("d")
        screen = app.screen
        await until(pilot, lambda: screen.error, "the reason")
        assert "runs in place" in screen.error and "--no-worktree" in screen.error
        assert "No diff" in text_of(screen.query_one("#diff-status"))
        await app.shutdown()


async def test_bell_toast_and_os_notification_when_a_background_session_needs_you(api, tmp_path, repo):
    def responder(body):
        first = body["messages"][0]["content"][-1]["text"]
        if len(body["messages"]) == 1 and "ask" in first:
            return Reply("", [ToolUse("bash", {"command": "make test"})])
        return Reply("fine")

    api.responder = responder
    notifier = FakeNotifier()
    app = app_for(manager(api, tmp_path), repo, os_notifier=notifier)
    rang: list[int] = []
    toasts: list[tuple[str, str]] = []
    async with app.run_test(size=SIZE) as pilot:
        app.bell = lambda: rang.append(1)
        notify = app.notify
        app.notify = lambda message, title="", **kw: (toasts.append((title, message)), notify(message, title=title, **kw))[1]
        app.spawn("quiet one")
        await until(pilot, lambda: len(app.views) == 1 and only_view(app).status is S.WAITING, "first waits")
        first = only_view(app)
        assert rang == [] and toasts == []  # the selected pane, app focused: nobody is told

        app.spawn("ask for a command", focus=False)  # not selected: a background session
        await until(pilot, lambda: len(app.views) == 2, "second pane")
        second = [v for v in app.views.values() if v is not first][0]
        await until(pilot, lambda: second.status is S.NEEDS_APPROVAL, "second needs approval")
        assert app.screen.selected is app.panes[first.session_id]
        assert rang == [1]
        assert any(second.session_id in title and "needs approval: make test" in message for title, message in toasts)
        assert notifier.sent == []  # the app is focused: no OS notification

        app.app_focus = False  # the terminal lost focus (Textual's AppBlur)
        app.spawn("ask again", focus=False)
        await until(pilot, lambda: len(app.views) == 3, "third pane")
        third = list(app.views.values())[-1]
        await until(pilot, lambda: third.status is S.NEEDS_APPROVAL, "third needs approval")
        await until(pilot, lambda: notifier.sent, "an OS notification")
        title, message = notifier.sent[0]
        assert third.session_id in title and "make test" in message
        assert len(rang) == 2
        await app.shutdown()


async def test_os_notifications_are_off_with_notify_os_false(api, tmp_path, repo):
    api.script(Reply("", [ToolUse("bash", {"command": "make"})]))
    app = CockpitApp(manager(api, tmp_path), None, workspace=repo, notify_os=False)
    assert app.os_notifier is None
    async with app.run_test(size=SIZE) as pilot:
        app.app_focus = False
        app.spawn("x")
        await until(pilot, lambda: app.views and only_view(app).status is S.NEEDS_APPROVAL, "asks")
        await app.shutdown()


async def test_the_real_os_notifier_is_silent_without_a_desktop(monkeypatch, capsys, caplog):
    from cockpit.tui.notify import DesktopNotifications

    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
    notifier = DesktopNotifications(timeout=2)
    assert await notifier.send("Cockpit", "a session needs you") in (True, False)  # never raises
    out = capsys.readouterr()
    assert out.err == "" and out.out == ""  # nothing lands on the terminal
    assert not [r for r in caplog.records if r.name.startswith("desktop_notifier")]


async def test_an_os_notifier_that_fails_or_hangs_is_silent_and_not_retried():
    import asyncio

    from cockpit.tui.notify import DesktopNotifications

    class Broken:
        async def send(self, **kw):
            raise RuntimeError("no notification daemon")

    class Hangs:
        async def send(self, **kw):
            await asyncio.Event().wait()

    for backend in (Broken(), Hangs()):
        notifier = DesktopNotifications(timeout=0.1)
        notifier._notifier = backend
        assert await notifier.send("Cockpit", "x") is False
        assert notifier.broken and await notifier.send("again", "x") is False  # no retry storm


async def test_quit_with_sessions_working_asks_first(api, tmp_path, repo):
    api.script(Reply("a long answer " * 20, stall_after=4))
    mgr = manager(api, tmp_path)
    app = app_for(mgr, repo)
    async with app.run_test(size=SIZE) as pilot:
        app.spawn("stream for a while")
        await until(pilot, lambda: app.views and only_view(app).status is S.STREAMING, "streaming")
        view = only_view(app)
        await pilot.press("q")
        dialog = app.screen
        assert isinstance(dialog, QuitDialog) and "1 streaming" in str(dialog.question)
        await pilot.press("q")  # a second q does not stack another dialog
        assert app.screen is dialog
        await pilot.press("n")
        await until(pilot, lambda: app.screen is not dialog, "the dialog closed")
        await pilot.pause()
        assert app.is_running and view.status is S.STREAMING
        await pilot.press("q", "y")
        await until(pilot, lambda: not app.is_running, "the app exits")
    assert mgr.get(view.session_id).status is S.KILLED


async def test_quit_without_working_sessions_does_not_ask(api, tmp_path, repo):
    api.script(Reply("done"))
    app = app_for(manager(api, tmp_path), repo)
    async with app.run_test(size=SIZE) as pilot:
        app.spawn("short")
        await until(pilot, lambda: app.views and only_view(app).status is S.WAITING, "waiting")
        await pilot.press("q")
        await until(pilot, lambda: not app.is_running, "the app exits")


async def test_spawn_dialog_options_reach_spawn(api, tmp_path, repo):
    api.script(Reply("planned"))
    app = app_for(manager(api, tmp_path), repo, model="test-model")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        dialog = app.screen
        assert isinstance(dialog, SpawnDialog)
        assert dialog.query_one("#spawn-model").value == "test-model"  # default from config
        assert dialog.query_one("#spawn-mode").value == "default"
        assert dialog.query_one("#spawn-backend").value == "cockpit"
        await pilot.press(*"make a plan")
        dialog.query_one("#spawn-model").value = "other-model"
        dialog.query_one("#spawn-mode").value = "plan"
        await pilot.click("#spawn-worktree")  # off: run in the workspace itself
        assert dialog.query_one("#spawn-worktree").value is False
        dialog.query_one("#spawn-task").focus()
        await pilot.press("enter")
        await until(pilot, lambda: app.views and only_view(app).status is S.WAITING, "waiting")
        view = only_view(app)
        assert view.model == "other-model" and view.permission_mode == "plan"
        assert view.worktree is None and "--no-worktree" in view.placement
        assert api.message_requests[0]["model"] == "other-model"
        assert "plan" in api.message_requests[0]["messages"][0]["content"][0]["text"]  # the <env> block
        await app.shutdown()


async def test_a_late_attaching_app_rebuilds_panes_from_the_snapshot_and_transcripts(api, tmp_path, repo):
    api.script(
        Reply("Reading first.", [ToolUse(EDIT, {"command": "view", "path": "calc.py"})]),
        Reply("It subtracts."),
        Reply("Second answer."),
    )
    mgr = manager(api, tmp_path, permission_mode="acceptEdits")
    session = await mgr.spawn(SpawnSpec("what does add do?", workspace=repo))
    assert await mgr.wait_idle(timeout=30)
    app = app_for(mgr, repo)  # attaches after the session ran: no events replayed
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: session.id in app.views, "a pane from the snapshot")
        view = app.views[session.id]
        assert view.status is S.WAITING and view.task == "what does add do?"
        assert view.permission_mode == "acceptEdits" and view.worktree is not None
        await until(pilot, lambda: any(b.kind == "tool" for b in view.blocks), "earlier output")
        kinds = [b.kind for b in view.blocks]
        assert kinds == ["text", "tool", "text"]  # the snapshot replays the session's events
        assert "def add" in view.blocks[1].result
        assert view.blocks[2].text == "It subtracts."
        def body() -> str:
            return app.panes[session.id].query_one("#pane-body").plain_text()

        await until(pilot, lambda: "Reading first." in body() and "It subtracts." in body(), "the pane drawn")
        app.screen.focus_pane(app.panes[session.id])
        await pilot.press("enter", *"and then?", "enter")
        await until(pilot, lambda: any(b.text == "Second answer." for b in view.blocks), "follow-up answered")
        assert [b.kind for b in view.blocks][-2:] == ["user", "text"]
        assert sum(b.text == "It subtracts." for b in view.blocks) == 1  # nothing doubled
        await app.shutdown()


async def test_live_usage_moves_while_a_response_streams(api, tmp_path, repo):
    api.script(Reply("a long answer " * 20, stall_after=6, usage={"input": 5000, "output": 300,
                                                                   "cache_write": 0, "cache_read": 0}))
    app = app_for(manager(api, tmp_path), repo)
    async with app.run_test(size=SIZE) as pilot:
        app.spawn("stream")
        await until(pilot, lambda: app.views and only_view(app).status is S.STREAMING, "streaming")
        view = only_view(app)
        await until(pilot, lambda: view.usage.input == 5000, "input tokens while streaming")
        await until(pilot, lambda: "5.0k" in text_of(app.panes[view.session_id].query_one("#pane-strip"))
                    and "5.0k" in text_of(app.screen.query_one("#totals")), "the live figure shown")
        assert view.requests == 0  # a live figure is not a finished request
        assert "5.0k" in text_of(app.screen.query_one("#totals"))
        assert "5.0k" in text_of(app.panes[view.session_id].query_one("#pane-strip"))
        api.release()
        await until(pilot, lambda: view.status is S.WAITING, "done streaming")
        assert view.requests == 1 and view.usage.output == 300
        await app.shutdown()


async def test_context_warning_then_full_then_continue_in_a_fresh_session(api, tmp_path, repo):
    big = {"input": 10, "cache_read": 82_000, "cache_write": 0, "output": 5}
    api.script(
        Reply("", [ToolUse(EDIT, {"command": "view", "path": "calc.py"})], usage=big),
        HTTPError(400, message="prompt is too long: 120000 tokens > 100000 maximum"),
        Reply("Continuing from the summary."),
    )
    app = app_for(manager(api, tmp_path, context_management="off"), repo)
    toasts: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        notify = app.notify
        app.notify = lambda message, **kw: (toasts.append(message), notify(message, **kw))[1]
        app.spawn("a long job")
        await until(pilot, lambda: app.views and only_view(app).context_level == "full", "context full")
        old = only_view(app)
        await until(pilot, lambda: old.status is S.WAITING, "waiting")
        await until(pilot, lambda: any("context full" in t for t in toasts)
                    and "full: c continues" in text_of(app.panes[old.session_id].query_one("#pane-strip")), "context full")
        assert any("82% full" in t for t in toasts) and any("context full" in t for t in toasts)
        strip = text_of(app.panes[old.session_id].query_one("#pane-strip"))
        assert "full: c continues" in strip
        assert app.screen.active_bindings["c"].enabled
        await pilot.press("c")
        await until(pilot, lambda: len(app.views) == 2, "a fresh pane")
        new = [v for v in app.views.values() if v is not old][0]
        assert new.continued_from == old.session_id
        await until(pilot, lambda: new.status is S.WAITING, "the fresh session answers")
        assert old.status is S.DONE and "continued in" in old.detail
        assert app.screen.selected is app.panes[new.session_id]
        assert new.blocks[0].kind == "note" and old.session_id in new.blocks[0].text
        await app.shutdown()


async def test_closing_a_finished_pane_with_changes_offers_merge_keep_discard(api, tmp_path, repo):
    api.script(Reply("", [ToolUse(EDIT, {"command": "create", "path": "kept.txt", "file_text": "x"})]),
               Reply("made it"), Reply("clean"))
    mgr = manager(api, tmp_path, permission_mode="acceptEdits")
    app = app_for(mgr, repo)
    async with app.run_test(size=SIZE) as pilot:
        app.spawn("make kept.txt")
        await until(pilot, lambda: app.views and only_view(app).status is S.WAITING, "waiting")
        view = only_view(app)
        await until(pilot, lambda: view.changes is not None, "changes")
        # ⌫ on a session waiting for you (how every answered session sits) did nothing at all:
        # it asks to end it first, then offers what to do with its change
        await pilot.press("backspace")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDialog), "the question")
        assert "waiting for you" in app.screen.question and "End it and close its pane?" in app.screen.question
        await pilot.press("n")
        await settled(pilot, app)
        assert view.status is S.WAITING and view.session_id in app.panes
        await pilot.press("backspace")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDialog), "the question again")
        await pilot.press("y")
        await until(pilot, lambda: isinstance(app.screen, ChoiceDialog), "merge, keep or discard")
        assert view.status is S.DONE  # it had finished: ended as done, not killed
        await pilot.press("k")  # keep the branch
        await until(pilot, lambda: view.session_id not in app.panes, "the pane is closed")
        assert view.worktree.branch in git(repo, "branch", "--list")
        assert not Path(view.worktree.path).exists()
        await until(pilot, lambda: "no sessions" in text_of(app.screen.query_one("#totals")), "no sessions")
        # a session without changes closes at once
        app.spawn("nothing to change")
        await until(pilot, lambda: len(app.views) == 1 and only_view(app).status is S.WAITING, "second waits")
        second = only_view(app)
        await pilot.press("x", "y")
        await until(pilot, lambda: second.status is S.KILLED, "killed")
        await pilot.press("backspace")
        await until(pilot, lambda: not app.views, "closed")
        # a change left for later: the pane closes, the worktree stays as it is
        api.script(Reply("", [ToolUse(EDIT, {"command": "create", "path": "later.txt", "file_text": "y"})]),
                   Reply("made later"))
        third = await killed_with_its_change(pilot, app, "make later.txt")
        await pilot.press("backspace", "l")
        await until(pilot, lambda: not app.views, "the pane is closed")
        assert (Path(third.worktree.path) / "later.txt").read_text() == "y"
        await app.shutdown()
    last = read_events(Path(view.transcript_path))[-1]
    assert isinstance(last, ev.Reviewed) and last.action == "keep"


async def test_a_pane_whose_session_its_server_no_longer_holds_closes_from_the_close_dialog(api, tmp_path, repo,
                                                                                           monkeypatch):
    """An app open while its server restarted keeps the pane of a session merged from a terminal
    meanwhile: every choice of the close dialog said "refused: no session …" and the pane stayed."""
    api.script(Reply("", [ToolUse(EDIT, {"command": "create", "path": "a.txt", "file_text": "a"})]), Reply("made a"))
    mgr = manager(api, tmp_path, permission_mode="acceptEdits")
    app = app_for(mgr, repo)
    async with app.run_test(size=SIZE) as pilot:
        view = await killed_with_its_change(pilot, app, "make a.txt")

        async def gone(session_id, action, **_):
            raise KeyError(f"no session {session_id!r} (see cockpit ls)")

        monkeypatch.setattr(mgr, "review", gone)
        await pilot.press("backspace")
        assert isinstance(app.screen, ChoiceDialog)
        await pilot.press("m")
        await until(pilot, lambda: view.session_id not in app.panes, "the pane is closed")
        assert any("no longer in the server" in str(n.message) for n in app._notifications)
        await app.shutdown()


async def test_a_resumed_session_shows_its_history_notes_and_worktree_changes(api, tmp_path, repo):
    api.script(Reply("", [ToolUse(EDIT, {"command": "create", "path": "a.txt", "file_text": "a"})]), Reply("made a"),
               Reply("resumed and ready"))
    mgr = manager(api, tmp_path, permission_mode="acceptEdits")
    app = app_for(mgr, repo, sessions_dir=tmp_path / "sessions")
    async with app.run_test(size=SIZE) as pilot:
        app.spawn("make a.txt")
        await until(pilot, lambda: app.views and only_view(app).status is S.WAITING, "waiting")
        old = only_view(app)
        await pilot.press("x", "y")
        await until(pilot, lambda: old.status is S.KILLED, "killed")
        app.resume(Path(old.transcript_path))
        await until(pilot, lambda: len(app.views) == 2, "the resumed pane")
        new = [v for v in app.views.values() if v is not old][0]
        await until(pilot, lambda: any(b.kind == "tool" for b in new.blocks), "its history")
        assert new.resumed_from == old.transcript_path
        await until(pilot, lambda: new.preseeded, "the notes its first message had")
        await until(pilot, lambda: new.changes is not None, "the worktree's changes")
        assert new.changes.files == 1 and new.worktree == old.worktree
        await app.shutdown()
