"""Transcript review: every session with a transcript file (live and past), one shown whole.

Left: the sessions, newest first (live ones marked with their state). Right: the selected
transcript rendered by ``transcript_view`` in a read-only text area (scrollable, selectable).
``/`` searches (Enter → next match, highlighted and scrolled to), ``o`` resumes a past session
into a pane, ``f5`` reloads (a live session's file grows), Esc goes back. Files are read in a
thread worker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, Input, Label, ListItem, ListView, TextArea
from textual.widgets.text_area import Selection

from cockpit.tui import format as fmt
from cockpit.tui.transcript_view import render_transcript


class ReviewScreen(Screen):
    BINDINGS = [
        Binding("escape", "back", "Back", id="review.back"),
        Binding("slash,ctrl+f", "search", "Search", id="review.search"),
        Binding("o", "resume", "Resume into a pane", id="review.resume"),
        Binding("f5", "reload", "Reload", id="review.reload"),
    ]

    def __init__(self, sessions_dir: Path, live: dict[str, str], select: str | None = None) -> None:
        """``live``: session id → state value of sessions running in this app."""
        super().__init__(id="review")
        self.sessions_dir = Path(sessions_dir)
        self.live = live
        self.select = select
        self.infos: list[Any] = []
        self.shown: Any = None  # the TranscriptInfo on the right
        self.text = ""

    def compose(self) -> ComposeResult:
        with Horizontal():
            with Vertical(id="review-left"):
                yield Label("[b]Sessions[/b] (live and past)")
                yield ListView(id="review-list")
            with Vertical(id="review-right"):
                yield Input(placeholder="search this transcript (Enter: next match)", id="review-search")
                yield TextArea("", read_only=True, soft_wrap=True, id="review-text")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#review-search", Input).display = False
        self.query_one("#review-text", TextArea).cursor_blink = False
        self.load_list()

    @work(thread=True, exclusive=True, group="review-list")
    def load_list(self) -> None:
        from cockpit.runtime.transcript import list_transcripts

        infos = list_transcripts(self.sessions_dir)
        self.app.call_from_thread(self._fill, infos)

    async def _fill(self, infos: list[Any]) -> None:
        self.infos = infos
        view = self.query_one("#review-list", ListView)
        await view.clear()
        items = []
        for info in infos:
            state = self.live.get(info.session_id)
            if state is not None:
                tag = f"[$primary]live · {state}[/]"
            else:
                tag = f"[dim]{info.status or 'unfinished'}[/]"
            label = Content.from_markup(
                f"[b]$sid[/b] {tag} [dim]$cost[/]\n$task",
                sid=info.session_id, cost=fmt.usd(info.cost_usd) if info.status else "",
                task=fmt.short(info.task, 38),
            )
            items.append(ListItem(Label(label), id=f"review-{info.session_id}"))
        await view.extend(items)
        index = 0
        if self.select:
            index = next((i for i, x in enumerate(infos) if x.session_id == self.select), 0)
        if infos:
            view.index = index
            self.show(infos[index])
            view.focus()

    @on(ListView.Highlighted, "#review-list")
    def _highlighted(self, event: ListView.Highlighted) -> None:
        view = self.query_one("#review-list", ListView)
        if view.index is not None and view.index < len(self.infos):
            info = self.infos[view.index]
            if info is not self.shown:
                self.show(info)

    def show(self, info: Any) -> None:
        self.shown = info
        self._read(info)

    @work(thread=True, exclusive=True, group="review-read")
    def _read(self, info: Any) -> None:
        from cockpit.runtime.transcript import read_transcript

        try:
            text = render_transcript(read_transcript(info.path))
        except (OSError, ValueError) as exc:
            text = f"cannot read {info.path}: {exc}"
        self.app.call_from_thread(self._set_text, info, text)

    def _set_text(self, info: Any, text: str) -> None:
        if info is self.shown:
            self.text = text
            self.query_one("#review-text", TextArea).load_text(text)

    # -- actions -------------------------------------------------------------------
    def action_back(self) -> None:
        search = self.query_one("#review-search", Input)
        if search.has_focus:
            search.display = False
            self.query_one("#review-text", TextArea).focus()
            return
        self.dismiss()

    def action_search(self) -> None:
        search = self.query_one("#review-search", Input)
        search.display = True
        search.focus()

    def action_reload(self) -> None:
        self.select = self.shown.session_id if self.shown else None
        self.load_list()

    def action_resume(self) -> None:
        info = self.shown
        if info is None:
            return
        if info.session_id in self.live:
            self.notify("that session is live in a pane already", severity="warning")
            return
        self.dismiss(info.path)

    @on(Input.Submitted, "#review-search")
    def _find(self, event: Input.Submitted) -> None:
        self.find_next(event.value)

    def find_next(self, query: str) -> bool:
        """Select the next match of ``query`` (case-insensitive) after the cursor; wraps."""
        area = self.query_one("#review-text", TextArea)
        if not query:
            return False
        needle = query.lower()
        matches = [
            (r, c)
            for r, line in enumerate(self.text.split("\n"))
            for c in _find_all(line.lower(), needle)
        ]
        if matches:
            sel = area.selection
            cur = tuple(sel.start)
            after = [m for m in matches if (m > cur if sel.start != sel.end else m >= cur)]
            r, c = (after or matches)[0]
            area.selection = Selection((r, c), (r, c + len(query)))
            area.scroll_cursor_visible(center=True)
            return True
        self.notify(f"not found: {query}", severity="warning")
        return False


def _find_all(haystack: str, needle: str) -> list[int]:
    out, i = [], haystack.find(needle)
    while i >= 0:
        out.append(i)
        i = haystack.find(needle, i + 1)
    return out
