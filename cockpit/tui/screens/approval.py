"""The approval dialog: one pending ask in full (the command, or the edit's whole diff, scrollable)
and the three answers: allow once, allow for this session (the rule it adds is named on its own
line above the buttons, so the three fit 80 columns), deny —
with a reason that goes back to the model as the tool result.

Keys while the detail has the focus: ``y`` allow once, ``a`` allow for the session, ``d`` puts
the cursor in the reason box; ``enter`` there denies with what was typed. Esc closes without
answering (the session keeps waiting). Dismisses with an :class:`Answer` or ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from cockpit.events import ApprovalRequested
from cockpit.tui import format as fmt
from cockpit.tui.widgets.approval import ask_title, detail_lines


@dataclass(frozen=True)
class Answer:
    """``allow``; ``scope`` once | session; ``reason`` (a denial's, for the model)."""

    allow: bool
    scope: str = "once"
    reason: str = ""


class ApprovalDialog(ModalScreen[Answer | None]):
    BINDINGS = [
        Binding("y", "allow('once')", "Allow once", id="approval.once"),
        Binding("a", "allow('session')", "Allow for session", id="approval.session"),
        Binding("d", "reason", "Deny…", id="approval.deny"),
        Binding("escape", "dismiss(None)", "Close", id="approval.close"),
    ]

    def __init__(self, session_id: str, task: str, ask: ApprovalRequested) -> None:
        super().__init__(classes="dialog")
        self.session_id = session_id
        self.session_task = task
        self.ask = ask

    @property
    def request_id(self) -> str:
        return self.ask.request_id

    def compose(self) -> ComposeResult:
        ask = self.ask
        with Vertical(classes="dialog-box", id="approval-box"):
            yield Label(Content.from_markup("[b]Approval[/b] · session $sid · $task", sid=self.session_id,
                                            task=fmt.short(self.session_task, 60)))
            yield Label(ask_title(ask), id="approval-title")
            with VerticalScroll(id="approval-detail"):
                yield Static(Content("\n").join(detail_lines(ask)), id="approval-text")
            yield Label(Content.from_markup("[dim]Reason for a denial — press d, then type (the model reads it); "
                                            "y and a answer at once:[/]"), id="approval-reason-label")
            yield Input(placeholder="a reason for a denial (d, then type; Enter denies): e.g. run the tests first",
                        id="approval-reason")
            if ask.suggestion:  # on its own line, wrapped: inside a button it pushed Deny off a narrow screen
                yield Label(Content.from_markup("[dim]Allow for session adds the rule:[/] $rule", rule=ask.suggestion),
                            id="approval-rule")
            with Horizontal(classes="dialog-buttons"):
                yield Button(self.LABELS["once"], variant="success", id="once")
                yield Button(self.LABELS["session"], variant="primary", id="session")
                yield Button(self.LABELS["deny"], variant="error", id="deny")

    def on_mount(self) -> None:
        self.query_one("#approval-detail").focus()
        self.call_after_refresh(self._fit)

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit)

    SMALL = 32  # rows below which the buttons and the reason box go compact (one row each)
    NARROW = 76  # columns below which the buttons' labels are short
    LABELS = {"once": "Allow once (y)", "session": "Allow for session (a)", "deny": "Deny (d)"}
    SHORT = {"once": "Once (y)", "session": "Session (a)", "deny": "Deny (d)"}

    def _fit(self) -> None:
        """The detail scrolls in the rows the rest of the box leaves on the screen (3 to 30): the
        reason box and the buttons always show — compact (one row each), without the reason's
        label, on a small screen (squeezed, the buttons lost their labels)."""
        small = self.size.height < self.SMALL
        for widget in (*self.query(Button), self.query_one("#approval-reason", Input)):
            if widget.compact != small:
                widget.compact = small
        narrow = self.size.width < self.NARROW  # the three buttons in one row: short labels
        for button in self.query(Button):
            label = (self.SHORT if narrow else self.LABELS)[button.id or ""]
            if str(button.label) != label:
                button.label = label
        self.query_one("#approval-reason-label").display = not small
        box = self.query_one("#approval-box")
        detail = self.query_one("#approval-detail")
        rest = box.outer_size.height - box.size.height  # the box's border and padding
        for child in box.children:
            if child is detail or not child.display or child.id == "approval-reason-label" and small:
                continue
            # the reason box and the buttons: their height as they are about to be (laid out later)
            rows = (1 if small else 3) if child.id == "approval-reason" or isinstance(child, Horizontal) \
                else child.outer_size.height
            rest += rows + child.styles.margin.top + child.styles.margin.bottom
        room = max(3, min(30, int(self.size.height * 0.9) - rest))  # (the detail's border included)
        if detail.styles.max_height is None or detail.styles.max_height.value != room:
            detail.styles.max_height = room

    def action_allow(self, scope: str) -> None:
        self.dismiss(Answer(True, scope))

    def action_reason(self) -> None:
        self.query_one("#approval-reason", Input).focus()

    def deny(self) -> None:
        reason = self.query_one("#approval-reason", Input).value.strip()
        self.dismiss(Answer(False, "once", reason))

    @on(Input.Submitted, "#approval-reason")
    def _submitted(self, event: Input.Submitted) -> None:
        self.deny()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "deny":
            self.deny()
        elif event.button.id in ("once", "session"):
            self.dismiss(Answer(True, event.button.id))
