"""Transcript review: every session with a transcript file (live and past), one shown whole.

Left: the sessions, newest first, each with its start date and time (local), state (live ones
marked with their state) and cost. Right: the selected transcript rendered by
``transcript_view`` in a read-only text area (scrollable, selectable). ``/`` searches **all**
transcripts: Enter lists only those that contain the text (with their number of matches) and
selects the first match; Enter again goes to the next match, then on to the next transcript;
Esc in the search box shows every transcript again. ``o`` resumes a past session into a pane,
``f5`` reloads (a live session's file grows), Esc goes back. The transcripts come from a
``TranscriptSource``: this machine's files, or — for a pane of another host in a grid — that
host's server; they are read in thread workers. List items carry no widget ids (a session id is
data: two transcripts may share one).
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Input, Label, ListItem, ListView, TextArea
from textual.widgets.text_area import Selection

from cockpit.runtime.protocols import TranscriptSource
from cockpit.tui import format as fmt
from cockpit.tui.transcript_view import render_transcript
from cockpit.tui.widgets.footer import KeyFooter


class ReviewScreen(Screen):
    BINDINGS = [
        Binding("escape", "back", "Back", id="review.back"),
        Binding("slash,ctrl+f", "search", "Search", id="review.search"),
        Binding("o", "resume", "Resume into a pane", id="review.resume"),
        Binding("f5", "reload", "Reload", id="review.reload"),
    ]

    def __init__(self, source: TranscriptSource, live: dict[str, str], select: str | None = None) -> None:
        """``source``: where the transcripts are; ``live``: session id (as the source names it) →
        state value of sessions running in this app."""
        super().__init__(id="review")
        self.source = source
        self.live = live
        self.select = select
        self.all_infos: list[Any] = []  # every transcript, newest first
        self.infos: list[Any] = []  # those listed (all, or the ones matching the search)
        self.matches: dict[Path, int] = {}  # path → matches of ``query`` (when searching)
        self.query_text = ""  # the search the list is filtered by ("" = none)
        self.shown: Any = None  # the TranscriptInfo on the right
        self.text = ""
        self._texts: dict[Path, tuple[float, str]] = {}  # path → (mtime, rendered text), for search
        self._pending_find = ""  # a search to run once the transcript being read is shown

    def compose(self) -> ComposeResult:
        with Horizontal():
            with Vertical(id="review-left"):
                where = " on host $host" if self.source.host else ""
                yield Label(Content.from_markup(f"[b]Sessions[/b] (live and past){where}", host=self.source.host))
                yield ListView(id="review-list")
            with Vertical(id="review-right"):
                yield Input(placeholder="search every transcript (Enter: next match; Esc: show all)",
                            id="review-search")
                yield TextArea("", read_only=True, soft_wrap=True, id="review-text")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#review-search", Input).display = False
        self.query_one("#review-text", TextArea).cursor_blink = False
        self.load_list()

    @work(thread=True, exclusive=True, group="review-list")
    def load_list(self) -> None:
        try:
            infos = self.source.listing()
        except Exception as exc:  # a host that went away, or one whose server is older
            self.app.call_from_thread(self.notify, f"cannot list the transcripts: {exc}", severity="error")
            infos = []
        self.app.call_from_thread(cast(Any, self._fill), infos)

    async def _fill(self, infos: list[Any]) -> None:
        self.all_infos = infos
        await self._list(infos)
        index = 0
        if self.select:
            index = next((i for i, x in enumerate(infos) if x.session_id == self.select), 0)
        if infos:
            view = self.query_one("#review-list", ListView)
            view.index = index
            self.show(infos[index])
            view.focus()

    def started(self, info: Any) -> str:
        """The transcript's start as local date and time (the app's clock), or "" when unknown."""
        try:
            stamp = datetime.fromisoformat(str(info.started_at)).timestamp()
        except ValueError:
            return ""
        clock = getattr(self.app, "clock", time.localtime)
        return time.strftime("%Y-%m-%d %H:%M", clock(stamp))

    async def _list(self, infos: list[Any]) -> None:
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
            hits = self.matches.get(info.path)
            found = f" [b $accent]{hits} match{'es' if hits != 1 else ''}[/]" if hits else ""
            label = Content.from_markup(
                f"[b]$sid[/b] [dim]$date[/]\n{tag} [dim]$cost[/]{found}\n$task",
                sid=info.session_id, date=self.started(info),
                cost=fmt.usd(info.cost_usd) if info.status else "", task=fmt.short(info.task, 38),
            )
            items.append(ListItem(Label(label)))
        await view.extend(items)

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
        from cockpit.textsafe import clean

        try:
            skipped: list[str] = []
            text = clean(render_transcript(self.source.read(info.path, skipped)))
            if skipped:  # damaged lines: say so above what could be read
                text = "\n".join(f"warning: {w}" for w in skipped) + "\n\n" + text
        except (OSError, ValueError, RuntimeError) as exc:  # RuntimeError: a host's ServerError / RemoteError
            text = f"cannot read {info.path}: {exc}"
        except Exception as exc:  # records of the wrong shape: say so, never end the app
            text = f"cannot show {info.path}: a damaged record ({type(exc).__name__}: {exc})"
        self.app.call_from_thread(cast(Any, self._set_text), info, text)

    def _set_text(self, info: Any, text: str) -> None:
        if info is self.shown:
            self.text = text
            self.query_one("#review-text", TextArea).load_text(text)
            if self._pending_find:
                query, self._pending_find = self._pending_find, ""
                self.find_next(query)

    # -- actions -------------------------------------------------------------------
    def action_back(self) -> None:
        search = self.query_one("#review-search", Input)
        if search.has_focus:
            search.display = False
            self.query_one("#review-text", TextArea).focus()
            if self.query_text:
                self.query_text = ""
                self.matches = {}
                self.call_later(self._unfilter)
            return
        self.dismiss()

    async def _unfilter(self) -> None:
        shown = self.shown
        await self._list(self.all_infos)
        if shown in self.infos:
            self.query_one("#review-list", ListView).index = self.infos.index(shown)

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
        query = event.value.strip()
        if not query:
            return
        if query != self.query_text:
            self.search_all(query)
        elif not self.find_next(query, wrap=False):
            self._next_transcript(query)

    @work(thread=True, exclusive=True, group="review-search")
    def search_all(self, query: str) -> None:
        """Count ``query`` (case-insensitive) in every transcript (rendered as shown)."""
        needle = query.lower()
        matches: dict[Path, int] = {}
        for info in self.all_infos:
            n = self._text_of(info.path).lower().count(needle)
            if n:
                matches[info.path] = n
        self.app.call_from_thread(cast(Any, self._searched), query, matches)

    def _text_of(self, path: Path) -> str:
        """A transcript rendered as text, cached until the file changes (thread workers only)."""
        try:
            mtime = self.source.stamp(path)
        except OSError:
            return ""
        cached = self._texts.get(path)
        if cached is not None and cached[0] == mtime:
            return cached[1]
        try:
            text = render_transcript(self.source.read(path, []))  # warnings show when it is opened
        except Exception:  # unreadable or damaged: nothing to search in
            text = ""
        self._texts[path] = (mtime, text)
        return text

    async def _searched(self, query: str, matches: dict[Path, int]) -> None:
        self.query_text = query
        self.matches = matches
        hits = [info for info in self.all_infos if info.path in matches]
        if not hits:
            self.notify(f"not found in any transcript: {query}", severity="warning")
            return
        await self._list(hits)
        first = self.shown if self.shown in hits else hits[0]
        self.query_one("#review-list", ListView).index = hits.index(first)
        self._pending_find = query
        if first is self.shown:
            self.find_next(query)
        else:
            self.show(first)
        total = sum(matches.values())
        self.notify(f"{total} match{'es' if total != 1 else ''} in {len(hits)} transcript"
                    f"{'s' if len(hits) != 1 else ''}", timeout=4)

    def _next_transcript(self, query: str) -> None:
        if not self.infos:
            return
        index = self.infos.index(self.shown) + 1 if self.shown in self.infos else 0
        nxt = self.infos[index % len(self.infos)]
        self.query_one("#review-list", ListView).index = self.infos.index(nxt)
        self._pending_find = query
        if nxt is self.shown:
            area = self.query_one("#review-text", TextArea)
            area.selection = Selection((0, 0), (0, 0))
            self.find_next(query)
        else:
            self.show(nxt)

    def find_next(self, query: str, wrap: bool = True) -> bool:
        """Select the next match of ``query`` (case-insensitive) after the cursor in the shown
        transcript; ``wrap``: from the top when there is none after it. False when none."""
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
            if not after and not wrap:
                return False
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
