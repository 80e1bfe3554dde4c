"""The diff screen (``d``): a session's change against its base commit, file by file, then
merge / keep / discard, and review comments that go back to the session.

Left: the files (status A/M/D/R, path, lines +/-). Right: the selected file's diff, numbered and
highlighted in the file's language with Textual's highlighter (``cockpit.tui.diffrender``), with
a line cursor. From the runtime only (``Runtime.diff`` / ``review`` / ``send``):

- ``m`` merge into the branch the session started from (fast-forward or a merge commit; a
  conflict is reported, nothing forced; asks again when protected paths changed), ``k`` keep
  the branch (worktree removed), ``x`` discard worktree and branch (asks first). The result
  shows on the screen's status line and in a toast; the pane says it too (``Reviewed`` event).
- Review comments: move the cursor (``up``/``down``), select a range (``shift+up``/``down`` or
  ``v``), press ``c``, type: the session gets a follow-up quoting the file, the line numbers
  (new file; old file for removed lines) and the lines themselves.
- ``r`` reloads (the session may still be changing files), Esc goes back.
- ``t`` runs the project's check command on the change merged onto the current base (in a
  scratch worktree, sandboxed, network off; a command from a ``test-command`` note is shown and
  confirmed once); the line under the title says running / passed / failed with the output's tail,
  and ``m`` asks again after a failed check. A merge that conflicts offers ``b`` send it back to
  the session (a follow-up naming the files: merge the base into your branch), ``s`` a shell in
  the worktree, or nothing (aborted: your checkout is untouched). ``p`` pushes the branch and
  opens a pull request (title and body shown for editing first). ``s`` opens ``$SHELL`` there
  any time (the app is suspended until it exits).
- Conflict radar: a file another live session has changed too is marked ``⚠ also <session>``.

A changed protected path (a git hook, editor or agent config: :mod:`cockpit.runtime.protected`)
is marked ``⚠ protected: <reason>`` in the file list, and a banner above says how many changed.

A session that runs in place (no worktree: not a git repository, or ``--no-worktree``) has no
diff: the screen says so and why.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Input, Label, OptionList, Static, TextArea
from textual.widgets.option_list import Option

from cockpit.runtime.protocols import Runtime
from cockpit.runtime.worktree import protected_line, protected_warning, refused_for_a_conflict
from cockpit.tui import format as fmt
from cockpit.tui.diffrender import DiffLine, parse_patch, render_diff
from cockpit.tui.model import SessionView
from cockpit.tui.screens.dialogs import CommentDialog, ConfirmDialog
from cockpit.tui.widgets.diffview import DiffView
from cockpit.tui.widgets.footer import KeyFooter
from cockpit.tui.widgets.grid import NARROW_LAYOUT
from cockpit.tui.widgets.narrow import BarButton

STATUS_STYLE = {"A": "$text-success", "D": "$text-error", "M": "$text-warning", "R": "$text-primary",
                "T": "$text-primary"}


def comment_message(path: str, lines: list[DiffLine], comment: str) -> str:
    """The follow-up a review comment becomes: file, line numbers, the quoted lines, the comment."""
    body = [ln for ln in lines if ln.kind in ("add", "del", "ctx")]
    new = [ln.new for ln in body if ln.new is not None]
    old = [ln.old for ln in body if ln.old is not None]
    if new:
        where = f"line {new[0]}" if len(set(new)) == 1 else f"lines {min(new)}-{max(new)}"
    elif old:
        where = f"removed line {old[0]}" if len(set(old)) == 1 else f"removed lines {min(old)}-{max(old)}"
        where += " (old file)"
    else:
        where = "the diff header"
    quoted = "\n".join(ln.sign + ln.text for ln in body) or "\n".join(ln.text for ln in lines)
    return (f"Review comment on {path}, {where}:\n\n```diff\n{quoted}\n```\n\n{comment}")


def merge_question(protected: list[Any], question: str = "Merge anyway?") -> str:
    """The confirmation a merge (or a push: ``question``) with changed protected paths asks: the
    warning, the paths (at most 8) with their reasons, the question."""
    listed = [f"  {f.path}  {protected_line(f)}" for f in protected[:8]]
    if len(protected) > 8:
        listed.append(f"  … and {len(protected) - 8} more")
    return "\n".join([protected_warning(len(protected)) + ":", *listed, "", question])


def discard_question(branch: str, pushed: bool) -> str:
    """The confirmation a discard asks; ``pushed``: a pull request's push went out, and that copy
    stays on the remote (with its pull request) whatever is deleted here."""
    if pushed:
        return (f"Discard {branch} and its worktree? The changes are deleted here; the branch pushed for its "
                "pull request stays on the remote, with the pull request.")
    return f"Discard {branch} and its worktree? The changes are deleted."


PUSH_QUESTION = ("A pushed branch runs them there: in CI on the forge (with the repository's secrets), in the "
                 "checkout of whoever fetches it. Push and open the pull request anyway?")


class PullRequestDialog(ModalScreen[tuple[str, str] | None]):
    """The pull request's title (an Input) and body (a TextArea), drafted, editable; ctrl+s opens
    it, Esc cancels."""

    DEFAULT_CSS = """
    PullRequestDialog { align: center middle; }
    #pr-box { width: 90%; height: 80%; border: round $primary; padding: 0 1; background: $surface; }
    #pr-body { height: 1fr; }
    """
    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel"), Binding("ctrl+s", "send", "Push & open PR")]

    def __init__(self, title: str, body: str) -> None:
        super().__init__()
        self.pr_title, self.pr_body = title, body

    def compose(self) -> ComposeResult:
        with Vertical(id="pr-box"):
            yield Label("[b]Pull request[/b] — edit, then ctrl+s pushes the branch and opens it (Esc cancels)")
            yield Input(self.pr_title, id="pr-title")
            yield TextArea(self.pr_body, id="pr-body")

    def action_send(self) -> None:
        title = self.query_one("#pr-title", Input).value.strip()
        if title:
            self.dismiss((title, self.query_one("#pr-body", TextArea).text))


# the narrow layout's buttons (a phone's browser through ``cockpit web``, where keys are out of
# reach): id → (label, the screen's action); a button for the change goes once it was merged, kept
# or discarded, as its key does
DIFF_BUTTONS: tuple[tuple[str, str, str], ...] = (
    ("diff-bar-merge", "✓ Merge m", "merge"),
    ("diff-bar-keep", "Keep k", "review('keep')"),
    ("diff-bar-discard", "✗ Discard x", "discard"),
    ("diff-bar-pr", "Pull req. p", "pull_request"),
    ("diff-bar-check", "Check t", "check"),
    ("diff-bar-send-back", "Send back b", "send_back"),
    ("diff-bar-back", "← Back esc", "back"),
)


class DiffScreen(Screen):
    DEFAULT_CSS = """
    #diff-protected { display: none; height: auto; padding: 0 1; color: $text-warning; background: $warning 15%; }
    #diff-check { display: none; height: auto; max-height: 8; padding: 0 1; }
    """
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW_LAYOUT, "-wide")]  # as the main screen's
    BINDINGS = [
        Binding("escape", "back", "Back", id="diff.back"),
        Binding("m", "merge", "Merge", id="diff.merge"),
        Binding("k", "review('keep')", "Keep branch", id="diff.keep"),
        Binding("x", "discard", "Discard", id="diff.discard"),
        Binding("c", "comment", "Comment", id="diff.comment"),
        Binding("r", "reload", "Reload", id="diff.reload"),
        Binding("t", "check", "Check", id="diff.check"),
        Binding("b", "send_back", "Send back", id="diff.send_back"),
        Binding("p", "pull_request", "Pull request", id="diff.pr"),
        Binding("s", "shell", "Shell", id="diff.shell"),
    ]

    def __init__(self, runtime: Runtime, view: SessionView) -> None:
        super().__init__(id="diff")
        self.runtime = runtime
        self.view = view
        self.session_id = view.session_id
        self.diff: Any = None  # worktree.Diff: .files (path, status, added, removed, patch)
        self.error = ""
        self.result: str | Content = ""  # the last review action's one-line result
        self.path: str | None = None  # the file shown
        self.busy = False
        self.check_state = ""  # "" (not run) | running | passed | failed | conflict | error
        self.conflicts: tuple[str, ...] = ()  # of the last merge attempt
        self.ended = False  # merged, kept or discarded here: no change left to act on

    # what needs the change: gone from the footer (and inert) once it was merged, kept or discarded
    _ON_THE_CHANGE = frozenset({"merge", "review", "discard", "comment", "reload", "check", "send_back",
                                "pull_request", "shell"})

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return not (self.ended and action in self._ON_THE_CHANGE)

    def compose(self) -> ComposeResult:
        yield Label(self._title(), id="diff-title")
        yield Static("", id="diff-protected")
        yield Static("", id="diff-check")
        with Horizontal(id="diff-main"):
            with Vertical(id="diff-left"):
                yield Label("[b]Files[/b]", id="diff-files-label")
                yield OptionList(id="diff-files")
            yield DiffView(id="diff-view")
        yield Static("", id="diff-status")
        with Grid(id="diff-actions"):
            for bid, label, action in DIFF_BUTTONS:
                yield BarButton(label, action, bid)
        yield KeyFooter()

    async def on_button_pressed(self, event: Button.Pressed) -> None:
        """A button of the narrow layout: the action its key runs (refused as the key is once the
        change was merged, kept or discarded)."""
        button = event.button
        if not isinstance(button, BarButton):
            return
        event.stop()
        name = button.act.partition("(")[0]
        if self.check_action(name, ()) is False:
            return
        await self.run_action(button.act)

    def _title(self, width: int = 0) -> Content:
        """The title line, fitted to ``width`` columns (0: unlimited): the task is shortened
        first, then "from <base> @ <commit>" goes; the branch (⎇) is always named."""
        v = self.view
        w = v.worktree
        head, branch, base = f"Diff · {v.session_id} · ", "", ""
        if w is not None:
            branch = f" · ⎇ {w.branch}"
            base = f" from {w.base_branch or 'detached HEAD'} @ {w.base_commit[:10]}"
        room = width - 2 - len(head) - len(branch)  # (the title's padding)
        if width and room - len(base) < 20:
            base = ""
        task = fmt.short(v.task, min(60, max(room - len(base), 12)) if width else 60)
        return Content.from_markup("[b]Diff[/b] · $sid · $task$branch$base", sid=v.session_id,
                                   task=task, branch=branch, base=base)

    def on_resize(self) -> None:
        self.query_one("#diff-title", Label).update(self._title(self.size.width))

    def on_mount(self) -> None:
        self.load()

    # -- loading ---------------------------------------------------------------------
    @work(exclusive=True, group="diff-load")
    async def load(self) -> None:
        self._status("[dim]reading the diff…[/]")
        try:
            diff = await self.runtime.diff(self.session_id)
        except (ValueError, KeyError) as exc:
            self.diff, self.error = None, str(exc)
            self._show_nothing(str(exc))
            return
        except Exception as exc:  # git failed: say it, stay up
            self.diff, self.error = None, f"{type(exc).__name__}: {exc}"
            self._show_nothing(self.error)
            return
        self.diff, self.error = diff, ""
        files = self.query_one("#diff-files", OptionList)
        files.clear_options()
        if not diff.files:
            self._show_nothing("no changes against the base commit yet")
            return
        files.add_options([Option(self._file_label(f)) for f in diff.files])
        self._show_protected(len(diff.protected), getattr(diff, "conflicts", ()), getattr(diff, "unresolved", ()))
        stat = diff.stat
        self.query_one("#diff-files-label", Label).update(Content.from_markup(
            "[b]Files[/b] $n  [$text-success]+$a[/] [$text-error]-$r[/]", n=stat.files, a=stat.added, r=stat.removed))
        keep = next((i for i, f in enumerate(diff.files) if f.path == self.path), 0)
        files.highlighted = keep
        self._show_file(keep)
        self.query_one(DiffView).focus()
        self._status(self.result or "[dim]m merge · k keep branch · x discard · c comment on the selected lines · "
                     "t check · p pull request · s shell[/]")

    def _file_label(self, f: Any) -> Content:
        added = "bin" if f.added is None else f"+{f.added}"
        removed = "" if f.removed is None else f"-{f.removed}"
        # a long path keeps its end (the file's name) on one or two lines of the list
        path = f.path if len(f.path) <= 90 else "…" + f.path[-89:]
        label = Content.from_markup(f"[b {STATUS_STYLE.get(f.status, '')}]$st[/] $path [$text-success]$a[/] "
                                    "[$text-error]$r[/]", st=f.status, path=path, a=added, r=removed)
        if getattr(f, "link", ""):  # a merge puts this link in the user's checkout
            label += Content.from_markup("\n  [b $text-warning]→ $to[/] (a symbolic link)", to=fmt.short(f.link, 120))
        others = self._also_touching(f.path)
        if others:
            label += Content.from_markup("\n  [b $text-warning]⚠ also $who[/]", who=", ".join(others))
        if getattr(f, "protected", ""):
            label += Content.from_markup("\n  [b $text-warning]$why[/]", why=protected_line(f))
        return label

    def _also_touching(self, path: str) -> list[str]:
        """The other live sessions that changed ``path`` too (the conflict radar)."""
        from cockpit.tui.model import overlaps

        views = getattr(self.app, "views", {}) or {}
        return overlaps(views).get(self.session_id, {}).get(path, [])

    def _show_protected(self, count: int, conflicts: tuple[str, ...] = (), unresolved: tuple[str, ...] = ()) -> None:
        """The banner above the files: how many protected paths changed, and what a merge would
        refuse now — a conflict with the base branch, conflict markers left in (hidden when none)."""
        base = (self.view.worktree.base_branch if self.view.worktree else "") or "the base"
        lines = []
        if count:
            lines.append(Content.from_markup("[b]⚠ $msg[/b]", msg=protected_warning(count)))
        if conflicts:
            lines.append(Content.from_markup("[b]⚠ conflicts with $base in $files[/b] — m would refuse; b sends it "
                                             "back to the session, s opens a shell", base=base,
                                             files=fmt.short(", ".join(conflicts), 120)))
        if unresolved:
            lines.append(Content.from_markup("[b]⚠ conflict markers left in $files[/b] — m would refuse; b sends it "
                                             "back to resolve them", files=fmt.short(", ".join(unresolved), 120)))
        banner = self.query_one("#diff-protected", Static)
        banner.update(Content("\n").join(lines) if lines else "")
        banner.display = bool(lines)

    def _show_nothing(self, why: str) -> None:
        self._show_protected(0)
        self.query_one("#diff-files", OptionList).clear_options()
        self.query_one("#diff-files-label", Label).update(Content.from_markup("[b]Files[/b]"))
        self.query_one(DiffView).set_lines([DiffLine("meta", why)], [Content.styled(why, "$text-muted")])
        self._status(Content.from_markup("[b]No diff[/b]: $why", why=why) if not self.result else self.result)

    def _show_file(self, index: int) -> None:
        if self.diff is None or not 0 <= index < len(self.diff.files):
            return
        f = self.diff.files[index]
        self.path = f.path
        lines = parse_patch(f.patch)
        if not lines:
            lines = [DiffLine("meta", "(binary or empty file: no text diff)")]
        self.query_one(DiffView).set_lines(lines, render_diff(lines, f.path))

    @on(OptionList.OptionHighlighted, "#diff-files")
    def _file_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._show_file(event.option_index)

    def _status(self, text: str | Content) -> None:
        content = text if isinstance(text, Content) else Content.from_markup(text)
        self.query_one("#diff-status", Static).update(content)

    # -- actions ---------------------------------------------------------------------
    def action_back(self) -> None:
        self.dismiss()

    def action_reload(self) -> None:
        self.load()

    @work(group="diff-merge", exclusive=True)
    async def action_merge(self) -> None:
        """Merge; when protected paths changed, only after a yes to :func:`merge_question`. Judged
        on a fresh diff (the session may have changed files since the shown one was read)."""
        if self.busy:
            return
        await self._ask_first("Merge anyway?", "Merge anyway?", lambda: self.action_review("merge"))

    async def _ask_first(self, protected_question: str, check_question: str, go: Callable[[], object]) -> None:
        """``go()`` — after a yes when protected paths changed (judged on a fresh diff: the session
        may have changed files since the shown one was read) or the last check did not pass; at
        once otherwise. The questions end in ``protected_question`` and ``check_question``."""
        protected = await self._protected_now()
        questions = [merge_question(protected, protected_question)] if protected else []
        if self.check_state in ("failed", "error", "conflict"):
            questions.append(f"The last check did not pass ({self.check_state}). {check_question}")
        if not questions:
            go()
            return

        def done(yes: bool | None) -> None:
            if yes:
                go()

        self.app.push_screen(ConfirmDialog("\n\n".join(questions)), done)

    # -- check, send back, pull request, shell ---------------------------------------
    def _show_check(self, text: str | Content) -> None:
        box = self.query_one("#diff-check", Static)
        box.update(text if isinstance(text, Content) else Content.from_markup(text))
        box.display = bool(text)

    @work(group="diff-check", exclusive=True)
    async def action_check(self, confirmed: bool = False) -> None:
        if self.check_state == "running":
            return
        self.check_state = "running"
        self._show_check("[b $text-warning]⟳ check running…[/] [dim](the change merged onto the current base, "
                         "in a scratch worktree)[/]")
        try:
            result = await self.runtime.review(self.session_id, "check-confirmed" if confirmed else "check")
        except Exception as exc:
            self.check_state = "error"
            self._show_check(Content.from_markup("[b $text-error]check could not run[/]: $why", why=str(exc)))
            return
        if result.action == "check-confirm":
            self.check_state = ""
            self._show_check("")
            command = result.message

            def done(yes: bool | None) -> None:
                if yes:
                    self.action_check(True)

            self.app.push_screen(ConfirmDialog(f"Run the check command from the project's test-command note?\n\n"
                                               f"    {command}\n\n(asked once; it runs sandboxed, network off)"),
                                 done)
            return
        first, _, tail = result.message.partition("\n")
        if result.ok:
            self.check_state = "passed"
            self._show_check(Content.from_markup("[b $text-success]✓ $line[/]", line=first))
        else:
            self.check_state = "conflict" if "conflicts" in first else ("failed" if "failed" in first else "error")
            self._show_check(Content.from_markup("[b $text-error]✗ $line[/]\n$tail", line=first,
                                                 tail="\n".join(tail.splitlines()[-6:])))

    @work(group="diff-send-back")
    async def action_send_back(self) -> None:
        try:
            result = await self.runtime.review(self.session_id, "send-back")
        except Exception as exc:
            self.notify(f"not sent back: {exc}", severity="warning")
            return
        self.notify(result.message, severity="information" if result.ok else "warning", timeout=8)
        self._status(Content.from_markup("[b]send back[/]: $msg", msg=result.message))

    @work(group="diff-pr")
    async def action_pull_request(self) -> None:
        """Draft the pull request, let the user edit it; when protected paths changed or the last
        check did not pass, ask first (as a merge does: a push is out of the sandbox too)."""
        try:
            draft = await self.runtime.draft_pull_request(self.session_id)
        except Exception as exc:
            self.notify(f"no pull request: {exc}", severity="warning")
            return
        def done(edited: tuple[str, str] | None) -> None:
            if edited:
                self.open_pr(*edited)

        await self._ask_first(PUSH_QUESTION, "Open the pull request anyway?",
                              lambda: self.app.push_screen(PullRequestDialog(draft.title, draft.body), done))

    @work(group="diff-pr")
    async def open_pr(self, title: str, body: str) -> None:
        self._status("[dim]pushing…[/]")
        try:
            result = await self.runtime.pull_request(self.session_id, title, body)
        except Exception as exc:
            self.notify(f"no pull request: {exc}", severity="error")
            return
        self.notify(result.message, severity="information" if result.ok else "error", timeout=12)
        self._status(Content.from_markup("[b]pull request[/]: $msg", msg=result.message))

    def action_shell(self) -> None:
        opener = getattr(self.app, "open_shell", None)
        if opener is not None:
            opener(self.session_id)

    async def _protected_now(self) -> list[Any]:
        """The changed protected files of the session's current diff (the shown diff's when it
        cannot be read now)."""
        try:
            diff = await self.runtime.diff(self.session_id)
        except Exception:  # the worktree is gone or git failed: the merge will say why
            diff = self.diff
        return list(getattr(diff, "protected", ()) or ())

    def action_discard(self) -> None:
        def done(yes: bool | None) -> None:
            if yes:
                self.action_review("discard")

        w = self.view.worktree
        branch = w.branch if w is not None else "its branch"
        self.app.push_screen(ConfirmDialog(discard_question(branch, self.view.pushed)), done)

    @work(group="diff-review")  # never exclusive: a second key must not cancel a merge under way
    async def action_review(self, action: str) -> None:
        if self.busy:
            return
        self.busy = True
        self._status(f"[dim]{action}…[/]")
        try:
            result = await self.runtime.review(self.session_id, action)
        except (ValueError, KeyError) as exc:
            self.result = ""
            self._status(Content.from_markup("[b $text-error]$action refused[/]: $why", action=action, why=str(exc)))
            self.notify(f"{action} refused: {exc}", severity="warning")
            return
        finally:
            self.busy = False
        mark = "[b $text-success]✓[/]" if result.ok else "[b $text-error]✗[/]"
        self.result = Content.from_markup(f"{mark} $action: $msg", action=action, msg=result.message)
        if action == "merge" and not result.ok and refused_for_a_conflict(result.message):
            self.result += Content.from_markup("  [b]b[/] send it back to the session · [b]s[/] shell in the "
                                               "worktree · or leave it (nothing was merged)")
        self.notify(f"{action}: {result.message}", severity="information" if result.ok else "error",
                    timeout=8)
        self._status(self.result)
        if result.ok:  # the worktree is gone: say what happened rather than reload "nothing to diff"
            self.diff = None
            self.ended = True
            self.refresh_bindings()
            for bid, _label, act in DIFF_BUTTONS:  # the narrow layout's buttons go as their keys do
                if act.partition("(")[0] in self._ON_THE_CHANGE:
                    self.query_one(f"#{bid}").display = False
            self._show_nothing(f"{action}: {result.message}")

    def action_comment(self) -> None:
        view = self.query_one(DiffView)
        if self.diff is None or self.path is None or not view.lines:
            self.notify("no diff lines to comment on", severity="warning")
            return
        lines = view.selected_lines()
        quoted = Content("\n").join(view.selected_contents()[:12])
        path = self.path

        def done(text: str | None) -> None:
            if text:
                self.send_comment(comment_message(path, lines, text))
                view.clear_selection()

        where = comment_message(path, lines, "").split(":\n", 1)[0].removeprefix("Review comment on ")
        self.app.push_screen(CommentDialog(where, quoted), done)

    @work(group="diff-comment")
    async def send_comment(self, text: str) -> None:
        try:
            await self.runtime.send(self.session_id, text)
        except Exception as exc:  # the session ended, or it is unknown: say so
            self.notify(f"comment not sent: {exc}", severity="error")
            return
        self.notify("comment sent to the session as a follow-up")
