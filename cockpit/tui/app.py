"""The Cockpit Textual app: session panes fed by the runtime's typed events, and the screens.

``CockpitApp(manager, engine)`` takes both by injection (tests pass fakes or the real ones;
``cockpit`` builds the real ones in ``cockpit.tui_cli``). The manager follows the runtime API
of docs/ARCHITECTURE.md (``spawn``/``send``/``kill``/``resume``/``subscribe``/``sessions``/
``aclose``); the engine the memory API (``start_warmup``, ``sync``, ``status``, ``watch``,
``build_preseed``, ``search``, ``lint``) and may be ``None`` (no memory).

Never blocking the event loop: events are folded into per-session ``SessionView``s as they
arrive (cheap), and panes plus the totals bar redraw on one 20 Hz timer (``FLUSH_HZ``; streaming
text shares a budget of ``PANE_BUDGET_HZ`` pane repaints per second, spread over the ticks) —
so a burst of token deltas or usage updates costs one repaint per pane per tick. Every engine
call runs in a thread worker; sessions run as asyncio tasks of the runtime (same loop).
"""

from __future__ import annotations

import asyncio
import gc
import math
import threading
import time
from pathlib import Path
from typing import Any, Iterable

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from cockpit import events as ev
from cockpit.tui import state as ui_state
from cockpit.tui.model import SessionView
from cockpit.tui.screens.dialogs import ConfirmDialog, FollowUpDialog
from cockpit.tui.screens.main import MainScreen
from cockpit.tui.screens.memory import MemoryScreen
from cockpit.tui.screens.review import ReviewScreen
from cockpit.tui.screens.spawn import SpawnDialog
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


class CockpitApp(App):
    """Sessions side by side. Units on screen: tokens and USD (see the widgets' docstrings)."""

    CSS_PATH = str(Path(__file__).with_name("cockpit.tcss"))
    TITLE = "cockpit"
    BINDINGS = [
        Binding("q", "quit", "Quit", id="quit"),
        Binding("ctrl+t", "pick_theme", "Theme", id="theme"),
    ]

    def __init__(
        self,
        manager: Any,
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
    ) -> None:
        super().__init__()
        self.manager = manager
        self.engine = engine
        self.workspace = str(workspace) if workspace is not None else None
        self.model = model
        self.top_k = top_k
        self.preseed = preseed
        self.watch_notes = watch_notes
        self.clock = clock
        self._sessions_dir = Path(sessions_dir) if sessions_dir else None
        self.views: dict[str, SessionView] = {}
        self.panes: dict[str, SessionPane] = {}
        self.memory = MemoryState(model_state="warming" if engine is not None else "off")
        self._dirty: set[str] = set()
        self._shown_status: dict[str, Any] = {}
        self._gc_threshold: tuple[int, ...] | None = None
        self._urgent: set[str] = set()  # dirty with more than text: sync on the next tick
        self._last_sync: dict[str, float] = {}  # session id → monotonic time of its last sync
        self._totals_dirty = True
        self._focus_new = False
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
        """Textual's variables plus ours; a ``status-*`` default such as ``$warning`` is
        resolved to the current theme's value (Textual does not expand a variable inside a
        variable), so themes without our variables (Textual's built-ins) still parse."""
        variables = super().get_css_variables()
        for name, value in list(variables.items()):
            if name.startswith("status-") and value.startswith("$"):
                variables[name] = variables.get(value[1:], "ansi_default")
        self.theme_variables = variables
        return variables

    def get_default_screen(self) -> Screen:
        return MainScreen(id="main")

    @property
    def sessions_dir(self) -> Path:
        if self._sessions_dir is not None:
            return self._sessions_dir
        config = getattr(self.manager, "config", None)
        if config is not None and hasattr(config, "resolved_sessions_dir"):
            return Path(config.resolved_sessions_dir())
        from cockpit.runtime.config import sessions_dir

        return sessions_dir()

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
        for session in list(getattr(self.manager, "sessions", []) or []):
            self._adopt(session)
        self.run_worker(self._pump(), group="events", name="event pump")
        self.set_interval(1 / FLUSH_HZ, self.flush)
        if self.engine is not None:
            self._engine_boot()
            self.set_interval(ENGINE_POLL_S, self._poll_engine)

    def _theme_changed(self, theme: Any) -> None:
        ui_state.save_state(theme=theme.name)

    # -- events from the runtime ---------------------------------------------------
    async def _pump(self) -> None:
        try:
            async for event in self.manager.subscribe():
                await self.handle_event(event)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the UI stays up; say what broke
            self.notify(f"event stream stopped: {exc}", severity="error", timeout=30)

    async def handle_event(self, event: ev.Event) -> None:
        """Fold one runtime event into its session's view; new sessions get a pane."""
        self.events_seen += 1
        sid = event.session_id
        view = self.views.get(sid)
        if view is None:
            view = SessionView(sid)
            self.views[sid] = view
            view.apply(event)
            await self._add_pane(view)
        else:
            view.apply(event)
        self._dirty.add(sid)
        if not isinstance(event, ev.TextDelta):
            self._urgent.add(sid)
            self._totals_dirty = True

    def _adopt(self, session: Any) -> None:
        """A session the manager had before the app mounted (no events replayed for it)."""
        view = SessionView(
            session.id, task=getattr(session, "task", ""),
            transcript_path=str(getattr(session, "transcript_path", "") or ""),
        )
        view.status = getattr(session, "status", view.status)
        view.notes = tuple(getattr(session, "injected", ()) or ())
        view.preseeded = bool(view.notes)
        self.views[session.id] = view
        self.call_later(self._add_pane, view)

    async def _add_pane(self, view: SessionView) -> None:
        pane = SessionPane(view)
        self.panes[view.session_id] = pane
        main = self.get_screen("main") if self.is_screen_installed("main") else self.screen_stack[0]
        await main.query_one(PaneGrid).add_pane(pane)
        self._totals_dirty = True
        if isinstance(main, MainScreen) and (self._focus_new or main.focused_pane() is None):
            self._focus_new = False
            main.focus_pane(pane)

    def flush(self) -> None:
        """Redraw the changed panes and the totals bar (the ``FLUSH_HZ`` tick). A pane whose only
        change is more answer text waits its turn within ``PANE_BUDGET_HZ``; anything else is
        drawn now."""
        if self._shutting_down:
            return
        now = time.monotonic()
        dirty = set(self._urgent & self._dirty)
        text_only = [sid for sid in self._dirty if sid not in self._urgent]
        if text_only:
            interval = max(1 / PANE_MAX_HZ, len(text_only) / PANE_BUDGET_HZ) - 0.5 / FLUSH_HZ
            due = [sid for sid in text_only if now - self._last_sync.get(sid, 0.0) >= interval]
            due.sort(key=lambda sid: self._last_sync.get(sid, 0.0))
            dirty.update(due[: max(1, math.ceil(PANE_BUDGET_HZ / FLUSH_HZ))])
        if dirty:
            self._dirty -= dirty
            self._urgent -= dirty
            statuses_changed = False
            for sid in dirty:
                self._last_sync[sid] = now
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
        bar.show(list(self.views.values()), self.memory, grid.page, grid.pages)

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
        self._from_thread(self._engine_status, status)

    def _engine_status(self, status: Any) -> None:
        m = self.memory
        before = (m.model_state, m.notes, m.warnings, m.last_sync)
        m.model_state = status.model_state
        m.notes = status.notes
        warnings = status.warnings
        m.warnings = len(warnings) if isinstance(warnings, (list, tuple)) else int(warnings or 0)
        if status.last_sync and not m.last_sync:
            m.last_sync = time.strftime("%H:%M:%S", self.clock(status.last_sync))
        if before != (m.model_state, m.notes, m.warnings, m.last_sync):
            self._totals_dirty = True

    # -- commands ------------------------------------------------------------------
    def open_spawn(self) -> None:
        self.push_screen(SpawnDialog(self.engine, self.top_k, self.preseed), self._spawn_chosen)

    def _spawn_chosen(self, task: str | None) -> None:
        if task:
            self._focus_new = True
            self.spawn(task)

    @work(group="manager", name="spawn")
    async def spawn(self, task: str) -> None:
        try:
            await self.manager.spawn(
                task, workspace=self.workspace, model=self.model,
                preseed=self.preseed, top_k=self.top_k,
            )
        except Exception as exc:
            self._focus_new = False
            self.notify(f"spawn failed: {exc}", severity="error")

    def confirm_kill(self, session_id: str) -> None:
        view = self.views[session_id]

        def done(yes: bool | None) -> None:
            if yes:
                self.kill(session_id)

        self.push_screen(ConfirmDialog(f"Kill session {session_id} · {view.task[:50]}?"), done)

    @work(group="manager", name="kill")
    async def kill(self, session_id: str) -> None:
        try:
            await self.manager.kill(session_id)
        except Exception as exc:
            self.notify(f"kill failed: {exc}", severity="error")

    def open_follow_up(self, session_id: str) -> None:
        view = self.views[session_id]

        def done(text: str | None) -> None:
            if text:
                self.send(session_id, text)

        self.push_screen(FollowUpDialog(session_id, view.task), done)

    @work(group="manager", name="send")
    async def send(self, session_id: str, text: str) -> None:
        view = self.views[session_id]
        view.add_user(text)
        self._dirty.add(session_id)
        self._urgent.add(session_id)
        try:
            await self.manager.send(session_id, text)
        except Exception as exc:
            self.notify(f"send failed: {exc}", severity="error")

    def open_review(self, session_id: str | None = None) -> None:
        live = {sid: v.status.value for sid, v in self.views.items() if not v.status.is_final}
        self.push_screen(ReviewScreen(self.sessions_dir, live, select=session_id), self._resume_chosen)

    def _resume_chosen(self, path: Any) -> None:
        if path:
            self._focus_new = True
            self.resume(Path(path))

    @work(group="manager", name="resume")
    async def resume(self, path: Path) -> None:
        try:
            session = await self.manager.resume(path)
        except Exception as exc:
            self._focus_new = False
            self.notify(f"resume failed: {exc}", severity="error")
            return
        view = self.views.get(session.id)
        if view is None:  # SessionSpawned not handled yet
            view = self.views[session.id] = SessionView(session.id, task=session.task)
            await self._add_pane(view)
        view.add_history(list(getattr(session, "messages", []) or []))
        view.notes = tuple(getattr(session, "injected", ()) or ())
        view.preseed_tokens = int(getattr(session, "preseed_tokens", 0) or 0)
        view.preseed_text = getattr(session, "preseed_text", "") or ""
        view.preseeded = True
        self._dirty.add(session.id)
        self._urgent.add(session.id)

    def open_memory(self, tab: str = "search") -> None:
        if self.engine is None:
            self.notify("no memory engine", severity="warning")
            return
        self.push_screen(MemoryScreen(self.engine, tab=tab))

    def action_pick_theme(self) -> None:
        self.search_themes()

    async def action_quit(self) -> None:
        await self.shutdown()
        self.exit()

    async def shutdown(self) -> None:
        """Stop watching notes and close the manager (kills live sessions; transcripts stay valid)."""
        self._shutting_down = True
        self._stop.set()
        close = getattr(self.manager, "aclose", None)
        if close is not None:
            try:
                await asyncio.wait_for(close(), timeout=10)
            except Exception as exc:  # still quit
                self.log.error(f"manager close failed: {exc}")

    def on_unmount(self) -> None:
        self._shutting_down = True
        self._stop.set()
        if self._gc_threshold is not None:
            gc.set_threshold(*self._gc_threshold)
            gc.unfreeze()
            self._gc_threshold = None

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Every key's action is also a command in the palette (ctrl+p)."""
        yield from super().get_system_commands(screen)
        main = self.screen_stack[0]
        if isinstance(main, MainScreen) and screen is main:
            yield SystemCommand("Spawn session", "New session: task + notes preview (n)", main.action_spawn)
            yield SystemCommand("Kill session", "Kill the focused session (x)", main.action_kill)
            yield SystemCommand("Follow up", "Reply to the focused session waiting for you (enter)", main.action_follow_up)
            yield SystemCommand("Review transcripts", "Live and past sessions, whole (r)", main.action_review)
            yield SystemCommand("Memory search", "Search the notes, open one (m)", main.action_memory)
            yield SystemCommand("Memory warnings", "Lint and index warnings (w)", main.action_warnings)
            yield SystemCommand("Next pane", "Focus the next session pane (tab)", lambda: main.action_cycle(1))
            yield SystemCommand("Previous pane", "Focus the previous pane (shift+tab)", lambda: main.action_cycle(-1))
            yield SystemCommand("Next page", "Panes 10+ (])", lambda: main.action_page(1))
            yield SystemCommand("Previous page", "Back a page of panes ([)", lambda: main.action_page(-1))
        yield SystemCommand("Pick theme", "Choose a theme; the choice persists (ctrl+t)", self.action_pick_theme)
