"""The spend-cap dialog (``$`` on a pane): a new cap in USD for the selected session, or — when
the session is paused at the server's cap (the sum over every session) — for the server. Enter
sets it, Esc cancels; a value that is not a number of dollars > 0 is said in the dialog, which
stays open. Dismisses with a :class:`BudgetChange`, or None."""

from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from cockpit.runtime.budget import BudgetError, parse_usd
from cockpit.tui import format as fmt


@dataclass(frozen=True)
class BudgetChange:
    """What the dialog asks ``Runtime.set_budget`` for: ``server`` (the server's cap, else the
    session's) and the new cap in USD."""

    usd: float
    server: bool = False


class BudgetDialog(ModalScreen[BudgetChange | None]):
    """Modal: the cap, what was spent, the new cap (USD)."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="budget.cancel")]

    def __init__(self, session_id: str, task: str, *, spent_usd: float | None, cap_usd: float | None,
                 server: bool = False, detail: str = "") -> None:
        super().__init__(classes="dialog")
        self.session_id = session_id
        self.session_task = task
        self.spent_usd = spent_usd
        self.cap_usd = cap_usd
        self.server = server
        self.detail = detail

    def compose(self) -> ComposeResult:
        if self.server:
            title = Content.from_markup("[b]Server budget[/b] (all sessions together) · $sid is paused at it",
                                        sid=self.session_id)
        else:
            title = Content.from_markup("[b]Budget[/b] of $sid · $task", sid=self.session_id,
                                        task=fmt.short(self.session_task, 50))
        now = self.detail.split(" — ")[0] if self.detail else (
            f"cap {fmt.usd(self.cap_usd) if self.cap_usd is not None else 'none'} · spent {fmt.usd(self.spent_usd)}")
        with Vertical(classes="dialog-box"):
            yield Label(title)
            yield Label(Content(now), id="budget-now")
            yield Input(placeholder="new cap in USD, e.g. 5 (Enter sets it, Esc cancels)", id="budget-usd")
            yield Label("", id="budget-error")

    @on(Input.Submitted, "#budget-usd")
    def _submitted(self, event: Input.Submitted) -> None:
        try:
            usd = parse_usd(event.value, "the new cap")
        except BudgetError as exc:
            self.query_one("#budget-error", Label).update(Content.from_markup("[$error]$why[/]", why=str(exc)))
            return
        self.dismiss(BudgetChange(usd, self.server))


__all__ = ["BudgetDialog", "BudgetChange"]
