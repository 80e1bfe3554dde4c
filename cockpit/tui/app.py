"""The Cockpit Textual app: session panes fed by the runtime's typed events, and the screens.

``CockpitApp(manager, engine)`` takes both by injection (tests pass fakes or the real ones;
``cockpit`` builds the real ones in ``cockpit.tui_cli``). The manager is used only through the
``Runtime`` protocol (``cockpit.runtime.protocols``): every fact on screen arrives as an event,
and its methods are the app's only way to act — so a client of a session server can stand in
for it. On start the app subscribes, then folds ``Runtime.snapshot()`` (every session's events so
far, its output included); a session whose output the snapshot lacks (one a previous server left
interrupted) is rebuilt from its transcript file in a thread. A resumed session's earlier
conversation is read the same way from the transcript it was resumed from. The engine follows the memory API
(``start_warmup``, ``sync``, ``status``, ``watch``, ``build_preseed``, ``search``, ``lint``) and
may be ``None`` (no memory).

User commands live in ``cockpit.tui.commands`` and "which session needs you" (bell, toast, OS
notification) in ``cockpit.tui.attention``; both are mixins of the app.

Never blocking the event loop: events are folded into per-session ``SessionView``s as they
arrive (cheap), and panes plus the totals bar redraw on one 20 Hz timer (``FLUSH_HZ``; streaming
text shares a budget of ``PANE_BUDGET_HZ`` pane repaints per second, spread over the ticks) —
so a burst of token deltas or usage updates costs one repaint per pane per tick. Every engine
call runs in a thread worker; sessions run as asyncio tasks of the runtime (same loop).
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
from textual.screen import Screen

from cockpit import events as ev
from cockpit.runtime.protocols import Runtime
from cockpit.runtime.transcript import now_iso, read_transcript
from cockpit.textsafe import clean_event, clean_tree
from cockpit.tui import state as ui_state
from cockpit.tui.attention import Attention
from cockpit.tui.commands import SessionCommands
from cockpit.tui.hosts import HostsView
from cockpit.tui.model import SessionView
from cockpit.tui.notify import DesktopNotifications, Notifier
from cockpit.tui.repaint import RepaintScheduler
from cockpit.tui.screens.approval import ApprovalDialog
from cockpit.tui.screens.main import MainScreen
from cockpit.tui.themes import DEFAULT_THEME, PROJECT_THEMES, STATUS_DEFAULTS, load_themes
from cockpit.tui.widgets import PaneGrid, SessionPane, TotalsBar
from cockpit.tui.widgets.totals import MemoryState

FLUSH_HZ = 20  # flush ticks per second
PANE_MAX_HZ = 10  # at most 10 text repaints per second per pane
# Answer text is the bulk of the repaint work (a scrolling body repaints all its lines). Across
# all panes the app repaints streaming text at most PANE_BUDGET_HZ times a second: one streaming
# pane gets 10 Hz, nine get ~4 Hz each, spread over the ticks (oldest first, at most
# ceil(PANE_BUDGET_HZ / FLUSH_HZ) panes a tick: two) so no tick — and no frame — carries all
# nine bodies, and a key waits behind at most two bodies' render. (40 Hz, one body a tick, was
# measured too: no better for keys, more CPU.)
# Status, usage and new blocks are never held back. (Holding text back for ~50 ms after a key
# press was measured too: no change in key-to-screen latency once a key's frame is drawn at once
# — see ``MainScreen._on_idle`` — so text keeps flowing while the user types.)
PANE_BUDGET_HZ = 36
ENGINE_POLL_S = 1.0


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
        # attached to a server, q is "Detach" (first binding of the key wins while enabled)
        Binding("q", "detach", "Detach", id="detach"),
        Binding("q", "quit", "Quit", id="quit"),
        Binding("Q", "stop_and_quit", "Stop working & quit", show=False, id="quit.stop"),
        Binding("ctrl+t", "pick_theme", "Theme", id="theme"),
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
        self.os_notifier: Notifier | None = os_notifier or (DesktopNotifications() if notify_os else None)
        self.watch_notes = watch_notes
        self.clock = clock
        self._sessions_dir = Path(sessions_dir) if sessions_dir else None
        self.views: dict[str, SessionView] = {}
        self.panes: dict[str, SessionPane] = {}
        self.closed: list[SessionView] = []  # panes the user closed (their spend stays in the totals)
        self._closed_ids: set[str] = set()
        self._hosts_init()  # several hosts in one grid (cockpit.tui.hosts)
        # notes_missing: the notes folder's path when there is none, so no engine (the server's app)
        self.memory = MemoryState(model_state="warming" if engine is not None else "off", notes_missing=notes_missing)
        self.repaint = RepaintScheduler(FLUSH_HZ, PANE_MAX_HZ, PANE_BUDGET_HZ)
        self._shown_status: dict[str, Any] = {}
        self._gc_threshold: tuple[int, ...] | None = None
        self._totals_dirty = True
        self._focus_ids: set[str] = set()  # sessions whose pane takes the focus when it is added
        self._stop = threading.Event()
        self._shutting_down = False
        self.events_seen = 0
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
        for name, value in list(variables.items()):
            if name in STATUS_DEFAULTS and value.startswith("$"):
                variables[name] = variables.get(value[1:], "ansi_default")
        self.theme_variables = variables
        return variables

    def get_default_screen(self) -> Screen:
        return MainScreen(id="main")

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
        self.set_interval(1 / FLUSH_HZ, self.flush)
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
        """Subscribe, fold the snapshot of the sessions that exist already, then every event."""
        try:
            subscription = self.manager.subscribe()
            snapshot = list(self.manager.snapshot())  # no await in between: nothing is missed
            cutoff = now_iso()
            # every session's state folded first, its pane mounted after: the first frame after
            # an attach shows each session as it is now, never the states it passed through
            unmounted: list[str] = []
            for event in snapshot:
                await self.handle_event(event, live=False, mount=unmounted)
            for sid in unmounted:
                view = self.views.get(sid)
                if view is not None and sid not in self.panes:
                    await self._add_pane(view)
            # the snapshot replays each session's events so far (its output included); a session
            # whose output is not in it (one a previous server left interrupted) is read from its
            # transcript, and a resumed one's earlier conversation from the transcript it came from
            # (an error counts as output: a session that failed before answering must not show it twice)
            shown = (ev.TextDelta, ev.ToolCall, ev.UserMessage, ev.SessionErrorEvent)
            replayed = {e.session_id for e in snapshot if isinstance(e, shown)}
            for event in snapshot:
                if isinstance(event, ev.SessionSpawned):
                    if event.resumed_from:
                        self.load_history(event.session_id, event.resumed_from, None,
                                          f"(resumed from {Path(event.resumed_from).name})")
                    if event.session_id not in replayed:
                        self.load_history(event.session_id, event.transcript_path, cutoff, "")
            async for event in subscription:
                await self.handle_event(event)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the UI stays up; say what broke
            self.notify(f"event stream stopped: {exc}", severity="error", timeout=30)

    async def handle_event(self, event: ev.Event, live: bool = True, mount: list[str] | None = None) -> None:
        """Fold one runtime event into its session's view; new sessions get a pane. ``live``:
        it just happened (not the attach snapshot): the app may announce it. ``mount``: a new
        session's id goes there instead, its pane mounted by the caller (after the snapshot)."""
        self.events_seen += 1
        event = clean_event(event)  # escape sequences in model or tool text never reach the terminal
        if isinstance(event, ev.HostStatus):  # a host's connection, not a session's event
            self.host_event(event)
            return
        sid = event.session_id
        live = live and not self.replaying(sid)  # a host's replay after a reconnect is not news
        if sid in self._closed_ids:
            return
        if isinstance(event, ev.SessionForgotten):  # closed in another app (or this one)
            if mount is not None and sid in mount:
                mount.remove(sid)
            if sid not in self.views and event.usage is not None:  # closed before this app attached
                self.closed.append(SessionView(sid, usage=event.usage, cost_usd=event.cost_usd,
                                               status=ev.SessionStatus.DONE))
                self._closed_ids.add(sid)
                return
            await self.remove_pane(sid, forget=False)
            return
        view = self.views.get(sid)
        before = view.status if view is not None else None
        if view is None:
            view = SessionView(sid, host=self.host_label(sid))
            self.views[sid] = view
            view.apply(event)
            if mount is not None:
                mount.append(sid)
            else:
                await self._add_pane(view)
        else:
            self.replay_reset(view)
            view.apply(event)
        self.repaint.mark(sid, urgent=not isinstance(event, ev.TextDelta))
        if isinstance(event, (ev.WorktreeChanged, ev.Reviewed, ev.SessionDone)):
            self._update_radar()
        if not isinstance(event, ev.TextDelta):
            self._totals_dirty = True
            if live:
                self._after_event(view, before, event)

    def _update_radar(self) -> None:
        """The conflict radar: which live sessions changed the same files (panes and header warn)."""
        from cockpit.tui.model import overlaps

        radar = overlaps(self.views)
        for vid, v in self.views.items():
            now = radar.get(vid, {})
            if now != v.overlap:
                v.overlap = now
                v.version += 1
                v.meta_version += 1
                self.repaint.mark(vid)
                self._totals_dirty = True

    def _after_event(self, view: SessionView, before: ev.SessionStatus | None, event: ev.Event) -> None:
        if isinstance(event, ev.SessionSpawned) and event.resumed_from:
            self.load_history(event.session_id, event.resumed_from, None,
                              f"(resumed from {Path(event.resumed_from).name})")
        elif isinstance(event, ev.ApprovalResolved):
            top = self.screen
            if isinstance(top, ApprovalDialog) and top.session_id == view.session_id \
                    and top.request_id == event.request_id:
                top.dismiss(None)
                self.notify("that approval was answered elsewhere", timeout=5)
        self.react(view, before, event)

    @work(thread=True, group="history", name="earlier output from a transcript")
    def load_history(self, session_id: str, path: str, cutoff: str | None, note: str = "") -> None:
        """Read a transcript (records up to ``cutoff``, an ISO time; all when None) and put the
        session's earlier output before what events have shown."""
        try:
            skipped: list[str] = []
            records = clean_tree(read_transcript(Path(path), skipped))
            if skipped:
                note = (note + " " if note else "") + f"({len(skipped)} damaged transcript line(s) skipped)"
        except (OSError, ValueError) as exc:
            records, note = [], f"(earlier output not shown: {exc})"
        if cutoff is not None:
            records = [r for r in records if r.get("type") == "header" or str(r.get("ts", "")) <= cutoff]
        self._from_thread(self._history_loaded, session_id, records, note)

    def _history_loaded(self, session_id: str, records: list[dict], note: str) -> None:
        view = self.views.get(session_id)
        if view is None:
            return
        view.add_history(records, note)
        self.repaint.mark(session_id)

    async def _add_pane(self, view: SessionView) -> None:
        pane = SessionPane(view)
        self.panes[view.session_id] = pane
        main = self.get_screen("main") if self.is_screen_installed("main") else self.screen_stack[0]
        await main.query_one(PaneGrid).add_pane(pane)
        self._totals_dirty = True
        if isinstance(main, MainScreen) and (view.session_id in self._focus_ids or main.focused_pane() is None):
            self._focus_ids.discard(view.session_id)
            main.focus_pane(pane)

    async def remove_pane(self, session_id: str, forget: bool = True) -> None:
        """Close a session's pane (its events are ignored from now on; its spend stays in the
        totals). The next pane is selected. ``forget``: the runtime drops the finished session
        too, so it does not come back when an app attaches again, and other apps close it."""
        pane = self.panes.pop(session_id, None)
        view = self.views.pop(session_id, None)
        if view is not None:
            self.closed.append(view)
            self._closed_ids.add(session_id)
            if forget and view.status.is_final:
                self._forget(session_id)
        self.repaint.forget(session_id)
        main = self.screen_stack[0]
        if pane is None or not isinstance(main, MainScreen):
            return
        grid = main.query_one(PaneGrid)
        index = grid.panes.index(pane) if pane in grid.panes else 0
        if main.maximized is pane:
            main.minimize()
        if main.selected is pane:
            main.selected = None
        await grid.remove_pane(pane)
        if grid.panes:
            main.focus_pane(grid.panes[min(index, len(grid.panes) - 1)])
        else:
            main.refresh_bindings()
        self._totals_dirty = True

    def flush(self) -> None:
        """Redraw the changed panes and the totals bar (the ``FLUSH_HZ`` tick). A pane whose only
        change is more answer text waits its turn within ``PANE_BUDGET_HZ``; anything else is
        drawn now."""
        if self._shutting_down:
            return
        dirty = self.repaint.due(time.monotonic(), {sid for sid, p in self.panes.items() if p.display})
        if dirty:
            statuses_changed = False
            for sid in dirty:
                pane = self.panes.get(sid)
                if pane is not None and pane.is_mounted:
                    pane.sync()
                status = self.views[sid].status
                if self._shown_status.get(sid) is not status:
                    self._shown_status[sid] = status
                    statuses_changed = True
            if statuses_changed:  # kill / follow-up keys depend on states (the footer greys them)
                self.screen_stack[0].refresh_bindings()
        if self._totals_dirty:
            self.refresh_totals()

    def refresh_totals(self) -> None:
        self._totals_dirty = False
        main = self.screen_stack[0]
        try:
            bar = main.query_one(TotalsBar)
            grid = main.query_one(PaneGrid)
        except Exception:
            return
        bar.show(list(self.views.values()), self.memory, grid.page, grid.pages, closed=self.closed,
                 hosts=self.hosts_line())

    # -- memory engine (thread workers only) ---------------------------------------
    @work(thread=True, group="engine-boot", name="memory warm-up, sync and watch")
    def _engine_boot(self) -> None:
        """Warm the model (background), index the notes, then watch them (``engine.watch``
        syncs once itself, then after each batch of note changes, until ``_stop`` is set)."""
        engine = self.engine
        engine.start_warmup()
        self._from_thread(self._sync_started)
        on_sync = lambda report: self._from_thread(self._synced, report)  # noqa: E731
        try:
            if self.watch_notes:
                self._from_thread(self._set_watching, True)
                engine.watch(self._stop, on_sync=on_sync,
                             on_status=lambda state, detail: self._from_thread(self._watch_state, state, detail))
            else:
                on_sync(engine.sync())
        except Exception as exc:
            self._from_thread(self.notify, f"notes index/watch failed: {exc}", severity="error")
        finally:
            self._from_thread(self._set_watching, False)

    def _from_thread(self, fn: Any, *args: Any, **kwargs: Any) -> None:
        if self._shutting_down or not self.is_running:
            return
        try:
            self.call_from_thread(fn, *args, **kwargs)
        except RuntimeError:
            pass  # the app is closing

    def _sync_started(self) -> None:
        self.memory.syncing = True
        self._totals_dirty = True

    def _set_watching(self, on: bool) -> None:
        self.memory.watching = on
        self._totals_dirty = True

    def _watch_state(self, state: str, detail: str) -> None:
        """The watcher's state (``memory.watch``): e.g. the notes folder went missing."""
        self.memory.watch_status = detail
        self.memory.watch_problem = state == "missing"
        self._totals_dirty = True

    def _synced(self, report: Any) -> None:
        m = self.memory
        m.syncing = False
        if report is not None:
            m.last_sync = time.strftime("%H:%M:%S", self.clock())
            if getattr(report, "changed", True):  # keep showing the last real change
                m.last_change = f"+{report.added} ~{report.updated} -{report.removed}"
        self._totals_dirty = True
        self._poll_engine()

    @work(thread=True, exclusive=True, group="engine-status", name="memory status")
    def _poll_engine(self) -> None:
        try:
            status = self.engine.status()
        except Exception:
            return
        notes_dir = getattr(status, "notes_dir", None)
        missing = "" if notes_dir is None or Path(notes_dir).is_dir() else str(notes_dir)
        self._from_thread(self._engine_status, status, missing)

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
            self._totals_dirty = True

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

    _TEXTUAL_COMMANDS_REPLACED = {"Theme", "Screenshot", "Maximize", "Minimize"}

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Every key's action is also a command in the palette (ctrl+p). Textual's own Theme,
        Screenshot and Maximize commands are replaced by Cockpit's (theme picker that persists,
        a screenshot saved where we say, zoom of the selected pane)."""
        for command in super().get_system_commands(screen):
            if command.title not in self._TEXTUAL_COMMANDS_REPLACED:
                yield command
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
        if self.manager.outlives_app:
            yield SystemCommand("Detach", "Quit the app; the sessions go on in the server (q)", self.action_quit)
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
