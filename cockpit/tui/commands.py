"""What the user asks of sessions, as ``CockpitApp`` methods (a mixin): spawn, kill, follow up,
answer approvals, diff and review, continue in a fresh session, set a spend cap, close a pane,
resume, quit.

Every call to the runtime goes through the ``Runtime`` protocol (``cockpit.runtime.protocols``)
in an async worker, so the UI never waits on it; a refusal (``KeyError``, ``ValueError``,
``SessionClosed``…) becomes a toast, never a crash. What a call changes comes back as events.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from textual import work
from textual.app import App, SuspendNotSupported
from textual.content import Content
from textual.worker import Worker, WorkerState

from cockpit import hostids
from cockpit.events import SessionStatus
from cockpit.runtime.protocols import GridRuntime, Runtime, SessionRef, TranscriptSource
from cockpit.runtime.spawn import SpawnSpec
from cockpit.textsafe import one_line
from cockpit.tui import format as fmt
from cockpit.tui.hosts import spawn_hosts
from cockpit.tui.model import SessionView
from cockpit.tui.screens.approval import Answer, ApprovalDialog
from cockpit.tui.screens.budget import BudgetChange, BudgetDialog
from cockpit.tui.screens.dialogs import ChoiceDialog, ConfirmDialog, FollowUpDialog, QuitDialog
from cockpit.tui.screens.diff import DiffScreen, discard_question
from cockpit.tui.screens.memory import MemoryScreen
from cockpit.tui.screens.review import ReviewScreen
from cockpit.tui.screens.spawn import SpawnChoice, SpawnDialog
from cockpit.tui.widgets.totals import MemoryState

SSH_FAILED = 255  # ssh's own failure (not the remote shell's)
S = SessionStatus
"""States of a session still doing (or about to do) its task: quitting stops them, so it asks."""


class SessionCommands(App):
    """Mixin of ``CockpitApp`` (which sets the attributes below and defines ``views``, ``panes``,
    ``main``, ``remove_pane``, ``shutdown`` and ``sessions_dir``)."""

    manager: Runtime
    engine: Any
    memory: MemoryState
    model: str | None
    top_k: int | None
    preseed: bool
    permission_mode: str | None
    worktree: bool | None
    backend: str | None
    _spawn_mode: str | None = None  # the permission mode last chosen in the spawn dialog (this app)
    workspace: str | None
    _close_when_ended: set[str]  # sessions ⌫ ended: their panes close once they have

    @property
    def views(self) -> dict[str, SessionView]:
        raise NotImplementedError

    @property
    def panes(self) -> dict[str, Any]:
        raise NotImplementedError

    @property
    def main(self) -> Any:  # the MainScreen
        raise NotImplementedError

    @property
    def shutting_down(self) -> bool:
        raise NotImplementedError

    @property
    def sessions_dir(self) -> Path:
        raise NotImplementedError

    async def remove_pane(self, session_id: str, forget: bool = True) -> None:
        raise NotImplementedError

    async def shutdown(self) -> None:
        raise NotImplementedError

    # -- spawn -----------------------------------------------------------------------
    def open_spawn(self, again: SpawnChoice | None = None, refused: str = "") -> None:
        """The spawn dialog; ``again``: what it asked for when the runtime refused the spawn, shown
        again with ``refused``, the reason — the task typed is not lost."""
        backends = tuple(self.manager.backends or ("cockpit",))
        budget = self.manager.config.max_budget_usd  # the configured cap
        hosts = spawn_hosts(self.manager, self.workspace or os.getcwd())
        if again is not None and again.host and "host" in hosts:
            hosts["host"] = again.host
        self.push_screen(
            SpawnDialog(self.engine, self.top_k, self.preseed, model=self.model or "",
                        permission_mode=self._spawn_mode or self.permission_mode,
                        worktree=self.worktree,
                        backends=backends, backend=self.backend, notes_missing=self.memory.notes_missing,
                        budget_usd=budget if isinstance(budget, (int, float)) else None,
                        sandbox=self.manager.config.sandbox is not False,
                        workspace=self.workspace or os.getcwd(), again=again, refused=refused, **hosts),
            self._spawn_chosen,
        )

    def _spawn_chosen(self, choice: SpawnChoice | None) -> None:
        if choice:
            self._spawn_mode = choice.spec.permission_mode or self._spawn_mode
            self.spawn(choice.spec, host=choice.host, again=choice)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place a failed request to the runtime is reported (every ``manager`` worker
        runs with ``exit_on_error=False``): one line naming what failed and why; the app stays."""
        worker = event.worker
        if event.state is WorkerState.ERROR and worker.group == "manager":
            self.notify(f"{worker.name} failed: {worker.error}", severity="error", timeout=10)

    @work(group="manager", name="spawn", exit_on_error=False)
    async def spawn(self, request: SpawnSpec | str, focus: bool = True, host: str | None = None,
                    again: SpawnChoice | None = None) -> None:
        """Spawn a session: ``request`` from the spawn dialog, or a task alone (the app's defaults).
        The app's own settings fill what the request leaves open (workspace, model, notes).
        ``focus``: its pane takes the focus once shown (False: it starts in the background).
        ``host``: in a grid of several hosts, the one it runs on (None: the runtime's default).
        ``again``: the dialog's choice, reopened with the reason if the runtime refuses it."""
        if isinstance(request, str):
            request = SpawnSpec(request, permission_mode=self.permission_mode, worktree=self.worktree,
                                backend=self.backend)
        # the app's workspace is a folder of this machine: the default on this machine's host only
        # (a grid's other hosts: None = that host's configured workspace)
        where = host or (self.manager.default_host if isinstance(self.manager, GridRuntime) else None)
        workspace = request.workspace or (self.workspace if where in (None, hostids.LOCAL) else None)
        spec = replace(request, workspace=workspace, model=request.model or self.model,
                       preseed=self.preseed if request.preseed is None else request.preseed,
                       top_k=request.top_k or self.top_k)
        try:
            session = await self.manager.spawn(spec, host=host)
        except Exception as exc:
            if again is None or self.shutting_down:
                raise
            self.open_spawn(again, f"the spawn was refused: {one_line(str(exc)) or type(exc).__name__}")
            return
        if focus:
            self._focus_when_shown(session)

    def _focus_when_shown(self, session: SessionRef) -> None:
        """Focus the pane of ``session`` (what spawn, resume and continue return): now when its
        pane is there, else as soon as it is added — that pane, not whichever came next."""
        self.main.focus_when_added(session.id)

    # -- kill, follow up -------------------------------------------------------------
    def confirm_kill(self, session_id: str) -> None:
        view = self.views[session_id]

        def done(yes: bool | None) -> None:
            if yes:
                self.kill(session_id)

        self.push_screen(ConfirmDialog(f"Kill session {session_id}? ({fmt.short(view.task, 50)})"), done)

    @work(group="manager", name="kill", exit_on_error=False)
    async def kill(self, session_id: str, reason: str = "") -> None:
        if reason:
            await self.manager.kill(session_id, reason)
        else:  # the runtime's own default reason (the server's: "killed by the user")
            await self.manager.kill(session_id)

    @work(group="manager", name="stop", exit_on_error=False)
    async def stop(self, session_id: str, reason: str = "") -> None:
        """End a session: done when it waits for you (its work finished), else killed."""
        await self.manager.stop(session_id, reason)

    def ended(self, view: SessionView) -> None:
        """``view``'s session ended: its pane closes now when the user asked for that (⌫ on a
        session waiting for you)."""
        if view.session_id in self._close_when_ended:
            self._close_when_ended.discard(view.session_id)
            self.close_pane(view.session_id)

    def open_follow_up(self, session_id: str) -> None:
        view = self.views[session_id]

        def done(text: str | None) -> None:
            if text:
                self.send(session_id, text)

        self.push_screen(FollowUpDialog(session_id, view.task), done)

    @work(group="manager", name="send", exit_on_error=False)
    async def send(self, session_id: str, text: str) -> None:
        """A follow-up; it shows in the pane when the session takes it (``UserMessage``)."""
        await self.manager.send(session_id, text)

    # -- approvals -------------------------------------------------------------------
    def open_approval(self, session_id: str) -> None:
        view = self.views[session_id]
        ask = view.pending
        if ask is None:
            return

        def done(answer: Answer | None) -> None:
            if answer is not None:
                self.answer(session_id, ask.request_id, answer.allow, answer.scope, answer.reason)

        self.push_screen(ApprovalDialog(session_id, view.task, ask), done)

    @work(group="manager", name="answer", exit_on_error=False)
    async def answer(self, session_id: str, request_id: str, allow: bool, scope: str = "once",
                     reason: str = "") -> None:
        try:
            await self.manager.answer(session_id, request_id, allow, scope, reason)
        except KeyError:
            self.notify("that approval was already answered (or the session ended)", severity="warning")

    # -- spend caps ------------------------------------------------------------------
    def open_budget(self, session_id: str) -> None:
        """``$``: a new USD cap for the session — or for the server, when the session is paused at
        the server's cap (the sum over every session)."""
        view = self.views[session_id]
        server = view.status is S.BUDGET_REACHED and view.budget_scope == "server"

        def done(change: BudgetChange | None) -> None:
            if change is not None:
                self.set_budget(None if change.server else session_id, change.usd)

        self.push_screen(BudgetDialog(session_id, view.task, spent_usd=view.cost_usd, cap_usd=view.budget_usd,
                                      server=server,
                                      detail=view.detail if view.status is S.BUDGET_REACHED else ""), done)

    @work(group="manager", name="budget", exit_on_error=False)
    async def set_budget(self, session_id: str | None, usd: float) -> None:
        """Set the session's cap (None: the server's); a paused session goes on when no cap is reached."""
        info = await self.manager.set_budget(session_id, usd=usd)
        who = "server budget" if session_id is None else f"budget of {session_id}"
        still = " — still reached: set a higher one" if isinstance(info, dict) and info.get("reached") else ""
        self.notify(f"{who}: {fmt.usd(usd)}{still}", severity="warning" if still else "information", timeout=6)

    # -- diff, review actions, continue ----------------------------------------------
    def open_diff(self, session_id: str) -> None:
        self.push_screen(DiffScreen(self.manager, self.views[session_id]))

    def _host_elsewhere(self, session_id: str) -> str:
        """The host of ``session_id`` when its folders are not this machine's ("" when they are)."""
        if not isinstance(self.manager, GridRuntime):
            return ""
        name = hostids.host_of(session_id)
        site = next((h for h in self.manager.hosts if h.name == name), None)
        return name if site is not None and not site.same_machine else ""

    def open_shell(self, session_id: str, edit: str | None = None, quiesced: bool = False) -> None:
        """Suspend the app and run ``$SHELL`` (or ``$EDITOR edit``) in the session's working folder
        (its worktree, or the workspace for a session in place); back to the app when it exits. On
        a host reached through ssh, the user's own ``ssh -t`` opens that shell in the folder there.
        A session of this machine still live has its shell and jobs ended first (``quiesced``:
        done): nothing of it may plant a repository in the worktree after the check below."""
        import subprocess

        from cockpit.worktrees_cli import shell_argv, shell_env

        view = self.views[session_id]
        where = view.cwd or (view.worktree.path if view.worktree else "")
        host = hostids.host_of(session_id)
        there = self.manager.shell_opener(host) if isinstance(self.manager, GridRuntime) else None
        elsewhere = self._host_elsewhere(session_id)
        if elsewhere and there is None:  # its folder is on that host; the same path here is another checkout
            local_id = hostids.split(session_id)[1]
            self.notify(f"session {session_id} works on host {elsewhere}: open its folder there with "
                        f"cockpit shell {local_id} --host {elsewhere}", severity="warning", timeout=10)
            return
        # on another host the folder is not here to look at: the events say when it went
        gone = there is not None and view.worktree is not None and bool(
            view.worktree_removed or (view.reviewed is not None and view.reviewed.ok))
        if not where or gone or (there is None and not Path(where).is_dir()):
            r = view.reviewed
            removed = view.worktree_removed
            why = ("it changed nothing, so its worktree was removed" if removed == "no changes" else
                   f"its worktree was removed ({removed})" if removed else
                   {"merge": "its change was merged", "keep": "its worktree was removed (its branch is kept)",
                    "discard": "its change was discarded"}.get(r.action, r.action) if r is not None and r.ok else
                   "its folder is gone")
            self.notify(f"session {session_id} has no folder to open a shell in: {why}", severity="warning")
            return
        if there is None and view.worktree is not None and not quiesced and not view.status.is_final:
            self._quiesce_for_shell(session_id, edit)
            return
        if there is None and view.worktree is not None:  # a worktree here: nothing planted in the way
            from cockpit.worktrees_cli import planted_warning

            try:
                why = planted_warning(where)
            except Exception as exc:  # (git gone, the folder unreadable): say so rather than open blind
                why = f"its worktree could not be checked ({exc})"
            if why:
                self.notify(f"no shell opened: {why}; or from a terminal: cockpit shell --force {session_id}",
                            severity="warning", timeout=20)
                return
        code = 0
        try:
            with self.suspend():
                if there is not None:
                    print(f"cockpit: shell on host {host} in {where} for session {session_id}; exit to come back",
                          flush=True)
                    code = there(where, edit)
                else:
                    print(f"cockpit: shell in {where} for session {session_id}; exit to come back", flush=True)
                    subprocess.call(shell_argv(edit), cwd=where, env=shell_env())
        except SuspendNotSupported:  # a browser tab (textual-serve), or a test's driver
            command = (f"cockpit shell {hostids.split(session_id)[1]} --host {host}" if there is not None
                       else f"cockpit shell {session_id}")
            self.notify(f"a shell needs a terminal of its own: there, run {command} (it opens in {where})",
                        severity="warning", timeout=10)
            return
        except Exception as exc:  # a missing shell or ssh
            self.notify(f"cannot open a shell here: {exc or type(exc).__name__}", severity="warning")
            return
        if there is not None and code == SSH_FAILED:
            self.notify(f"ssh to host {host} failed (exit {code}): try ssh to it from a terminal", severity="warning")

    @work(group="manager", name="shell", exit_on_error=False)
    async def _quiesce_for_shell(self, session_id: str, edit: str | None) -> None:
        try:
            await self.manager.quiesce(session_id)
        except ValueError as exc:  # it works: its commands may still be writing there
            self.notify(f"no shell opened: {exc}", severity="warning")
            return
        self.open_shell(session_id, edit, quiesced=True)

    def confirm_continue(self, session_id: str) -> None:
        view = self.views[session_id]
        if view.context_level == "full":
            self.continue_fresh(session_id)
            return

        def done(yes: bool | None) -> None:
            if yes:
                self.continue_fresh(session_id)

        used = fmt.percent(view.context_tokens, view.context_window)
        self.push_screen(ConfirmDialog(f"Context {used} used. Continue {session_id} in a fresh session "
                                       "with a summary? This one ends."), done)

    @work(group="manager", name="continue", exit_on_error=False)
    async def continue_fresh(self, session_id: str) -> None:
        session = await self.manager.continue_fresh(session_id)
        self._focus_when_shown(session)

    @work(group="manager", name="review", exit_on_error=False)
    async def review(self, session_id: str, action: str, close: bool = False) -> None:
        """``merge`` | ``keep`` | ``discard`` the session's worktree; ``close``: then close its pane."""
        try:
            result = await self.manager.review(session_id, action)
        except KeyError:  # its server no longer holds it (reviewed from a terminal while this app was away)
            if close:
                self.notify(f"session {session_id} is no longer in the server (its change was reviewed elsewhere, "
                            f"see cockpit worktrees): its pane is closed", severity="warning", timeout=10)
                await self.remove_pane(session_id, forget=False)
            else:
                self.notify(f"{action} refused: session {session_id} is no longer in the server "
                            f"(see cockpit worktrees)", severity="warning")
            return
        except Exception as exc:
            self.notify(f"{action} refused: {exc}", severity="warning")
            return
        self.notify(f"{action}: {result.message}", severity="information" if result.ok else "error", timeout=8)
        if result.ok and close:
            await self.remove_pane(session_id)

    @work(group="manager", name="forget", exit_on_error=False)
    async def forget_session(self, session_id: str) -> None:
        """The runtime drops a closed, finished session (it would come back on the next attach)."""
        try:
            await self.manager.forget(session_id)
        except (KeyError, ValueError):
            pass  # already gone (another app closed it), or not finished after all
        except Exception as exc:  # the server went away: the pane is closed here all the same
            self.notify(f"could not close {session_id} in the server: {exc}", severity="warning")

    # -- closing a pane --------------------------------------------------------------
    def close_pane(self, session_id: str) -> None:
        """Close a finished session's pane; a worktree still holding changes is dealt with first
        (merge / keep / discard, or open the diff), or left as it is for later (``cockpit worktrees``).
        A session waiting for you (its answer given, nothing running) is ended first, once the user
        says so; its pane closes when the end reaches the app."""
        view = self.views.get(session_id)
        if view is not None and view.status is SessionStatus.WAITING:
            def end(yes: bool | None) -> None:
                if yes:
                    self._close_when_ended.add(session_id)
                    self.stop(session_id, "closed from the app")

            self.push_screen(ConfirmDialog(
                f"Session {session_id} is waiting for you ({fmt.short(view.task, 50)}). End it and close "
                "its pane? Its conversation stays in its transcript (r: review, resume); its changes stay "
                "in its worktree until you merge, keep or discard them (asked next)."), end)
            return
        if view is None or not view.status.is_final:
            return
        if not view.has_changes:
            self.call_later(self.remove_pane, session_id)
            return
        c = view.changes
        stat = f"{c.files} file{'s' if c.files != 1 else ''} +{c.added} -{c.removed}" if c else "changes"
        branch = view.worktree.branch if view.worktree else ""
        question = Content.from_markup(
            "[b]$sid[/b] left changes in its worktree ($stat on [b]$branch[/b]).\n"
            "Merge them, keep the branch, discard them, look at the diff first, or close the pane and "
            "leave the worktree as it is (cockpit worktrees lists it)?",
            sid=session_id, stat=stat, branch=branch)

        def discard(yes: bool | None) -> None:
            if yes:
                self.review(session_id, "discard", close=True)

        def done(choice: str | None) -> None:
            if choice in ("merge", "keep"):
                self.review(session_id, choice, close=True)
            elif choice == "discard":
                self.push_screen(ConfirmDialog(discard_question(branch, view.pushed)),
                                 discard)
            elif choice == "diff":
                self.open_diff(session_id)
            elif choice == "leave":  # the server forgets it; its worktree and branch stay for later
                self.call_later(self.remove_pane, session_id)

        self.push_screen(ChoiceDialog(question, [("merge", "Merge", "m"), ("keep", "Keep", "k"),
                                                 ("discard", "Discard", "x"), ("diff", "Diff", "d"),
                                                 ("leave", "Leave", "l")]), done)

    # -- review of transcripts, resume, memory ---------------------------------------
    def open_review(self, session_id: str | None = None) -> None:
        """The review of transcripts: this machine's; from a pane of another host in a grid (with
        no pane: the grid's default host), that host's, read from its server, ``o`` resuming one there."""
        from cockpit.runtime.transcript import FileTranscripts

        grid = self.manager if isinstance(self.manager, GridRuntime) else None
        host = hostids.host_of(session_id) if session_id else (grid.default_host if grid else hostids.LOCAL)
        source: TranscriptSource = FileTranscripts(self.sessions_dir)
        if host != hostids.LOCAL and grid is not None:
            source = grid.transcripts_of(host)
        live = {hostids.split(sid)[1]: v.status.value for sid, v in self.views.items()
                if not v.status.is_final and hostids.host_of(sid) == host}
        select = hostids.split(session_id)[1] if session_id else None

        def chosen(path: Any) -> None:
            if path:
                self.resume(Path(path), host=None if host == hostids.LOCAL else host)

        self.push_screen(ReviewScreen(source, live, select=select), chosen)

    @work(group="manager", name="resume", exit_on_error=False)
    async def resume(self, path: Path, host: str | None = None) -> None:
        """Reopen a past session in a new pane (on ``host``: a grid's host whose transcript it is);
        its earlier conversation is read from ``path`` when its ``SessionSpawned``
        (``resumed_from``) arrives."""
        session = await self.manager.resume(path, host=host)
        self._focus_when_shown(session)

    def open_memory(self, tab: str = "search") -> None:
        if self.engine is None:
            self.notify("no memory engine", severity="warning")
            return
        self.push_screen(MemoryScreen(self.engine, tab=tab))

    # -- quitting --------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """``detach`` (the q key's label when attached to a server) only exists when attached;
        otherwise q falls through to ``quit``."""
        if action == "detach":
            return self.manager.outlives_app
        return True

    def action_help_quit(self) -> None:
        """ctrl+c (copy in a text box): say which key quits — or detaches, attached to a server."""
        what = "detach (the sessions go on in the server)" if self.manager.outlives_app else "quit"
        self.notify(f"Press [b]q[/b] or [b]ctrl+q[/b] to {what}", title="Do you want to quit?")

    async def action_detach(self) -> None:
        """Quit the app; the sessions go on in the server (same as ``quit`` when attached)."""
        await self.action_quit()

    async def action_quit(self) -> None:
        """Quit. Attached to a server (``manager.outlives_app``), this detaches at once: the
        sessions go on there. In-process, sessions still working are stopped, so it asks first."""
        if isinstance(self.screen, QuitDialog):
            return
        if self.manager.outlives_app:
            await self._quit()
            return
        await self.action_stop_and_quit()

    async def action_stop_and_quit(self) -> None:
        """Stop every session still working (after asking) and quit."""
        if isinstance(self.screen, QuitDialog):
            return
        working = [v for v in self.views.values() if v.status.is_working]
        if not working:
            await self._quit()
            return
        states = ", ".join(f"{n} {s.value}" for s, n in _count(working))
        dialog = QuitDialog(f"{len(working)} session{'s are' if len(working) != 1 else ' is'} still working "
                               f"({states}). Quit and stop {'them' if len(working) != 1 else 'it'}?")

        async def done(yes: bool | None) -> None:
            if yes:
                try:  # a server: stopped there before detaching (in-process: before closing)
                    await self.manager.stop_all()
                except Exception as exc:
                    self.notify(f"stopping sessions failed: {exc}", severity="error")
                await self._quit()

        self.push_screen(dialog, done)

    async def _quit(self) -> None:
        await self.shutdown()
        self.exit()


def _count(views: list) -> list[tuple[SessionStatus, int]]:
    out: dict[SessionStatus, int] = {}
    for v in views:
        out[v.status] = out.get(v.status, 0) + 1
    return [(s, out[s]) for s in SessionStatus if s in out]
