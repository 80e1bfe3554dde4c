"""One session pane: title (number, host — in a grid of several —, id, task), coloured status
line (its host reconnecting, state, detail, model, permission mode, where it runs), the
streamed answer as Markdown with tool calls shown compactly,
the side strip (notes given, changes, tokens, USD, context), and — while the session needs
approval — the ask with its keys at the bottom of the pane.

The pane never reacts to events directly: the app folds events into the pane's
``SessionView`` and calls ``sync()`` on its flush tick (answer text at most 10 Hz), which
redraws only what changed: title, status line and strip only when the session's state/usage
changed, the body (``PaneBody``) only the blocks that grew. The body follows the end while text
streams in, until the user scrolls up (scrollback: pageup/pagedown/home/end or the mouse).

A pane narrower than ``NARROW`` columns hides its strip and puts tokens and cost on the status
line, so the answer keeps the width (a 60-column terminal). Panes may be maximized (``z``).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.color import Color
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.css.query import NoMatches
from textual.geometry import Region
from textual.widgets import Static

from cockpit import hostids
from cockpit.events import SessionStatus
from cockpit.tui import format as fmt
from cockpit.tui.model import SessionView
from cockpit.tui.widgets.approval import panel_content
from cockpit.tui.widgets.body import PaneBody
from cockpit.tui.widgets.strip import strip_content

NARROW = 64  # columns: below this the side strip is hidden


class SessionPane(Vertical):
    """A session's pane; ``view`` is the state it renders. Selected by the main screen
    (``set_selected``), not focused: see ``screens.main``.

    The selection shows as a highlighted title (title colour ``$background`` on ``$accent``), set
    as the pane's *inline* border-title styles rather than by a CSS class: a class change
    restyles the pane and every widget in it, and Textual then repaints all of them (the body's
    every visible line) — measured as most of a key press's cost while nine sessions stream.
    An inline style change repaints the pane's frame only."""

    _SELECTED_RULES = ("border_title_color", "border_title_background", "border_subtitle_color")
    ALLOW_MAXIMIZE = True

    def __init__(self, view: SessionView) -> None:
        # no widget id from the session id: ids are for CSS, and a session id is data
        super().__init__(classes="session-pane")
        self.view = view
        self.number = 0  # its number in the grid (1-based, kept while it is open; set by PaneGrid.add_pane)
        self._synced = -1
        self._meta_synced = -1
        self._title: tuple[str, str, str, str] | None = None
        self._status_class = ""
        self._approval_key: tuple | None = None
        self.narrow = False
        self.selected = False

    def compose(self) -> ComposeResult:
        yield Static(id="pane-status")
        with Horizontal(id="pane-main"):
            yield PaneBody(id="pane-body")
            yield Static(id="pane-strip")
        yield Static(id="pane-approval")

    def on_mount(self) -> None:
        self.query_one("#pane-approval").display = False
        # not now: during its Mount handler a widget is not ``is_mounted`` yet, and ``sync`` would
        # skip it (the last pane an attach mounts was left blank: no later resize redrew it)
        self.call_after_refresh(self.sync, True)

    def on_resize(self) -> None:
        narrow = 0 < self.size.width < NARROW
        if narrow != self.narrow:
            self.narrow = narrow
            self.query_one("#pane-strip").display = not narrow
            self.sync(force=True)
        elif self.view.pending is not None:
            self._sync_approval(self.view)

    def on_click(self) -> None:
        select = getattr(self.screen, "focus_pane", None)
        if select is not None:
            select(self)

    def set_selected(self, selected: bool) -> None:
        """Highlight the title (or not). Keeps the ``-selected`` class for queries, without a
        restyle (no CSS rule uses it)."""
        if selected == self.selected:
            return
        self.selected = selected
        if selected:
            self.add_class("-selected", update=False)
        else:
            self.remove_class("-selected", update=False)
        self._selected_style()

    def _selected_style(self) -> None:
        styles = self.styles
        if self.selected:
            variables = self.app.theme_variables
            try:
                background = Color.parse(variables["background"])
                accent = Color.parse(variables["accent"])
            except (KeyError, ValueError):
                return
            values = (background, accent, accent)
            changed = [styles.set_rule(rule, v) for rule, v in zip(self._SELECTED_RULES, values, strict=True)]
        else:
            changed = [styles.clear_rule(rule) for rule in self._SELECTED_RULES]
        if any(changed) and self.is_mounted:
            # the title's colours only: repaint the top border row, not the whole pane
            ox, oy = self.content_offset
            self.refresh(Region(-ox, -oy, self.outer_size.width, 1))

    def notify_style_update(self) -> None:
        super().notify_style_update()
        if self.selected:  # a theme change: the highlight's colours
            self._selected_style()

    # -- rendering -------------------------------------------------------------------
    def _update_title(self) -> None:
        view = self.view
        number = f"{self.number} " if self.number else ""
        task = fmt.short(view.task or "…", 80)
        # in a grid of several hosts the title names the host, then the id on that host
        host = f"{view.host} · " if view.host else ""
        sid = hostids.split(view.session_id)[1] if view.host else view.session_id
        key = (number, host, sid, task)  # (Content compares plain text only)
        if key == self._title:
            return
        self._title = key
        self.border_title = Content.from_markup(
            "[b]$num$host$sid[/b] · $task", num=number, host=host, sid=sid, task=task
        )

    def sync(self, force: bool = False) -> None:
        """Redraw what changed since the last call (title, status, strip, body)."""
        view = self.view
        if not force and view.version == self._synced:
            return
        if not self.is_mounted or not self.children:
            return  # not composed yet (or being removed): on_mount syncs
        try:
            if force or view.meta_version != self._meta_synced:
                self._sync_meta(view)
                self._meta_synced = view.meta_version
            self._body().show(view.blocks, view.epoch)
        except NoMatches:  # closed meanwhile (a deferred first sync after its removal began): nothing to draw
            return
        self._synced = view.version

    def _sync_meta(self, view: SessionView) -> None:
        """Title, status line and strip (skipped while only answer text changes)."""
        self._update_title()
        status = self.query_one("#pane-status", Static)
        cls = fmt.status_class(view.status)
        if cls != self._status_class:
            if self._status_class:
                status.remove_class(self._status_class)
                self.remove_class(self._status_class)
            status.add_class(cls)
            self.add_class(cls)
            self._status_class = cls
        detail = f" · {fmt.short(view.detail, 100)}" if view.detail else ""  # the status is one line
        facts = [view.model]
        if view.backend and view.backend != "cockpit":
            facts.append(view.backend)
        where = (f"worktree removed ({view.worktree_removed})" if view.worktree_removed
                 else fmt.where(view.placement, view.worktree.branch if view.worktree else None))
        facts += [view.permission_mode, where]
        about = "   " + " · ".join(f for f in facts if f)
        usage = ""
        if self.narrow:
            usage = f" · {fmt.tokens(view.usage.total)} tok {fmt.usd(view.cost_usd)}"
            if view.context_window:
                usage += f" · ctx {fmt.percent(view.context_tokens, view.context_window)}"
        # where its commands run: "sandboxed", or "unconfined" in the warning colour (a session of
        # another backend without a sandbox of its own says nothing)
        # before the facts: a narrow pane cuts the end of the line, never this
        box = "" if not (view.sandbox or view.sandbox_note) else (
            " [dim]· sandboxed[/]" if view.sandbox else " [dim]·[/] [b $warning]unconfined[/]")
        # its host's connection dropped: said first, in the warning colour (the state shown is the
        # last one known; the session goes on there)
        link = "[b $warning]⟳ host $link[/] · " if view.link else ""
        status.update(
            Content.from_markup(
                link + "[b]$glyph $status[/b]" + box + "$detail$usage[dim]$about[/]", link=view.link,
                glyph=fmt.STATUS_GLYPH[view.status], status=view.status.value,
                detail=detail, usage=usage, about=about,
            ),
            layout=False,  # fixed size: no layout pass
        )
        if not self.narrow:
            self.query_one("#pane-strip", Static).update(strip_content(view), layout=False)
        self._sync_approval(view)

    def _sync_approval(self, view: SessionView) -> None:
        """Show the pending ask at the bottom of the pane (or hide the panel)."""
        panel = self.query_one("#pane-approval", Static)
        ask = view.pending
        if ask is None:
            if self._approval_key is not None:
                self._approval_key = None
                panel.display = False
            return
        height = self.size.height or 20
        max_lines = max(1, height // 2 - 4)
        # the panel's room: at most 70 % of the pane (the stylesheet's max-height) less its top
        # border, its width less its padding — so the keys line is never what a small pane cuts
        rows, width = max(2, int(height * 0.7) - 1), max(10, (self.size.width or 80) - 2)
        key = (ask.request_id, max_lines, rows, width)
        if key == self._approval_key:
            return
        self._approval_key = key
        panel.update(panel_content(ask, max_lines, self._keys(), width=width, rows=rows))
        panel.display = True

    def _keys(self) -> dict[str, str]:
        """Action → key shown, from the screen's active bindings (so a remapped key shows as
        mapped); Cockpit's default keys for those not active right now."""
        out: dict[str, str] = {}
        defaults = {"approve_once": "y", "approve_session": "a", "approve": "⏎"}
        try:
            for active in self.screen.active_bindings.values():
                action = active.binding.action
                if action not in out:
                    out[action] = self.app.get_key_display(active.binding)
        except Exception:
            pass
        return {**defaults, **out}

    # -- scrolling -------------------------------------------------------------------
    def _body(self) -> PaneBody:
        return self.query_one("#pane-body", PaneBody)

    def action_page_up(self) -> None:
        self._body().scroll_page_up()

    def action_page_down(self) -> None:
        self._body().scroll_page_down()

    def action_scroll_home(self) -> None:
        self._body().scroll_home()

    def action_scroll_end(self) -> None:
        self._body().scroll_end(animate=False)

    @property
    def waiting(self) -> bool:
        return self.view.status is SessionStatus.WAITING

    @property
    def final(self) -> bool:
        return self.view.status.is_final
