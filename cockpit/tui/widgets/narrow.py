"""The narrow layout's two widgets (a phone's browser, a terminal under ``grid.NARROW_LAYOUT``
columns): the list of sessions with their states, and a row of buttons that act on the selected
one. Both are hidden by CSS unless the main screen has the ``-narrow`` class (Textual's
``HORIZONTAL_BREAKPOINTS``); the grid then shows one pane at a time (``PaneGrid.single``).

A row of the list is the pane's number, its state (glyph, name, the state's colour) and its task;
a click or tap shows that session's pane (``MainScreen.focus_pane``), as its number key does.
The buttons are the keys of the selected session's state within reach of a thumb: while it asks
for an approval, allow once (``y``), allow for the session (``a``), deny, details (``enter``);
while it waits for you, reply (``enter``); otherwise a new session (``n``) and zoom (``z``). They
never take the keyboard focus (the grid keeps it, as on the wide screen).

Both read the panes' ``SessionView`` (folded from events, like everything on screen) a few times a
second while shown, and redraw only when what they show changed.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.widgets import Button, Static

from cockpit.tui import format as fmt

REFRESH_S = 0.25  # how often the shown list and buttons look at the views


def _main(widget: Any) -> Any:
    """The main screen (``focus_pane``, ``focused_pane``, ``grid``), or None elsewhere."""
    screen = widget.screen
    return screen if hasattr(screen, "focus_pane") and hasattr(screen, "grid") else None


class SessionRow(Static):
    """One session: ``number glyph state · task``; a click shows its pane."""

    def __init__(self) -> None:
        super().__init__(classes="session-row")
        self.pane: Any = None
        self._shown: tuple | None = None
        self._status_class = ""

    def show(self, pane: Any) -> None:
        self.pane = pane
        view = pane.view
        key = (pane.number, view.status, view.task, pane.selected, view.detail)
        if key == self._shown:
            return
        self._shown = key
        cls = fmt.status_class(view.status)
        if cls != self._status_class:
            if self._status_class:
                self.remove_class(self._status_class)
            self.add_class(cls)
            self._status_class = cls
        self.set_class(pane.selected, "-selected")
        self.update(Content.from_markup(
            "[b]$num $glyph $status[/b] [dim]·[/] $task",
            num=str(pane.number), glyph=fmt.STATUS_GLYPH[view.status], status=view.status.value,
            task=fmt.short(view.task or "…", 200),
        ))

    def on_click(self) -> None:
        main = _main(self)
        if main is not None and self.pane is not None and self.pane.is_attached:
            main.focus_pane(self.pane)


class SessionList(VerticalScroll, can_focus=False):
    """Every open session, one row each, in pane order (the narrow layout's picker)."""

    def __init__(self) -> None:
        super().__init__(id="session-list")
        self._signature: tuple | None = None

    def compose(self) -> ComposeResult:
        yield Static("[dim]no sessions: [b]n[/b] or [b]+ New[/b] starts one[/]", id="session-list-empty")

    def on_mount(self) -> None:
        self.set_interval(REFRESH_S, self.refresh_rows)

    async def refresh_rows(self) -> None:
        """Bring the rows in step with the grid's panes (only while the list is shown)."""
        main = _main(self)
        if main is None or not self.display or not main.has_class("-narrow"):
            return
        panes = [p for p in main.grid.panes if p.is_attached]
        signature = tuple((id(p), p.number, p.view.status, p.view.task, p.selected, p.view.detail) for p in panes)
        if signature == self._signature:
            return
        self._signature = signature
        rows = list(self.query(SessionRow))
        if len(rows) < len(panes):
            new = [SessionRow() for _ in range(len(panes) - len(rows))]
            await self.mount_all(new)
            rows += new
        for row in rows[len(panes):]:
            await row.remove()
        for row, pane in zip(rows, panes, strict=False):
            row.show(pane)
            if pane.selected:
                self.scroll_to_widget(row, animate=False)
        self.query_one("#session-list-empty").display = not panes


class BarButton(Button, can_focus=False):
    """A compact button that leaves the keyboard focus where it is."""

    def __init__(self, label: str, action: str, id: str) -> None:
        super().__init__(label, id=id, compact=True, classes="bar-button")
        self.act = action


# button id → (label, the main screen's action it runs, when it shows: "ask" (the session asks for an
# approval), "waiting" (it waits for you), "idle" (it does not ask: New stays on the n key meanwhile))
BUTTONS: tuple[tuple[str, str, str, str], ...] = (
    ("bar-allow", "✓ Allow y", "approve_once", "ask"),
    ("bar-session", "✓ Session a", "approve_session", "ask"),
    ("bar-deny", "✗ Deny", "deny", "ask"),
    ("bar-details", "More ⏎", "approve", "ask"),
    ("bar-reply", "↩ Reply ⏎", "follow_up", "waiting"),
    ("bar-new", "+ New n", "spawn", "idle"),
    ("bar-zoom", "⤢ z", "zoom", "idle"),
)


class NarrowActions(Horizontal):
    """The buttons for the selected session's state (the narrow layout's action row)."""

    def __init__(self) -> None:
        super().__init__(id="narrow-actions")
        self._shown: tuple | None = (False, False)  # (asks, waits): what compose shows

    def compose(self) -> ComposeResult:
        for bid, label, action, when in BUTTONS:
            button = BarButton(label, action, bid)
            button.display = when == "idle"  # nothing selected yet: nothing asks or waits
            yield button

    def on_mount(self) -> None:
        self.refresh_buttons()
        self.set_interval(REFRESH_S, self.refresh_buttons)

    def refresh_buttons(self) -> None:
        main = _main(self)
        if main is None or not main.has_class("-narrow"):
            return
        pane = main.focused_pane()
        view = pane.view if pane is not None else None
        asking = view is not None and view.pending is not None
        waiting = pane is not None and pane.waiting
        shown = (asking, waiting)
        if shown == self._shown:
            return
        self._shown = shown
        for bid, _, _, when in BUTTONS:
            self.query_one(f"#{bid}").display = {"ask": asking, "waiting": waiting, "idle": not asking}[when]

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        main = _main(self)
        button = event.button
        if main is None or not isinstance(button, BarButton):
            return
        if button.act == "deny":
            pane = main.focused_pane()
            ask = pane.view.pending if pane is not None else None
            if ask is not None:
                main.cockpit.answer(pane.view.session_id, ask.request_id, False, "once", "")
        else:
            getattr(main, f"action_{button.act}")()
        self.refresh_buttons()
