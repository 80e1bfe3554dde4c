"""Knowing which session needs you (a ``CockpitApp`` mixin).

When a session turns ``needs approval``, ``waiting for you`` or ``budget reached`` (a spend cap:
the toast names the cap and says ``$`` raises it) and you are not looking at it —
it is not the selected pane, another screen is on top, or the app is not focused (Textual's
``AppBlur``/``AppFocus``, which terminals report with focus events) — the app rings the terminal
bell, shows a Textual notification naming the session, and, when the app is not focused, raises
an OS notification (``cockpit.tui.notify``; off with ``notify_os = false``). Sessions found
already waiting when the app attaches are not announced. Context warnings (80 %, full) are
toasts too, whoever is looking.
"""

from __future__ import annotations

from typing import Any, Literal

from textual import work
from textual.app import App

from cockpit import events as ev
from cockpit.events import SessionStatus
from cockpit.tui import format as fmt
from cockpit.tui.model import SessionView
from cockpit.tui.notify import Notifier

S = SessionStatus


class Attention(App):
    """Mixin of ``CockpitApp`` (which sets the attributes below)."""

    @property
    def panes(self) -> dict[str, Any]:  # session id → SessionPane
        raise NotImplementedError

    notify_os: bool
    os_notifier: Notifier | None

    def looking_at(self, session_id: str) -> bool:
        """The user sees this session's pane now: app focused, main screen on top, pane selected."""
        main = self.screen_stack[0]
        pane = self.panes.get(session_id)
        return bool(self.app_focus and self.screen is main and pane is not None
                    and getattr(main, "selected", None) is pane)

    def react(self, view: SessionView, before: SessionStatus | None, event: ev.Event) -> None:
        """Announce what needs the user after ``event`` was folded into ``view``."""
        status = view.status
        if status is not before and status in (S.NEEDS_APPROVAL, S.WAITING, S.BUDGET_REACHED):
            self.needs_you(view)
        elif isinstance(event, ev.ContextNotice):
            self._context_notice(view, event)

    def needs_you(self, view: SessionView) -> None:
        if self.looking_at(view.session_id):
            return
        pane = self.panes.get(view.session_id)
        number = f"{pane.number} · " if pane is not None and pane.number else ""
        who = f"{number}{view.session_id} · {fmt.short(view.task, 48)}"
        severity: Literal["information", "warning"] = "information"
        if view.status is S.NEEDS_APPROVAL:
            ask = view.pending
            what = f"needs approval: {fmt.short(ask.summary, 80)}" if ask else "needs approval"
            severity = "warning"
        elif view.status is S.BUDGET_REACHED:
            what = f"{view.detail.split(' — ')[0] or 'budget reached'} — $ raises the cap"
            severity = "warning"
        else:
            what = view.detail if view.context_level == "full" else "waiting for you"
        self.bell()
        self.notify(what, title=who, severity=severity, timeout=8)
        if not self.app_focus and self.notify_os and self.os_notifier is not None:
            self._os_notify(f"Cockpit: {who}", what)

    @work(group="os-notify", name="OS notification")
    async def _os_notify(self, title: str, message: str) -> None:
        if self.os_notifier is not None:
            await self.os_notifier.send(title, message)

    def _context_notice(self, view: SessionView, event: ev.ContextNotice) -> None:
        who = f"{view.session_id} · {fmt.short(view.task, 48)}"
        if event.level == "warn":
            self.notify(f"{event.message} — c continues in a fresh session with a summary", title=who,
                        severity="warning", timeout=10)
        elif event.level == "full":
            self.notify(f"context full — c continues in a fresh session with a summary ({event.message})",
                        title=who, severity="error", timeout=15)
        elif event.level == "managed":
            self.notify(event.message, title=who, timeout=6)
