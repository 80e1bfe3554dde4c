"""Small modal dialogs: a yes/no confirmation and the follow-up input."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label


class ConfirmDialog(ModalScreen[bool]):
    """Asks a yes/no question; ``y``/Enter on Yes → True, ``n``/Esc → False."""

    BINDINGS = [
        Binding("y", "dismiss(True)", "Yes", id="confirm.yes"),
        Binding("n,escape", "dismiss(False)", "No", id="confirm.no"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__(classes="dialog")
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-box"):
            yield Label(Content(self.question))
            with Horizontal(classes="dialog-buttons"):
                yield Button("Yes (y)", variant="error", id="yes")
                yield Button("No (n)", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class FollowUpDialog(ModalScreen[str | None]):
    """The follow-up message for a session waiting for you; Enter sends, Esc cancels."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="followup.cancel")]

    def __init__(self, session_id: str, task: str) -> None:
        super().__init__(classes="dialog")
        self.session_id = session_id
        self.session_task = task

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-box"):
            yield Label(Content.from_markup("[b]Follow-up[/b] to $sid · $task",
                                            sid=self.session_id, task=self.session_task[:60]))
            yield Input(placeholder="your reply (Enter sends)", id="followup-text")

    @on(Input.Submitted, "#followup-text")
    def _submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if text:
            self.dismiss(text)
