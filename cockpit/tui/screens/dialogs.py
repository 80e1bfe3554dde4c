"""Small modal dialogs: a yes/no confirmation, the follow-up input, a choice among a few
answers (closing a pane with changes), a review comment on diff lines."""

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


class QuitDialog(ConfirmDialog):
    """"Quit and stop the sessions still working?" (a second ``q`` while it shows does nothing)."""


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


class ChoiceDialog(ModalScreen[str | None]):
    """A question with a few answers: ``choices`` = (value, label, key) triples; a key or a
    button dismisses with the value, Esc with None."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="choice.cancel")]

    def __init__(self, question: str | Content, choices: list[tuple[str, str, str]]) -> None:
        super().__init__(classes="dialog")
        self.question = question
        self.choices = choices

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-box"):
            yield Label(self.question if isinstance(self.question, Content) else Content(self.question))
            with Horizontal(classes="dialog-buttons"):
                for value, label, key in self.choices:
                    yield Button(f"{label} ({key})", id=f"choice-{value}",
                                 variant="error" if value == "discard" else "default")

    def on_key(self, event) -> None:
        for value, _label, key in self.choices:
            if event.key == key:
                event.stop()
                self.dismiss(value)
                return

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss((event.button.id or "").removeprefix("choice-"))


class CommentDialog(ModalScreen[str | None]):
    """A review comment on lines of a diff: shows the quoted lines, Enter sends, Esc cancels."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="comment.cancel")]

    def __init__(self, where: str, quoted: Content) -> None:
        super().__init__(classes="dialog")
        self.where = where
        self.quoted = quoted

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog-box", id="comment-box"):
            yield Label(Content.from_markup("[b]Review comment[/b] on $where (sent to the session as a follow-up)",
                                            where=self.where))
            yield Label(self.quoted, id="comment-quote")
            yield Input(placeholder="your comment (Enter sends)", id="comment-text")

    @on(Input.Submitted, "#comment-text")
    def _submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if text:
            self.dismiss(text)
