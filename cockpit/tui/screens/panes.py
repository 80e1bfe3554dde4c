"""The half of the main screen that owns the sessions' panes (a base class of ``MainScreen``).

Runtime events arrive here in the runtime's order from the app's event pump
(``cockpit.tui.messages``): ``on_runtime_snapshot`` folds what the sessions did before the app
attached; each event as it happens is queued (``queue_event``) and ``on_runtime_events`` folds
every event queued by the time it runs — one Textual message per batch, not per event (a
message costs more than folding its event: dispatch, then an idle pass). Each is folded into its
session's ``SessionView`` (cheap); a new session gets a pane; panes plus the totals bar redraw on
one 20 Hz tick (``FLUSH_HZ``; streaming text shares a budget of ``PANE_BUDGET_HZ`` pane repaints
per second, spread over the ticks by the pure ``RepaintScheduler``) — so a burst of token deltas
or usage updates costs one repaint per pane per tick. What concerns the app as a whole (telling
the user a session needs them, an approval answered elsewhere) goes to
``CockpitApp.session_event`` after the event is folded.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from textual import work
from textual.screen import Screen

from cockpit import events as ev
from cockpit import hostids
from cockpit.runtime.history import Block, fold
from cockpit.runtime.protocols import GridRuntime, TranscriptSource
from cockpit.runtime.transcript import FileTranscripts
from cockpit.textsafe import clean_event
from cockpit.tui.compositor import SplitCompositor
from cockpit.tui.messages import EVENT_BATCH, RuntimeEvents, RuntimeSnapshot
from cockpit.tui.model import SessionView, overlaps
from cockpit.tui.repaint import RepaintScheduler
from cockpit.tui.widgets import PaneGrid, SessionPane, TotalsBar

if TYPE_CHECKING:  # pragma: no cover
    from cockpit.tui.app import CockpitApp

FLUSH_HZ = 20  # flush ticks per second
PANE_MAX_HZ = 10  # at most 10 text repaints per second per pane
# Answer text is the bulk of the repaint work (a scrolling body repaints all its lines). Across
# all panes the screen repaints streaming text at most PANE_BUDGET_HZ times a second: one streaming
# pane gets 10 Hz, nine get ~4 Hz each, spread over the ticks (oldest first, at most
# ceil(PANE_BUDGET_HZ / FLUSH_HZ) panes a tick: two) so no tick — and no frame — carries all
# nine bodies, and a key waits behind at most two bodies' render. (40 Hz, one body a tick, was
# measured too: no better for keys, more CPU.)
# Status, usage and new blocks are never held back. (Holding text back for ~50 ms after a key
# press was measured too: no change in key-to-screen latency once a key's frame is drawn at once
# — see ``MainScreen._on_idle`` — so text keeps flowing while the user types.)
PANE_BUDGET_HZ = 36



class SessionPanes(Screen):
    """Sessions' views and panes, fed by runtime-event messages."""

    selected: SessionPane | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # a frame renders the regions that changed, not every pane in the box around them
        self._compositor = SplitCompositor()
        self.views: dict[str, SessionView] = {}
        self.panes: dict[str, SessionPane] = {}
        self.closed: list[SessionView] = []  # panes the user closed (their spend stays in the totals)
        self._closed_ids: set[str] = set()
        self.repaint = RepaintScheduler(FLUSH_HZ, PANE_MAX_HZ, PANE_BUDGET_HZ)
        self._shown_status: dict[str, ev.SessionStatus] = {}
        self.totals_dirty = True
        self.focus_ids: set[str] = set()  # sessions whose pane takes the focus when it is added
        self.events_seen = 0
        self._incoming: deque[ev.Event] = deque()  # live events not folded yet (queue_event)
        self._incoming_posted = False  # a RuntimeEvents message is on its way for them

    @property
    def cockpit(self) -> CockpitApp:
        """The app, typed."""
        return cast("CockpitApp", self.app)

    @property
    def grid(self) -> PaneGrid:
        return self.query_one(PaneGrid)

    def on_mount(self) -> None:
        self.set_interval(1 / FLUSH_HZ, self.flush)

    def focus_pane(self, pane: SessionPane) -> None:  # MainScreen's
        raise NotImplementedError

    def focused_pane(self) -> SessionPane | None:  # MainScreen's
        raise NotImplementedError

    # -- runtime events ------------------------------------------------------------
    async def on_runtime_snapshot(self, message: RuntimeSnapshot) -> None:
        """Every session's state folded first, its pane mounted after: the first frame after an
        attach shows each session as it is now, never the states it passed through. The snapshot
        is each session's whole history (an interrupted one's from its transcript, replayed by the
        server); a resumed one's earlier conversation is read from the transcript it came from."""
        unmounted: list[str] = []
        for event in message.events:
            await self.fold(event, live=False, mount=unmounted)
        for sid in unmounted:
            view = self.views.get(sid)
            if view is not None and sid not in self.panes:
                await self._add_pane(view)
        for event in message.events:
            if isinstance(event, ev.SessionSpawned) and event.resumed_from:
                self.load_history(event.session_id, event.resumed_from,
                                  f"(resumed from {Path(event.resumed_from).name})")

    def queue_event(self, event: ev.Event) -> None:
        """A live event, folded in order with the others queued (``on_runtime_events``): one
        message is posted for however many arrive before it is handled."""
        self._incoming.append(event)
        if not self._incoming_posted:
            self._incoming_posted = self.post_message(RuntimeEvents())

    @property
    def events_queued(self) -> int:
        """Live events handed to the screen and not folded yet."""
        return len(self._incoming)

    async def on_runtime_events(self, message: RuntimeEvents) -> None:
        """Fold the queued events, oldest first (those queued while one is folded too), at most
        ``EVENT_BATCH`` of them: a longer backlog goes on in the next message, after the loop ran
        what else waits (a key, a frame)."""
        incoming = self._incoming
        try:
            for _ in range(EVENT_BATCH):
                if not incoming:
                    break
                await self.fold(incoming.popleft())
        finally:
            self._incoming_posted = False
            if incoming:  # more than a batch (or a fold raised): the rest after what else waits
                self._incoming_posted = self.post_message(RuntimeEvents())
                await asyncio.sleep(0)

    async def fold(self, event: ev.Event, live: bool = True, mount: list[str] | None = None) -> None:
        """Fold one runtime event into its session's view; new sessions get a pane. ``live``:
        it just happened (not the attach snapshot): the app may announce it. ``mount``: a new
        session's id goes there instead, its pane mounted by the caller (after the snapshot)."""
        self.events_seen += 1
        event = clean_event(event)  # escape sequences in model or tool text never reach the terminal
        if isinstance(event, ev.HostStatus):  # a host's connection, not a session's event
            self.cockpit.host_event(event)
            return
        sid = event.session_id
        live = live and not self.cockpit.replaying(sid)  # a host's replay after a reconnect is not news
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
            view = SessionView(sid, host=self.cockpit.host_label(sid))
            self.views[sid] = view
            view.apply(event)
            if mount is not None:
                mount.append(sid)
            else:
                await self._add_pane(view)
        else:
            self.cockpit.replay_reset(view)
            view.apply(event)
        self.repaint.mark(sid, urgent=not isinstance(event, ev.TextDelta))
        if isinstance(event, (ev.WorktreeChanged, ev.Reviewed, ev.SessionDone)):
            self._update_radar()
        if not isinstance(event, ev.TextDelta):
            self.totals_dirty = True
            if live:
                if isinstance(event, ev.SessionSpawned) and event.resumed_from:
                    self.load_history(event.session_id, event.resumed_from,
                                      f"(resumed from {Path(event.resumed_from).name})")
                self.cockpit.session_event(view, before, event)

    def _update_radar(self) -> None:
        """The conflict radar: which live sessions changed the same files (panes and header warn)."""
        radar = overlaps(self.views)
        for vid, v in self.views.items():
            now = radar.get(vid, {})
            if now != v.overlap:
                v.overlap = now
                v.version += 1
                v.meta_version += 1
                self.repaint.mark(vid)
                self.totals_dirty = True

    def load_history(self, session_id: str, path: str, note: str = "") -> None:
        """Fold a resumed session's predecessor's transcript and put its output before what
        events have shown (a file of this machine, or — a session of another host in a grid — read
        from that host's server)."""
        host = hostids.host_of(session_id)
        manager = self.cockpit.manager
        source: TranscriptSource = FileTranscripts(Path(path).parent)
        if host != hostids.LOCAL and isinstance(manager, GridRuntime):
            source = manager.transcripts_of(host)
        self._load_history(session_id, path, note, source)

    @work(thread=True, group="history", name="earlier output from a transcript")
    def _load_history(self, session_id: str, path: str, note: str, source: TranscriptSource) -> None:
        try:
            skipped: list[str] = []
            earlier = fold(clean_event(e) for e in source.read(Path(path), skipped)).earlier_blocks()
            if skipped:
                note = (note + " " if note else "") + f"({len(skipped)} damaged transcript line(s) skipped)"
        except (OSError, ValueError, RuntimeError) as exc:  # RuntimeError: a host's ServerError / RemoteError
            earlier, note = [], f"(earlier output not shown: {exc})"
        self.cockpit.from_thread(self._history_loaded, session_id, earlier, note)

    def _history_loaded(self, session_id: str, earlier: list[Block], note: str) -> None:
        view = self.views.get(session_id)
        if view is None:
            return
        view.add_history(earlier, note)
        self.repaint.mark(session_id)

    # -- panes -----------------------------------------------------------------------
    def focus_when_added(self, session_id: str) -> None:
        """Select ``session_id``'s pane: now when it is there, else as soon as it is added."""
        pane = self.panes.get(session_id)
        if pane is not None:
            self.focus_pane(pane)
        else:
            self.focus_ids.add(session_id)

    async def _add_pane(self, view: SessionView) -> None:
        pane = SessionPane(view)
        self.panes[view.session_id] = pane
        await self.grid.add_pane(pane)
        self.totals_dirty = True
        if view.session_id in self.focus_ids or self.focused_pane() is None:
            self.focus_ids.discard(view.session_id)
            self.focus_pane(pane)

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
                self.cockpit.forget_session(session_id)
        self.repaint.forget(session_id)
        if pane is None:
            return
        grid = self.grid
        index = grid.panes.index(pane) if pane in grid.panes else 0
        if self.maximized is pane:
            self.minimize()
        if self.selected is pane:
            self.selected = None
        await grid.remove_pane(pane)
        if grid.panes:
            self.focus_pane(grid.panes[min(index, len(grid.panes) - 1)])
        else:
            self.refresh_bindings()
        self.totals_dirty = True

    # -- the flush tick ----------------------------------------------------------------
    def flush(self) -> None:
        """Redraw the changed panes and the totals bar (the ``FLUSH_HZ`` tick). A pane whose only
        change is more answer text waits its turn within ``PANE_BUDGET_HZ``; anything else is
        drawn now. Panes out of sight (another page, or not painted yet) stay dirty until shown."""
        if self.cockpit.shutting_down:
            return
        shown = {sid for sid, p in self.panes.items() if p.display and p.visible}
        dirty = self.repaint.due(time.monotonic(), shown)
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
                self.refresh_bindings()
        if self.totals_dirty:
            self.refresh_totals()

    def on_pane_grid_page_changed(self, _message: PaneGrid.PageChanged) -> None:
        self.totals_dirty = True  # the header says "page X/Y" (a resize changes it too)

    def refresh_totals(self) -> None:
        self.totals_dirty = False
        try:
            bar = self.query_one(TotalsBar)
            grid = self.grid
        except Exception:
            return
        bar.show(list(self.views.values()), self.cockpit.memory, grid.page, grid.pages, closed=self.closed,
                 hosts=self.cockpit.hosts_line())
