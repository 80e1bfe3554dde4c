"""The main screen: totals bar, the pane grid, the footer; the keys that act on panes. It owns
the panes: the runtime's events arrive here as messages (``cockpit.tui.screens.panes``).

The "focused" pane is the screen's ``selected`` pane (``SessionPane.set_selected``: a
highlighted title), not Textual's widget focus: Textual repaints the whole screen on every
focus change, which with nine streaming panes costs far more than redrawing the two titles
involved. Keyboard focus stays on the grid; a click on a pane selects it. A selection's frame
is drawn at once, not on Textual's next update tick (``_on_idle``).

Keys act on the selected pane: ``y`` allows its pending approval once, ``a`` for the rest of
the session (both greyed out while nothing waits), ``enter`` opens the approval dialog when it
waits for one (else the follow-up input when it waits for you), ``d`` its diff, ``c`` continues
it in a fresh session when its context is full (or past 80 %), ``backspace`` closes a finished
pane (asking what to do with a worktree that still holds changes), ``z`` zooms it to the whole
screen (Textual's maximize; ``z`` or ``escape`` again restores), ``$`` sets its spend cap in USD
(the server's when it is paused at that one: see ``cockpit.tui.screens.budget``).

Narrower than ``NARROW_LAYOUT`` columns (a phone's browser through ``cockpit web``) the screen
has the ``-narrow`` class: the list of sessions and their states on top, one pane (the selected
one), and buttons for what the selected session waits on (``widgets.narrow``); the keys are the same.

Every binding has an id, so users remap it with ``App.set_keymap`` (see ``cockpit.tui.state``).
Ids: ``spawn``, ``kill``, ``approve``, ``approve.once``, ``approve.session``, ``follow_up``,
``diff``, ``continue``, ``close``, ``zoom``, ``budget``, ``review``, ``memory``, ``warnings``, ``pane.left``/
``right``/``up``/``down``, ``pane.next``/``prev``, ``pane.1``…``pane.9``, ``page.next``/``prev``
(plus the app's ``theme`` and ``quit``).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding

from cockpit.tui import format as fmt
from cockpit.tui.screens.panes import SessionPanes
from cockpit.tui.widgets import PaneGrid, SessionPane, TotalsBar
from cockpit.tui.widgets.footer import KeyFooter
from cockpit.tui.widgets.grid import NARROW_LAYOUT
from cockpit.tui.widgets.narrow import NarrowActions, SessionList


def _jump_bindings() -> list[Binding]:
    out = [Binding("1", "jump(1)", "Pane", key_display="1-9", id="pane.1")]
    # system: the keys panel shows the one "1-9" row, not eight more
    out += [Binding(str(n), f"jump({n})", f"Pane {n}", show=False, system=True, id=f"pane.{n}")
            for n in range(2, 10)]
    return out


NARROW_FOOTER = 120  # columns


class MainScreen(SessionPanes):
    ALLOW_IN_MAXIMIZED_VIEW = "TotalsBar, NarrowActions, KeyFooter"  # a zoomed pane keeps the header and the keys
    # a phone's width: the list of sessions, one pane, the buttons (cockpit.tcss, widgets.narrow)
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW_LAYOUT, "-wide")]

    BINDINGS = [
        Binding("n", "spawn", "Spawn", id="spawn"),
        Binding("x", "kill", "Kill", id="kill"),
        # enter: the approval dialog when the pane waits for an approval, else the follow-up
        Binding("enter", "approve", "Approve…", id="approve"),
        Binding("enter", "follow_up", "Follow up", id="follow_up"),
        Binding("y", "approve_once", "Allow once", id="approve.once"),
        Binding("a", "approve_session", "Allow session", id="approve.session"),
        Binding("d", "diff", "Diff", id="diff"),
        Binding("s", "shell", "Shell", id="shell"),
        Binding("c", "continue_fresh", "Continue fresh", id="continue"),
        # the same key (and id: a [keymap] moves both) below the 80 % mark: says why not yet
        Binding("c", "continue_early", "Continue fresh", show=False, id="continue"),
        Binding("backspace", "close", "Close", id="close"),
        Binding("z", "zoom", "Zoom", id="zoom"),
        Binding("dollar_sign", "budget", "Budget", key_display="$", show=False, id="budget"),
        Binding("r", "review", "Review", id="review"),
        Binding("m", "memory", "Memory", id="memory"),
        Binding("w", "warnings", "Warnings", show=False, id="warnings"),
        Binding("left", "move(-1, 0)", "Left", show=False, id="pane.left"),
        Binding("right", "move(1, 0)", "Right", show=False, id="pane.right"),
        Binding("up", "move(0, -1)", "Up", show=False, id="pane.up"),
        Binding("down", "move(0, 1)", "Down", show=False, id="pane.down"),
        Binding("tab", "cycle(1)", "Next pane", show=False, id="pane.next"),
        Binding("shift+tab", "cycle(-1)", "Previous pane", show=False, id="pane.prev"),
        *_jump_bindings(),
        Binding("right_square_bracket", "page(1)", "Next page", id="page.next"),
        Binding("left_square_bracket", "page(-1)", "Prev page", id="page.prev"),
        Binding("pageup", "scroll_pane('page_up')", "Scroll up", show=False, id="pane.scroll_up"),
        Binding("pagedown", "scroll_pane('page_down')", "Scroll down", show=False, id="pane.scroll_down"),
        Binding("home", "scroll_pane('scroll_home')", "Top", show=False, id="pane.top"),
        Binding("end", "scroll_pane('scroll_end')", "Bottom", show=False, id="pane.bottom"),
    ]

    _draw_at_once: SessionPane | None = None  # a key's effect waiting for its frame

    async def _on_idle(self, event) -> None:
        """Draw a key's effect at once. Textual paces screen updates with a 60 Hz timer that,
        after any frame, waits one to two periods (17–33 ms) before it can draw again — while
        nine sessions stream there is a frame every few tens of ms, so a key would wait for
        that timer most of the time. When the pane a key selected is waiting to be repainted,
        this draws the frame now (what the timer would do; Textual's ``Screen._on_idle`` runs
        next and finds nothing left to draw). Falls back to the timer if Textual's internals
        differ."""
        pane = self._draw_at_once
        if pane is None:
            return
        dirty = getattr(self, "_dirty_widgets", None)
        draw = getattr(self, "_on_timer_update", None)
        if dirty is None or draw is None:
            self._draw_at_once = None
        elif pane in dirty and self.is_current and not getattr(self.app, "_batch_count", 0):
            self._draw_at_once = None
            draw()

    def compose(self) -> ComposeResult:
        yield TotalsBar(id="totals")
        yield SessionList()
        yield PaneGrid()
        yield NarrowActions()
        yield KeyFooter()

    def focused_pane(self) -> SessionPane | None:
        """The selected pane (the one keys act on), or None."""
        pane = self.selected
        return pane if pane is not None and pane.is_attached else None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Greys out keys that do nothing now (footer shows them dimmed); in a terminal narrower
        than :data:`NARROW_FOOTER` columns they leave the footer instead, so the keys that do
        something (quit among them) fit at 80 columns."""
        found = self._check_action(action)
        if found is None and self.app.size.width < NARROW_FOOTER:
            return False
        return found

    def _check_action(self, action: str) -> bool | None:
        pane = self.focused_pane()
        view = pane.view if pane is not None else None
        if action == "kill":
            return None if pane is None or pane.final else True
        if action == "approve":
            return view is not None and view.pending is not None
        if action in ("approve_once", "approve_session"):
            return None if view is None or view.pending is None else True
        if action == "follow_up":
            return None if pane is None or not pane.waiting else True
        if action in ("diff", "zoom"):
            return None if pane is None else True
        if action == "budget":
            return None if pane is None or pane.final else True
        if action == "continue_fresh":
            return view is not None and not view.status.is_final and view.context_high
        if action == "continue_early":
            return None if view is None or view.status.is_final or view.context_high else True
        if action == "close":  # (a session waiting for you is ended first, once you say so; a working one says why not)
            return None if pane is None else True
        if action == "page":
            return self.grid.pages > 1
        return True

    # -- focus -----------------------------------------------------------------------
    def focus_pane(self, pane: SessionPane) -> None:
        """Select ``pane`` (showing its page); keys act on it."""
        grid = self.grid
        page = grid.page_of(pane)
        if page != grid.page:
            grid.show_page(page, first=pane)
            self.refresh_totals()
        previous = self.selected
        if previous is not pane or not pane.selected:
            if previous is not None and previous is not pane:
                previous.set_selected(False)
            pane.set_selected(True)
            self.selected = pane
            self._draw_at_once = pane
            self.refresh_bindings()
            if self.maximized is not None and self.maximized is not pane:
                self.maximize(pane, container=False)  # zoomed: moving the selection moves the zoom
        if self.focused is not grid:
            grid.focus()

    def action_scroll_pane(self, how: str) -> None:
        pane = self.focused_pane()
        if pane is not None:
            getattr(pane, f"action_{how}")()

    def action_jump(self, number: int) -> None:
        """The pane the key ``number`` reaches: in the narrow layout (a page is one pane) the pane
        titled ``number``; else on the page shown (:func:`page_keys`)."""
        grid = self.grid
        titled = next((p for p in grid.panes if p.number == number), None) if grid.single else None
        pane = titled or page_keys(grid.page_panes()).get(number)
        if pane is not None:
            self.focus_pane(pane)

    def action_cycle(self, step: int) -> None:
        panes = self.grid.panes
        if not panes:
            return
        pane = self.focused_pane()
        index = panes.index(pane) + step if pane in panes else 0
        self.focus_pane(panes[index % len(panes)])

    def action_move(self, dx: int, dy: int) -> None:
        grid = self.grid
        panes = grid.panes
        if not panes:
            return
        pane = self.focused_pane()
        if pane not in panes:
            self.focus_pane(grid.page_panes()[0])
            return
        index = panes.index(pane)
        size = grid.page_size
        page, slot = divmod(index, size)
        cols = grid.columns
        target = index + dx + dy * cols
        page_count = len(grid.page_panes(page))
        if dy and not 0 <= slot + dy * cols < page_count:
            # off the top/bottom of a page: next/previous page, same column where possible
            target = (page + dy) * size + slot % cols
        if 0 <= target < len(panes):
            self.focus_pane(panes[target])

    def action_page(self, step: int) -> None:
        grid = self.grid
        grid.show_page(grid.page + step)
        panes = grid.page_panes()
        if panes:
            self.focus_pane(panes[0])
        self.refresh_totals()

    # -- commands delegated to the app -----------------------------------------------
    def action_spawn(self) -> None:
        self.cockpit.open_spawn()

    def action_kill(self) -> None:
        pane = self.focused_pane()
        if pane is not None and not pane.final:
            self.cockpit.confirm_kill(pane.view.session_id)

    def action_follow_up(self) -> None:
        pane = self.focused_pane()
        if pane is not None and pane.waiting:
            self.cockpit.open_follow_up(pane.view.session_id)

    def action_approve(self) -> None:
        pane = self.focused_pane()
        if pane is not None and pane.view.pending is not None:
            self.cockpit.open_approval(pane.view.session_id)

    def action_approve_once(self) -> None:
        self._answer("once")

    def action_approve_session(self) -> None:
        self._answer("session")

    def _answer(self, scope: str) -> None:
        pane = self.focused_pane()
        if pane is not None and pane.view.pending is not None:
            self.cockpit.answer(pane.view.session_id, pane.view.pending.request_id, True, scope)

    def action_diff(self) -> None:
        pane = self.focused_pane()
        if pane is not None:
            self.cockpit.open_diff(pane.view.session_id)

    def action_shell(self) -> None:
        pane = self.focused_pane()
        if pane is not None:
            self.cockpit.open_shell(pane.view.session_id)

    def action_continue_fresh(self) -> None:
        pane = self.focused_pane()
        if pane is not None:
            self.cockpit.confirm_continue(pane.view.session_id)

    def action_continue_early(self) -> None:
        pane = self.focused_pane()
        if pane is not None:
            view = pane.view
            used = (f"has used {fmt.percent(view.context_tokens, view.context_window)} of its context"
                    if view.context_window else "has no context figure yet")
            self.notify(f"Session {view.session_id} {used}: continuing in a fresh session is offered "
                        "from 80 % (the palette, ctrl+p, does it now)", timeout=8)

    def action_close(self) -> None:
        pane = self.focused_pane()
        if pane is not None and (pane.final or pane.waiting):
            self.cockpit.close_pane(pane.view.session_id)
        elif pane is not None:  # working, or asking: said, never a key that does nothing
            self.app.notify(f"session {pane.view.session_id} is {pane.view.status.value}: x kills it, then ⌫ "
                            "closes its pane", severity="warning", timeout=6)

    def action_budget(self) -> None:
        pane = self.focused_pane()
        if pane is not None and not pane.final:
            self.cockpit.open_budget(pane.view.session_id)

    def action_zoom(self) -> None:
        pane = self.focused_pane()
        if self.maximized is not None:
            self.minimize()
        elif pane is not None:
            self.maximize(pane, container=False)

    def action_review(self) -> None:
        pane = self.focused_pane()
        self.cockpit.open_review(pane.view.session_id if pane else None)

    def action_memory(self) -> None:
        self.cockpit.open_memory()

    def action_warnings(self) -> None:
        self.cockpit.open_memory(tab="warnings")


def page_keys(panes: list[SessionPane]) -> dict[int, SessionPane]:
    """The number keys of a page's panes: a pane titled 1-9 keeps its own number; the others
    (titled 10 and up: a later page, or page one after a pane was closed) take the keys no pane
    of the page is titled with, in order — so every pane shown is one key away."""
    keys = {p.number: p for p in panes if 1 <= p.number <= 9}
    free = [k for k in range(1, 10) if k not in keys]
    keys.update(zip(free, [p for p in panes if p.number not in keys], strict=False))
    return keys
