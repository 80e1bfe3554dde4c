"""The Cockpit Textual app: session panes fed by the runtime's typed events, and the screens.

``CockpitApp(manager, engine)`` takes both by injection (tests pass fakes or the real ones;
``cockpit`` builds the real ones in ``cockpit.tui_cli``). The manager is used only through the
``Runtime`` protocol (``cockpit.runtime.protocols``): every fact on screen arrives as an event,
and its methods are the app's only way to act — so a client of a session server can stand in
for it. On start the app's event pump subscribes, then posts ``Runtime.snapshot()`` (every
session's events so far, its output included) as a Textual message, then hands it each event
(queued, one message a batch: ``cockpit.tui.messages``) — to the main screen, which owns the
panes and folds them (``cockpit.tui.screens.panes``); what concerns the app as a whole comes back to
``session_event``. The engine follows the memory API (``start_warmup``, ``sync``, ``status``,
``watch``, ``build_preseed``, ``search``, ``lint``) and may be ``None`` (no memory).

User commands live in ``cockpit.tui.commands`` and "which session needs you" (bell, toast, OS
notification) in ``cockpit.tui.attention``; both are mixins of the app.

Never blocking the event loop: every engine call runs in a thread worker; sessions run as
asyncio tasks of the runtime (same loop), or in the server.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.notifications import SeverityLevel
from textual.screen import Screen

from cockpit import events as ev
from cockpit.runtime.protocols import Runtime
from cockpit.tui import state as ui_state
from cockpit.tui.attention import Attention
from cockpit.tui.commands import SessionCommands
from cockpit.tui.hosts import HostsView
from cockpit.tui.messages import EVENT_BATCH, RuntimeSnapshot
from cockpit.tui.model import SessionView
from cockpit.tui.notify import DesktopNotifications, Notifier
from cockpit.tui.screens.approval import ApprovalDialog
from cockpit.tui.screens.main import MainScreen
from cockpit.tui.themes import DEFAULT_THEME, PROJECT_THEMES, STATUS_DEFAULTS, load_themes, readable_on
from cockpit.tui.widgets import SessionPane
from cockpit.tui.widgets.totals import MemoryState

ENGINE_POLL_S = 1.0


DETACH_TIP = "the app quits; the sessions go on in the server"
QUIT_TIP = "sessions still working are stopped (asks first)"


class CockpitApp(SessionCommands, Attention, HostsView, App):
    """Sessions side by side. Units on screen: tokens and USD (see the widgets' docstrings).

    ``permission_mode``, ``worktree``, ``backend``: the spawn dialog's defaults (from config;
    None: the runtime's own configuration decides).
    ``notify_os``: OS notifications when a session needs you and the app is not focused;
    ``os_notifier``: a :class:`~cockpit.tui.notify.Notifier` (default: desktop-notifier).
    ``sessions_dir``: where transcripts are (the review screen; default: the per-user one).
    ``api_key_missing``: the empty grid warns that sessions will fail to authenticate.
    """

    CSS_PATH = str(Path(__file__).with_name("cockpit.tcss"))
    TITLE = "cockpit"
    BINDINGS = [
        # attached to a server, q is "Detach" (first binding of the key wins while enabled); ctrl+q
        # (Textual's quit) says the same, so the Keys panel and the footer agree
        Binding("ctrl+q", "detach", "Detach", tooltip=DETACH_TIP, show=False, priority=True, id="detach.ctrl"),
        Binding("ctrl+q", "quit", "Quit", tooltip=QUIT_TIP, show=False, priority=True, id="quit.ctrl"),
        Binding("q", "detach", "Detach", tooltip=DETACH_TIP, id="detach"),
        Binding("q", "quit", "Quit", tooltip=QUIT_TIP, id="quit"),
        Binding("Q", "stop_and_quit", "Stop working & quit", show=False, id="quit.stop"),
        Binding("ctrl+t", "pick_theme", "Theme", id="theme"),
        Binding("question_mark,f1", "toggle_keys", "Keys", show=False, key_display="?", id="keys"),
    ]

    def __init__(
        self,
        manager: Runtime | Callable[[], Awaitable[Runtime]],
        engine: Any = None,
        *,
        workspace: str | Path | None = None,
        model: str | None = None,
        top_k: int | None = None,
        preseed: bool = True,
        sessions_dir: str | Path | None = None,
        watch_notes: bool = True,
        extra_theme_dirs: Iterable[Path] = (),
        clock: Any = time.localtime,
        permission_mode: str | None = None,
        worktree: bool | None = None,
        backend: str | None = None,
        notify_os: bool = True,
        os_notifier: Notifier | None = None,
        api_key_missing: bool = False,
        notes_missing: str = "",
    ) -> None:
        super().__init__()
        # a runtime, or how to make one inside the app's loop (a SessionManager, or attaching to
        # the server): then made in on_load, before anything uses it
        self.manager: Runtime
        self._connect: Callable[[], Awaitable[Runtime]] | None = None
        if callable(manager):
            self._connect = manager
        else:
            self.manager = manager
        self.engine = engine
        self.workspace = str(workspace) if workspace is not None else None
        self.model = model
        self.top_k = top_k
        self.preseed = preseed
        self.permission_mode = permission_mode
        self.worktree = worktree
        self.backend = backend
        self.notify_os = notify_os
        self.api_key_missing = api_key_missing
        self._close_when_ended: set[str] = set()  # sessions ⌫ ended: their panes close when they have
        self.os_notifier: Notifier | None = os_notifier or (DesktopNotifications() if notify_os else None)
        self.watch_notes = watch_notes
        self.clock = clock
        self._sessions_dir = Path(sessions_dir) if sessions_dir else None
        self._main = MainScreen(id="main")  # owns the panes: sessions' events are folded there
        self._hosts_init()  # several hosts in one grid (cockpit.tui.hosts)
        # notes_missing: the notes folder's path when there is none, so no engine (the server's app)
        self.memory = MemoryState(model_state="warming" if engine is not None else "off", notes_missing=notes_missing)
        self._gc_threshold: tuple[int, ...] | None = None
        self._stop = threading.Event()
        self._shutting_down = False
        themes, self.theme_warnings = load_themes(
            PROJECT_THEMES, *extra_theme_dirs, ui_state.user_themes_dir()
        )
        for theme in themes:
            self.register_theme(theme)
        saved = ui_state.load_state().get("theme")
        fallback = DEFAULT_THEME if DEFAULT_THEME in self.available_themes else "textual-dark"
        self.theme = saved if saved in self.available_themes else fallback
        self.set_keymap(ui_state.load_keymap())

    # -- setup -----------------------------------------------------------------------
    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(STATUS_DEFAULTS)

    def get_css_variables(self) -> dict[str, str]:
        """Textual's variables plus ours; a default of ours such as ``$warning`` (``status-*``,
        ``pane-border``) is resolved to the current theme's value (Textual does not expand a
        variable inside a variable), so themes without our variables (Textual's built-ins) parse."""
        variables = super().get_css_variables()
        backgrounds = (variables.get("background", ""), variables.get("panel", ""))  # (the header's is the panel)
        for name, value in list(variables.items()):
            if name in STATUS_DEFAULTS and value.startswith("$"):
                value = variables[name] = variables.get(value[1:], "ansi_default")
                if name.startswith("status-"):  # a state's word is text: readable on the background
                    variables[name] = readable_on(value, *backgrounds)
        self.theme_variables = variables
        return variables

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = False) -> None:
        """A notification shown as the text it is, never as markup (whatever a caller or a screen
        passes): it often holds what a server or a host said — an error, a session's message — where
        an unbalanced ``[/]`` would stop the app and an ``[@click=…]`` would be a link to an action."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    def get_default_screen(self) -> Screen:
        return self._main

    # -- what the main screen owns, read by the app's commands ------------------------
    @property
    def main(self) -> MainScreen:
        """The main screen (under any dialog): the panes, and the sessions' views."""
        return self._main

    @property
    def views(self) -> dict[str, SessionView]:
        """Session id → its state, folded from events (read-only: the main screen folds)."""
        return self._main.views

    @property
    def panes(self) -> dict[str, SessionPane]:
        """Session id → its pane."""
        return self._main.panes

    @property
    def closed(self) -> list[SessionView]:
        """Sessions whose pane the user closed (their spend stays in the totals)."""
        return self._main.closed

    @property
    def events_seen(self) -> int:
        return self._main.events_seen

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    async def remove_pane(self, session_id: str, forget: bool = True) -> None:
        """Close a session's pane (``SessionPanes.remove_pane``)."""
        await self._main.remove_pane(session_id, forget)

    def refresh_totals(self) -> None:
        self._main.refresh_totals()

    def _totals_changed(self) -> None:
        self._main.totals_dirty = True

    @property
    def sessions_dir(self) -> Path:
        if self._sessions_dir is not None:
            return self._sessions_dir
        from cockpit.runtime.config import sessions_dir

        return sessions_dir()

    async def on_load(self) -> None:
        if self._connect is not None:
            try:
                self.manager = await self._connect()
            except Exception as exc:  # e.g. the server went away between the check and now
                self.exit(return_code=2, message=f"cockpit: error: {exc}")

    def on_mount(self) -> None:
        # Everything imported and built so far (Textual, anthropic, pydantic models…) lives as
        # long as the process: move it out of the collector's reach. Measured: full (gen 2)
        # collections otherwise pause the event loop up to ~200 ms while nine sessions stream.
        # Fewer collections too: rendering makes many short-lived objects per frame. Both are
        # undone on unmount (tests run many apps in one process).
        self._gc_threshold = gc.get_threshold()
        gc.freeze()
        gc.set_threshold(20_000, 50, 100)
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        for warning in self.theme_warnings:
            self.notify(warning, severity="warning")
        self.run_worker(self._pump(), group="events", name="event pump")
        if self.engine is not None:
            self.call_after_refresh(self._engine_boot)  # after the first frame: its imports wait
            self.set_interval(ENGINE_POLL_S, self._poll_engine)
        self.call_after_refresh(self._check_sandbox)

    @work(thread=True, group="sandbox-check", name="is a sandbox possible here")
    def _check_sandbox(self) -> None:
        """Said once at start: new sessions' commands will run unconfined (no sandbox possible
        here, or turned off in config / with --no-sandbox); each pane says it again."""
        cfg = self.manager.config
        if cfg.backend != "cockpit":
            return
        if cfg.sandbox is False:
            why = "the sandbox is off (--no-sandbox or [sandbox] enabled = false)"
        else:
            from cockpit.runtime.sandbox import detect

            found = detect()
            if found.backend is not None:
                return
            why = found.reason
        self.call_from_thread(self.notify, f"commands run unconfined: {why}", title="no sandbox",
                              severity="warning", timeout=12)

    def _theme_changed(self, theme: Any) -> None:
        ui_state.save_state(theme=theme.name)

    # -- events from the runtime ---------------------------------------------------
    async def _pump(self) -> None:
        """Subscribe, then post the snapshot of the sessions that exist already to the main
        screen, and queue every event after it there, in the runtime's order."""
        try:
            subscription = self.manager.subscribe()
            snapshot = tuple(self.manager.snapshot())  # no await in between: nothing is missed
            main = self._main
            main.post_message(RuntimeSnapshot(snapshot))
            queued = 0
            async for event in subscription:
                main.queue_event(event)  # folded in batches, one message a batch
                queued += 1
                if queued % EVENT_BATCH == 0:  # a backlog: keys and frames go in between
                    await asyncio.sleep(0)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the UI stays up; say what broke
            self.notify(f"event stream stopped: {exc}", severity="error", timeout=30)

    def session_event(self, view: SessionView, before: ev.SessionStatus | None, event: ev.Event) -> None:
        """What a live event (not answer text) means for the app as a whole, once the main
        screen has folded it into ``view`` (``before``: the session's status before it)."""
        if isinstance(event, ev.ApprovalResolved):
            top = self.screen
            if isinstance(top, ApprovalDialog) and top.session_id == view.session_id \
                    and top.request_id == event.request_id:
                top.dismiss(None)
                self.notify("that approval was answered elsewhere", timeout=5)
        elif isinstance(event, ev.SessionDone):
            self.close_stale_approval()
        if view.status.is_final and before is not None and not before.is_final:
            self.ended(view)
        self.react(view, before, event)

    def close_stale_approval(self) -> None:
        """The approval dialog in front asks about a session that no longer waits for it (it
        ended: killed, or interrupted by a server that went away): it closes, saying why."""
        top = self.screen
        if not isinstance(top, ApprovalDialog):
            return
        view = self.views.get(top.session_id)
        if view is None or (view.pending is None or view.pending.request_id != top.request_id) \
                and view.status.is_final:
            top.dismiss(None)
            ended = f" ({view.status.value})" if view is not None else ""
            self.notify(f"session {top.session_id} ended{ended}: its approval is void", timeout=8)

    # -- memory engine (thread workers only) ---------------------------------------
    @work(thread=True, group="engine-boot", name="memory warm-up, sync and watch")
    def _engine_boot(self) -> None:
        """Warm the model (background), index the notes, then watch them (``engine.watch``
        syncs once itself, then after each batch of note changes, until ``_stop`` is set)."""
        engine = self.engine
        engine.start_warmup()
        self.from_thread(self._sync_started)
        on_sync = lambda report: self.from_thread(self._synced, report)  # noqa: E731
        try:
            if self.watch_notes:
                self.from_thread(self._set_watching, True)
                engine.watch(self._stop, on_sync=on_sync,
                             on_status=lambda state, detail: self.from_thread(self._watch_state, state, detail))
            else:
                on_sync(engine.sync())
        except Exception as exc:
            self.from_thread(self.notify, f"notes index/watch failed: {exc}", severity="error")
        finally:
            self.from_thread(self._set_watching, False)

    def from_thread(self, fn: Any, *args: Any, **kwargs: Any) -> None:
        if self._shutting_down or not self.is_running:
            return
        try:
            self.call_from_thread(fn, *args, **kwargs)
        except RuntimeError:
            pass  # the app is closing

    def _sync_started(self) -> None:
        self.memory.syncing = True
        self._totals_changed()

    def _set_watching(self, on: bool) -> None:
        self.memory.watching = on
        self._totals_changed()

    def _watch_state(self, state: str, detail: str) -> None:
        """The watcher's state (``memory.watch``): e.g. the notes folder went missing."""
        self.memory.watch_status = detail
        self.memory.watch_problem = state == "missing"
        self._totals_changed()

    def _synced(self, report: Any) -> None:
        m = self.memory
        m.syncing = False
        if report is not None:
            m.last_sync = time.strftime("%H:%M:%S", self.clock())
            if getattr(report, "changed", True):  # keep showing the last real change
                m.last_change = f"+{report.added} ~{report.updated} -{report.removed}"
        self._totals_changed()
        self._poll_engine()

    @work(thread=True, exclusive=True, group="engine-status", name="memory status")
    def _poll_engine(self) -> None:
        try:
            status = self.engine.status()
        except Exception:
            return
        notes_dir = getattr(status, "notes_dir", None)
        missing = "" if notes_dir is None or Path(notes_dir).is_dir() else str(notes_dir)
        self.from_thread(self._engine_status, status, missing)

    def _engine_status(self, status: Any, notes_missing: str = "") -> None:
        m = self.memory
        before = (m.model_state, m.notes, m.warnings, m.last_sync, m.notes_missing, m.syncing)
        m.notes_missing = notes_missing
        if notes_missing:
            m.syncing = False  # the watcher waits for the folder: nothing is being indexed
        m.model_state = status.model_state
        m.notes = status.notes
        warnings = status.warnings
        m.warnings = len(warnings) if isinstance(warnings, (list, tuple)) else int(warnings or 0)
        if status.last_sync and not m.last_sync:
            m.last_sync = time.strftime("%H:%M:%S", self.clock(status.last_sync))
        if before != (m.model_state, m.notes, m.warnings, m.last_sync, m.notes_missing, m.syncing):
            self._totals_changed()

    def action_toggle_keys(self) -> None:
        """``?`` / F1: Textual's keys panel (every key of the focused screen, with what it does)
        beside the screen, or away again."""
        if self.screen.query("HelpPanel"):
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()

    def action_pick_theme(self) -> None:
        self.search_themes()

    async def shutdown(self) -> None:
        """Stop watching notes and close the manager (kills live sessions; transcripts stay valid)."""
        self._shutting_down = True
        self._stop.set()
        try:
            await asyncio.wait_for(self.manager.aclose(), timeout=10)
        except Exception as exc:  # still quit
            self.log.error(f"manager close failed: {exc}")

    def on_unmount(self) -> None:
        self._shutting_down = True
        self._stop.set()
        if self._gc_threshold is not None:
            gc.set_threshold(*self._gc_threshold)
            gc.unfreeze()
            self._gc_threshold = None

    def action_save_screenshot(self) -> None:
        """Save an SVG of the screen into the Downloads folder, or the data folder when there is
        none, and say where."""
        folder = screenshot_folder()
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = self.save_screenshot(path=str(folder))
        except OSError as exc:
            self.notify(f"screenshot not saved: {exc}", severity="error")
            return
        self.notify(f"screenshot saved: {path}", timeout=10)

    _TEXTUAL_COMMANDS_REPLACED = {"Theme", "Screenshot", "Maximize", "Minimize", "Quit", "Keys"}

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Every key's action is also a command in the palette (ctrl+p). Textual's own Theme,
        Screenshot, Maximize and Keys commands are replaced by Cockpit's (theme picker that
        persists, a screenshot saved where we say, zoom of the selected pane, the keys panel
        naming its key)."""
        for command in super().get_system_commands(screen):
            if command.title not in self._TEXTUAL_COMMANDS_REPLACED:
                yield command
        shown = "Hide the keys panel" if screen.query("HelpPanel") else "Every key of this screen and what it does"
        yield SystemCommand("Keys", f"{shown} (?) — f1 too", self.action_toggle_keys)
        main = self.screen_stack[0]
        if isinstance(main, MainScreen) and screen is main:
            yield SystemCommand("Spawn session", "New session: task, options, notes preview (n)", main.action_spawn)
            yield SystemCommand("Kill session", "Kill the selected session (x)", main.action_kill)
            yield SystemCommand("Approve…", "The selected session's pending approval in full (enter)",
                                main.action_approve)
            yield SystemCommand("Allow once", "Allow the selected session's pending tool use once (y)",
                                main.action_approve_once)
            yield SystemCommand("Allow for session", "Allow it, and the like, for the rest of the session (a)",
                                main.action_approve_session)
            yield SystemCommand("Follow up", "Reply to the selected session waiting for you (enter)",
                                main.action_follow_up)
            yield SystemCommand("Diff", "The selected session's changes: merge, keep, discard, comment (d)",
                                main.action_diff)
            yield SystemCommand("Shell", "A shell in the selected session's worktree; the app waits until it exits (s)",
                                main.action_shell)
            yield SystemCommand("Continue fresh", "Continue the selected session in a fresh one with a summary (c)",
                                main.action_continue_fresh)
            yield SystemCommand("Close pane", "Close the selected finished session's pane (backspace)",
                                main.action_close)
            yield SystemCommand("Zoom pane", "The selected pane fills the screen, or back (z)", main.action_zoom)
            yield SystemCommand("Budget", "Set (raise) the selected session's spend cap in USD ($)",
                                main.action_budget)
            yield SystemCommand("Review transcripts", "Live and past sessions, whole (r)", main.action_review)
            yield SystemCommand("Memory search", "Search the notes, open one (m)", main.action_memory)
            yield SystemCommand("Memory warnings", "Lint and index warnings (w)", main.action_warnings)
            yield SystemCommand("Next pane", "Select the next session pane (tab)", lambda: main.action_cycle(1))
            yield SystemCommand("Previous pane", "Select the previous pane (shift+tab)", lambda: main.action_cycle(-1))
            yield SystemCommand("Next page", "The next page of panes (])", lambda: main.action_page(1))
            yield SystemCommand("Previous page", "Back a page of panes ([)", lambda: main.action_page(-1))
        yield SystemCommand("Pick theme", "Choose a theme; the choice persists (ctrl+t)", self.action_pick_theme)
        if self.manager.outlives_app:  # one command for q: Textual's generic "Quit" is left out
            yield SystemCommand("Detach", "Quit the app; the sessions go on in the server (q)", self.action_quit)
        else:
            yield SystemCommand("Quit", "Quit; sessions still working are stopped, asking first (q)", self.action_quit)
        yield SystemCommand("Stop sessions and quit", "Stop every session still working (asks first), then quit (Q)",
                            self.action_stop_and_quit)
        yield SystemCommand("Screenshot", "Save an SVG of the screen (Downloads, else the data folder)",
                            self.action_save_screenshot)


def screenshot_folder() -> Path:
    """``~/Downloads`` (platformdirs' downloads folder) when it exists, else ``screenshots/`` in
    Cockpit's data folder (``$COCKPIT_DATA_DIR`` or the platform's user data folder)."""
    from platformdirs import user_data_path, user_downloads_path

    downloads = Path(user_downloads_path())
    if downloads.is_dir():
        return downloads
    from cockpit.runtime.config import data_dir

    root = data_dir()
    return (root if root is not None else user_data_path("cockpit")) / "screenshots"
