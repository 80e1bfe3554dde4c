"""Memory screen: search the notes interactively, open a note, see lint and sync warnings.

Search runs ``engine.search(query, top_k)`` in a thread worker 0.25 s after the last keystroke;
results show ★ (priority), name, score (cosine, 0–1) and description; Down moves from the search
box into the results, Enter opens the highlighted result (from the search box: the first one of
that query, searching first when needed) — the note's file, read in a thread, below. The
Warnings tab lists ``engine.lint()`` advice and the engine's sync/parse warnings. Esc goes back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import (
    Input,
    Label,
    ListItem,
    ListView,
    Markdown,
    TabbedContent,
    TabPane,
    Tabs,
)

from cockpit.textsafe import clean, one_line
from cockpit.tui import format as fmt
from cockpit.tui.widgets.footer import KeyFooter

DEBOUNCE_S = 0.25


class MemoryScreen(Screen):
    BINDINGS = [
        Binding("escape", "back", "Back", id="memory.back"),
        # priority: Enter in the search box opens a note too (the box would only submit)
        Binding("enter", "open", "Open note", priority=True, id="memory.open"),
        Binding("down", "results", "Results", show=False, id="memory.results"),
        # priority: in the search box ctrl+w would delete a word instead (as the footer says: Warnings)
        Binding("ctrl+w", "show_tab('warnings')", "Warnings", priority=True, id="memory.warnings"),
        Binding("ctrl+s", "show_tab('search')", "Search", id="memory.search"),
    ]

    def __init__(self, engine: Any, top_k: int = 10, tab: str = "search") -> None:
        super().__init__(id="memory")
        self.engine = engine
        self.top_k = top_k
        self.initial_tab = tab
        self.hits: list[Any] = []
        self.lint_issues: list[Any] | None = None
        self._debounce: Timer | None = None
        self._shown = ""  # the query whose results the list shows
        self._open_first = False  # open the first result when the pending search answers

    def compose(self) -> ComposeResult:
        with TabbedContent(initial=self.initial_tab):
            with TabPane("Search", id="search"):
                yield Input(placeholder="search the notes…", id="memory-query")
                yield ListView(id="memory-hits")
                with Vertical(id="memory-note-box"):
                    yield Markdown("", id="memory-note")
            with TabPane("Warnings", id="warnings"):
                yield Label("[dim]checking…[/]", id="memory-warnings")
        yield KeyFooter()

    def on_mount(self) -> None:
        if self.initial_tab == "search":
            self.query_one("#memory-query", Input).focus()
        self.load_warnings()

    def action_back(self) -> None:
        self.dismiss()

    def action_show_tab(self, tab: str) -> None:
        tabs = self.query_one(TabbedContent)
        if tab == "search":
            tabs.active = tab
            self.query_one("#memory-query", Input).focus()
            return
        # focus leaves the search tab first: TabbedContent shows the tab of the focused widget, so
        # the search box keeping focus would switch straight back
        tabs.query_one(Tabs).focus()
        tabs.active = tab

    # -- search ----------------------------------------------------------------------
    @on(Input.Changed, "#memory-query")
    def _changed(self, event: Input.Changed) -> None:
        if self._debounce is not None:
            self._debounce.stop()
        query = event.value.strip()
        if query:
            self._debounce = self.set_timer(DEBOUNCE_S, lambda: self.search(query))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("open", "results"):  # only on the Search tab (Enter keeps its use elsewhere)
            return self.query_one(TabbedContent).active == "search"
        return True

    @on(TabbedContent.TabActivated)
    def _tab(self) -> None:
        self.refresh_bindings()

    def action_results(self) -> None:
        """Down where nothing else takes it (the search box): into the results."""
        if self.hits:
            self.query_one("#memory-hits", ListView).focus()

    def action_open(self) -> None:
        box = self.query_one("#memory-query", Input)
        view = self.query_one("#memory-hits", ListView)
        if self.focused is box:
            if self._debounce is not None:
                self._debounce.stop()
            query = box.value.strip()
            if query and query != self._shown:  # the list shows another query's results: search first
                self._open_first = True
                self.search(query)
                view.focus()
                return
            view.focus()
        index = view.index if view.index is not None else 0
        if index < len(self.hits):
            self.open_note(Path(self.hits[index].path))

    @work(thread=True, exclusive=True, group="memory-search")
    def search(self, query: str) -> None:
        try:
            hits = list(self.engine.search(query, top_k=self.top_k))
            error = ""
        except Exception as exc:
            hits, error = [], str(exc)
        self.app.call_from_thread(cast(Any, self._show_hits), query, hits, error)

    async def _show_hits(self, query: str, hits: list[Any], error: str) -> None:
        if self.query_one("#memory-query", Input).value.strip() != query:
            return  # stale
        self.hits, self._shown = hits, query
        view = self.query_one("#memory-hits", ListView)
        await view.clear()
        if error:
            await view.append(ListItem(Label(Content(f"search failed: {error}"))))
            return
        items = []
        for hit in hits:
            star = "[$accent]★[/]" if hit.priority else " "
            status = getattr(hit, "status", "") or ""
            mark = f" [$warning]({status})[/]" if status in ("superseded", "deprecated", "rejected", "proposed") else ""
            items.append(ListItem(Label(Content.from_markup(
                f"{star} [b]$name[/b]{mark} [dim]$score[/]  $desc",
                name=fmt.short(hit.name, 80), score=fmt.score(hit.score), desc=fmt.short(hit.description, 70),
            ))))
        if not items:
            items.append(ListItem(Label("[dim]no notes match[/]")))
        await view.extend(items)
        if hits:
            view.index = 0
        if self._open_first and hits:
            self.open_note(Path(hits[0].path))
        self._open_first = False

    @on(ListView.Selected, "#memory-hits")
    def _open(self, event: ListView.Selected) -> None:
        index = self.query_one("#memory-hits", ListView).index
        if index is not None and index < len(self.hits):
            self.open_note(Path(self.hits[index].path))

    @work(thread=True, exclusive=True, group="memory-open")
    def open_note(self, path: Path) -> None:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            text = f"cannot read {path}: {exc}"
        self.app.call_from_thread(cast(Any, self._show_note), path, text)

    def _show_note(self, path: Path, text: str) -> None:
        self.opened = path
        self.query_one("#memory-note", Markdown).update(f"`{one_line(path)}`\n\n" + note_markdown(clean(text)))

    # -- warnings --------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="memory-lint")
    def load_warnings(self) -> None:
        lines: list[str] = []
        try:
            issues = list(self.engine.lint())
        except Exception as exc:
            issues = []
            lines.append(f"lint failed: {exc}")
        try:
            status_warnings = list(self.engine.status().warnings or [])
        except Exception:
            status_warnings = []
        self.app.call_from_thread(cast(Any, self._show_warnings), issues, status_warnings, lines)

    def _show_warnings(self, issues: list[Any], status_warnings: list[str], extra: list[str]) -> None:
        """The index's warnings first (the header's ``⚠ N warnings`` counts those), then lint's
        advice on the folder, each under its count."""
        self.lint_issues = issues
        parts = [Content.from_markup(f"[b]Index warnings[/b] ({len(status_warnings)}; the header's count)")]
        parts += [Content(one_line(w)) for w in status_warnings + extra]
        parts.append(Content(""))
        parts.append(Content.from_markup(f"[b]Lint[/b] ({len(issues)}; advice, `cockpit memory lint`)"))
        for issue in issues:
            other = f" ↔ {issue.other}" if getattr(issue, "other", None) else ""
            parts.append(Content.from_markup(
                "[$warning]$kind[/] $path$other: $msg",
                kind=issue.kind, path=one_line(issue.path), other=one_line(other), msg=one_line(issue.message),
            ))
        self.query_one("#memory-warnings", Label).update(Content("\n").join(parts))


def note_markdown(text: str) -> str:
    """A note's file as Markdown to show: its YAML frontmatter as a ``yaml`` block (as plain
    Markdown the ``---`` fences become a rule and a heading, the fields one run-on line)."""
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":
        for i, line in enumerate(lines[1:], 1):
            if line.strip() in ("---", "..."):
                front = "\n".join(lines[1:i]).replace("```", "` ` `")
                return f"```yaml\n{front}\n```\n\n" + "\n".join(lines[i + 1:])
    return text
