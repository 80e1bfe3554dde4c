"""Pure parts of the TUI: formatting, the event fold, themes as files, UI state, grid shape,
transcript rendering."""

from __future__ import annotations

import json

import pytest

from cockpit import events as ev
from cockpit.events import InjectedNote, Usage
from cockpit.events import SessionStatus as S
from cockpit.tui import format as fmt
from cockpit.tui import state
from cockpit.tui.model import SessionView, count_by_status, totals
from cockpit.tui.themes import PROJECT_THEMES, STATUS_DEFAULTS, load_themes, theme_from_file
from cockpit.tui.transcript_view import render_transcript
from cockpit.tui.widgets.grid import grid_shape


def test_formatting_units():
    assert fmt.tokens(950) == "950" and fmt.tokens(12_345) == "12.3k" and fmt.tokens(2_500_000) == "2.5M"
    assert fmt.usd(None) == "n/a" and fmt.usd(0.01234) == "$0.0123" and fmt.usd(12.3) == "$12.30"
    assert fmt.percent(50, 200) == "25%" and fmt.percent(5, None) == "–"
    assert fmt.bar(5, 10, 4) == "██░░"
    assert fmt.short("a  b\nc", 10) == "a b c" and fmt.short("abcdefghijkl", 5) == "abcd…"
    assert fmt.tool_result("one\ntwo\nthree", False) == "one (+2 lines)"
    assert fmt.tool_args({"path": "README.md"}) == "path=README.md"


def test_every_status_has_a_glyph_and_a_theme_variable():
    for status in S:
        assert status in fmt.STATUS_GLYPH
        assert fmt.status_class(status) in STATUS_DEFAULTS
    assert fmt.status_class(S.RUNNING_TOOL) == "status-running-tool"


def _fold(*events) -> SessionView:
    view = SessionView("s1")
    for e in events:
        view.apply(e)
    return view


def test_fold_text_tools_usage_and_preseed():
    notes = (InjectedNote("a", 0.9, True), InjectedNote("b", 0.5, False))
    u = Usage(100, 20, 300, 0)
    view = _fold(
        ev.SessionSpawned("s1", "task", "m", "/ws", "/t.jsonl", True),
        ev.Preseeded("s1", notes, 60, "<notes/>"),
        ev.StatusChanged("s1", S.STREAMING),
        ev.TextDelta("s1", "Hel"), ev.TextDelta("s1", "lo"),
        ev.ToolCall("s1", "t1", "read_file", {"path": "x"}),
        ev.ToolResult("s1", "t1", "read_file", "body", False),
        ev.TextDelta("s1", "Done"),
        ev.UsageUpdate("s1", u, u, 0.5, 0.5, 400, 1000),
    )
    assert [b.kind for b in view.blocks] == ["text", "tool", "text"]
    assert view.blocks[0].text == "Hello" and view.blocks[1].result == "body"
    assert view.notes == notes and view.preseed_tokens == 60
    assert view.usage == u and view.cost_usd == 0.5 and view.context_window == 1000
    assert view.preseed_share == pytest.approx(60 / 400)


def test_the_strip_shows_the_selector_call():
    from cockpit.tui.widgets.strip import strip_markup

    notes = (InjectedNote("deploy-command", 0.61, False),)
    sel = ev.SelectorInfo("claude-haiku-5-5", Usage(1300, 12, 0, 0), 0.0014, 420.0, 1)
    view = _fold(ev.Preseeded("s1", notes, 60, "<notes/>", selector=sel))
    assert view.selector == sel
    assert "selector 1.3k" in strip_markup(view) and "1 chosen" in strip_markup(view)
    fell = ev.SelectorInfo("claude-haiku-5-5", Usage(), None, 5000.0, None, "timeout: no answer within 5 s")
    assert "fell back" in strip_markup(_fold(ev.Preseeded("s1", notes, 60, "<notes/>", selector=fell)))
    assert "selector" not in strip_markup(_fold(ev.Preseeded("s1", notes, 60, "<notes/>")))


def test_a_failed_preseed_is_never_shown_as_none_qualified():
    from cockpit.tui.widgets.strip import strip_markup

    failed = strip_markup(_fold(ev.Preseeded("s1", (), 0, "", error="index made with another model")))
    assert "preseed failed" in failed and "none qualified" not in failed
    assert "none qualified" in strip_markup(_fold(ev.Preseeded("s1", (), 0, "")))
    no_engine = strip_markup(_fold(ev.Preseeded("s1", (), 0, "", memory=False)))
    assert "no notes folder" in no_engine and "none qualified" not in no_engine


def test_a_retry_drops_the_partial_text_of_that_turn_only():
    view = _fold(
        ev.StatusChanged("s1", S.STREAMING), ev.TextDelta("s1", "first turn"),
        ev.StatusChanged("s1", S.WAITING),
        ev.StatusChanged("s1", S.STREAMING), ev.TextDelta("s1", "partial"),
        ev.StatusChanged("s1", S.STREAMING, "retry 1/1: stream interrupted before message_stop"),
        ev.TextDelta("s1", "whole"),
    )
    assert [b.text for b in view.blocks] == ["first turn", "whole"]
    assert view.epoch == 1


def test_totals_and_counts():
    a, b, c = SessionView("a"), SessionView("b"), SessionView("c")
    a.usage, a.cost_usd, a.status = Usage(10, 5), 0.25, S.DONE
    b.usage, b.cost_usd, b.status = Usage(1, 1), None, S.DONE
    c.status = S.ERROR
    usage, cost, unpriced = totals([a, b, c])
    assert usage == Usage(11, 6) and cost == 0.25 and unpriced
    assert count_by_status([a, b, c]) == {S.DONE: 2, S.ERROR: 1}


def test_grid_shape():
    assert grid_shape(1) == (1, 1)
    assert grid_shape(2) == (2, 1)
    assert grid_shape(4) == (2, 2)
    assert grid_shape(5) == (3, 2)
    assert grid_shape(9) == (3, 3)
    assert grid_shape(9, width=90) == (2, 5)  # narrow terminal: fewer columns


def test_project_themes_load_with_status_colours():
    themes, warnings = load_themes(PROJECT_THEMES)
    assert not warnings
    names = {t.name for t in themes}
    assert {"cockpit-dark", "cockpit-light", "cockpit-amber"} <= names
    for theme in themes:
        assert set(STATUS_DEFAULTS) <= set(theme.variables), theme.name


def test_user_theme_overrides_and_bad_files_are_skipped(tmp_path):
    (tmp_path / "cockpit-dark.toml").write_text('primary = "#ff0000"\nname = "cockpit-dark"\n')
    (tmp_path / "broken.toml").write_text("primary = [unclosed")
    (tmp_path / "nocolour.toml").write_text('name = "x"\n')
    themes, warnings = load_themes(PROJECT_THEMES, tmp_path)
    dark = next(t for t in themes if t.name == "cockpit-dark")
    assert dark.primary == "#ff0000"
    assert len(warnings) == 2 and any("broken.toml" in w for w in warnings)
    with pytest.raises(ValueError):
        theme_from_file(tmp_path / "nocolour.toml")


def test_state_round_trip_and_keymap_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("COCKPIT_DATA_DIR", str(tmp_path))
    assert state.load_state() == {}
    state.save_state(theme="cockpit-light")
    state.save_state(keymap={"spawn": "s"})
    assert json.loads((tmp_path / "state.json").read_text()) == {"theme": "cockpit-light", "keymap": {"spawn": "s"}}
    (tmp_path / "config.toml").write_text('[keymap]\nspawn = "a"\nkill = "ctrl+k"\n')
    assert state.load_keymap() == {"spawn": "s", "kill": "ctrl+k"}
    (tmp_path / "state.json").write_text("{not json")
    assert state.load_state() == {}
    assert state.user_themes_dir() == tmp_path / "themes"


def _old(tmp_path, records) -> list:
    """The events of an old-format transcript holding ``records`` (read through the migration)."""
    from cockpit.runtime.transcript import read_events

    path = tmp_path / "old.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return read_events(path)


def test_transcript_rendering_shows_everything(tmp_path):
    records = [
        {"type": "header", "session_id": "abc123", "task": "the task", "model": "m", "workspace": "/ws",
         "injected": [{"name": "n1", "score": 0.8, "priority": True, "description": "d"}],
         "preseed_text": "<project-notes>X</project-notes>", "preseed_tokens": 9, "started_at": "t0"},
        {"type": "message", "role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"type": "message", "role": "assistant", "content": [
            {"type": "text", "text": "let me look"},
            {"type": "tool_use", "id": "tu1", "name": "read_file", "input": {"path": "a"}}]},
        {"type": "tool_call", "id": "tu1", "name": "read_file", "input": {"path": "a"}},
        {"type": "tool_result", "id": "tu1", "name": "read_file", "content": "file body", "is_error": False},
        {"type": "usage", "usage": {"input": 5, "output": 6, "cache_write": 7, "cache_read": 8},
         "cost_usd": 0.001, "stop_reason": "tool_use"},
        {"type": "error", "kind": "overloaded", "message": "busy"},
        {"type": "end", "status": "error", "usage": {}, "cost_usd": None},
    ]
    text = render_transcript(_old(tmp_path, records))
    for piece in ["abc123", "the task", "★ n1", "<project-notes>X</project-notes>", "hi", "let me look",
                  "read_file", "file body", "in 5  out 6  cache read 8  cache write 7", "$0.0010",
                  "overloaded", "busy", "end: error"]:
        assert piece in text, piece


def test_answers_are_cut_only_between_paragraphs_outside_code_fences():
    from cockpit.tui.widgets.answer import split_point

    text = "para one\n\n```\ncode\n\nmore code\n```\n\npara two\n\ntail"
    cut = split_point(text)
    assert text[:cut].endswith("para two\n\n") and text[cut:] == "tail"
    inside = "intro\n\n```\na\n\nb\n"  # the blank line inside the open fence is not a cut
    assert inside[: split_point(inside)] == "intro\n\n"
    assert split_point("no blank line at all") is None


def test_fold_approvals_follow_ups_partial_usage_changes_and_reviews():
    ask = ev.ApprovalRequested("s1", "tu1", "bash", "bash", "pytest -q", "pytest -q", "Bash(pytest *)")
    u = Usage(100, 5, 0, 0)
    view = _fold(
        ev.SessionSpawned("s1", "task", "m", "/ws", "/t.jsonl", True, permission_mode="acceptEdits",
                          worktree=ev.WorktreeRef("/wt", "cockpit/s1-task", "abc", "main"), placement="worktree"),
        ev.StatusChanged("s1", S.STREAMING),
        ev.UsageUpdate("s1", u, u, 0.1, 0.1, 100, 1000, partial=True),
        ev.ToolCall("s1", "tu1", "bash", {"command": "pytest -q"}),
        ask,
        ev.StatusChanged("s1", S.NEEDS_APPROVAL, "pytest -q"),
    )
    assert view.pending is ask and view.requests == 0 and view.usage == u  # live figures, no request yet
    assert view.permission_mode == "acceptEdits" and view.worktree.branch == "cockpit/s1-task"
    view.apply(ev.ApprovalResolved("s1", "tu1", False, "once", "not now"))
    assert view.pending is None and view.blocks[-1].approval == "denied: not now"
    view.apply(ev.UsageUpdate("s1", u, u, 0.1, 0.1, 100, 1000))
    assert view.requests == 1
    view.apply(ev.WorktreeChanged("s1", 2, 10, 3))
    assert view.has_changes
    view.apply(ev.UserMessage("s1", "and the docs"))
    assert view.blocks[-1].kind == "user" and view.blocks[-1].text == "and the docs"
    view.apply(ev.Reviewed("s1", "keep", True, "kept branch cockpit/s1-task"))
    assert not view.worktree_open and not view.has_changes
    assert view.blocks[-1].kind == "note" and "kept branch" in view.blocks[-1].text
    view.apply(ev.ApprovalRequested("s1", "tu9", "bash", "bash", "x", "x"))
    view.apply(ev.StatusChanged("s1", S.KILLED))
    assert view.pending is None  # a final session waits for nothing


def test_context_notices_fold_and_a_follow_up_clears_full():
    view = _fold(ev.ContextNotice("s1", "warn", 820, 1000, "context 82% full"))
    assert view.context_high and view.context_level == "warn"
    view.apply(ev.ContextNotice("s1", "full", 1000, 1000, "prompt is too long"))
    assert view.context_level == "full"
    view.apply(ev.UserMessage("s1", "go on"))
    assert view.context_level == ""


def test_blocks_from_an_old_transcript_with_tools_approvals_and_errors(tmp_path):
    from cockpit.runtime.history import fold

    records = [
        {"type": "header", "session_id": "s0", "task": "fix it"},
        {"type": "message", "role": "user", "content": [{"type": "text", "text": "<env>…</env>"},
                                                        {"type": "text", "text": "fix it"}]},
        {"type": "status", "status": "streaming", "detail": ""},
        {"type": "message", "role": "assistant", "content": [
            {"type": "text", "text": "Running."}, {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}}]},
        {"type": "tool_call", "id": "t1", "name": "bash", "input": {"command": "ls"}},
        {"type": "approval_result", "request_id": "t1", "allowed": True, "scope": "session", "reason": ""},
        {"type": "tool_result", "id": "t1", "name": "bash", "content": "a.py", "is_error": False},
        {"type": "message", "role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}]},
        {"type": "status", "status": "streaming", "detail": ""},
        {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "Done."}]},
        {"type": "message", "role": "user", "content": [{"type": "text", "text": "thanks"}]},
        {"type": "error", "kind": "overloaded", "message": "busy"},
        {"type": "review", "action": "merge", "ok": True, "message": "merged"},
    ]
    blocks = fold(_old(tmp_path, records)).earlier_blocks()
    assert [b.kind for b in blocks] == ["user", "text", "tool", "text", "user", "error", "note"]
    assert blocks[0].text == "fix it"  # the first message shows as the task, not the env/preseed blocks
    assert blocks[2].result == "a.py" and blocks[2].approval == "allowed for this session"
    view = SessionView("s1", task="fix it")
    view.apply(ev.TextDelta("s1", "live"))
    view.add_history(blocks, "(note)")
    assert [b.kind for b in view.blocks][-3:] == ["note", "note", "text"] and view.blocks[-1].text == "live"


def test_unified_diffs_parse_with_line_numbers_and_render_highlighted():
    from cockpit.tui.diffrender import parse_patch, patch_path, render_diff

    patch = ("--- a/calc.py\n+++ b/calc.py\n@@ -10,3 +10,4 @@ def f():\n ctx\n-old\n+new\n+more\n tail\n"
             "\\ No newline at end of file\n")
    lines = parse_patch(patch)
    assert [(ln.kind, ln.old, ln.new) for ln in lines] == [
        ("meta", None, None), ("meta", None, None), ("hunk", None, None), ("ctx", 10, 10), ("del", 11, None),
        ("add", None, 11), ("add", None, 12), ("ctx", 12, 13), ("note", None, None)]
    rendered = render_diff(lines, "calc.py")
    assert rendered[4].plain.startswith(" 11     - old") and rendered[5].plain.startswith("     11 + new")
    assert any(s.style == "on $error 15%" for s in rendered[4].spans)
    assert any(s.style == "on $success 15%" for s in rendered[5].spans)
    assert len({c.cell_length for c in rendered[4:7]}) == 1  # tinted lines padded to one width
    assert patch_path(patch) == "calc.py"


def test_a_review_comment_quotes_file_lines_and_text():
    from cockpit.tui.diffrender import parse_patch
    from cockpit.tui.screens.diff import comment_message

    lines = parse_patch("--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n keep\n-gone\n+added\n")
    text = comment_message("x.py", lines[3:6], "why?")
    assert text.startswith("Review comment on x.py, lines 1-2:")
    assert "```diff\n keep\n-gone\n+added\n```" in text and text.endswith("why?")
    assert "removed line 2 (old file)" in comment_message("x.py", [lines[4]], "no")


def test_tool_labels_scores_and_places():
    assert fmt.tool_label("bash", {"command": "pytest -q"}) == ("$", "pytest -q")
    assert fmt.tool_label("str_replace_based_edit_tool", {"command": "create", "path": "a.py"}) == ("✎ create", "a.py")
    assert fmt.tool_label("memory_search", {"query": "x"}) == ("⚙ memory_search", "(query=x)")
    # an ACP agent's terminal call, titled with its command: said once, as a command
    assert fmt.tool_label("`make test`", {"command": "make test", "description": "run"}) == ("$", "make test")
    assert fmt.score(-0.3) == "0.00" and fmt.score(0.456) == "0.46"
    assert fmt.where("worktree", "cockpit/x") == "⎇ cockpit/x" and fmt.where("in place: --no-worktree", None) == "in place: --no-worktree"
    assert fmt.tool_result("\n\nfirst\nsecond", False) == "first (+1 line)"


def test_the_approval_panel_shows_the_ask_the_diff_and_the_keys():
    from cockpit.tui.widgets.approval import panel_content

    diff = "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    ask = ev.ApprovalRequested("s1", "t1", "str_replace_based_edit_tool", "edit", "str_replace a.py (+1 -1)", diff, "Edit")
    text = panel_content(ask, 10, {"approve_once": "y", "approve_session": "a", "approve": "⏎"}).plain
    assert "edit a file: str_replace a.py" in text and "- x = 1" in text and "+ x = 2" in text
    assert "+++ b/a.py" not in text  # the title names the file
    assert "y allow once · a allow for this session (Edit)" in text
    short = panel_content(ask, 1, {}).plain
    assert "more line" in short
    cmd = "cat hello.txt && curl -s https://example.com | head -1"
    once = panel_content(ev.ApprovalRequested("s1", "t2", "bash", "bash", cmd, cmd, "Bash"), 10, {}).plain
    assert once.count(cmd) == 1  # a one-line command is in the title: not twice
    long = "make test " + "ARG=" + "x" * 300
    twice = panel_content(ev.ApprovalRequested("s1", "t3", "bash", "bash", long, long, "Bash"), 10, {}).plain
    assert long in twice  # cut in the title: the detail shows it whole
    inline = "python3 -c 'import calc'"  # no rule can name it: "for the session" says it asks again
    said = panel_content(ev.ApprovalRequested("s1", "t4", "bash", "bash", inline, inline, ""), 10,
                         {"approve_once": "y", "approve_session": "a", "approve": "⏎"}).plain
    assert "a allow for this session (no rule can name it: it asks again)" in said
    keys = {"approve_once": "y", "approve_session": "a", "approve": "⏎"}
    for width, rows, short in ((30, 4, True), (46, 6, False), (60, 3, True), (12, 3, True), (12, 4, True)):
        # a small pane's room: the keys line is never the part cut
        lines = panel_content(ask, 10, keys, width=width, rows=rows).plain.split("\n")
        assert sum(-(-len(line) // width) or 1 for line in lines) <= rows, (width, rows, lines)
        assert lines[-1].startswith("y once · a session" if short else "y allow once"), lines
    roomy = panel_content(ask, 10, keys, width=60, rows=20).plain
    assert roomy.endswith("⏎ details, or deny with a reason") and "- x = 1" in roomy


def test_totals_count_closed_sessions_spend_and_make_approval_stand_out():
    from cockpit.tui.widgets.totals import MemoryState, totals_markup

    a, b = SessionView("a"), SessionView("b")
    a.status, a.usage, a.cost_usd = S.NEEDS_APPROVAL, Usage(1000, 0), 0.5
    b.status, b.usage, b.cost_usd = S.DONE, Usage(2000, 0), 0.25
    markup = totals_markup([a], MemoryState(), 0, 1, closed=[b])
    assert "on $status-needs-approval" in markup and "1 needs approval" in markup
    assert "3.0k tok" in markup and "$0.7500" in markup and "done" not in markup


def test_transcript_rendering_shows_approvals_context_and_reviews(tmp_path):
    records = [
        {"type": "header", "session_id": "s1", "task": "t", "permission_mode": "acceptEdits",
         "worktree": {"path": "/wt/s1", "branch": "cockpit/s1-t"}},
        {"type": "approval", "request_id": "tu1", "kind": "bash", "summary": "make test", "detail": "make test"},
        {"type": "approval_result", "request_id": "tu1", "allowed": False, "scope": "once", "reason": "not now"},
        {"type": "context", "level": "warn", "used": 820, "window": 1000},
        {"type": "review", "action": "merge", "ok": True, "message": "merged cockpit/s1-t into main"},
    ]
    text = render_transcript(_old(tmp_path, records))
    for piece in ["permission mode acceptEdits · worktree /wt/s1 on cockpit/s1-t", "? approval asked [tu1] bash: make test",
                  "✗ approval denied (once): not now", "· context warn: 820 of 1000 tokens",
                  "✓ review merge: merged cockpit/s1-t into main"]:
        assert piece in text, piece


def test_textsafe_removes_escape_sequences_and_controls_keeps_text():
    from cockpit.textsafe import clean, clean_event, one_line

    assert clean("a\x1b[31mred\x1b[0m b") == "ared b"
    assert clean("x\x1b]0;title\x07y\x1b]8;;http://e\x1b\\link\x1b]8;;\x1b\\z") == "xylinkz"
    assert clean("bell\x07 cr\r\n\ttab \u202eevil \x9b2J tail\x1b") == "bell cr\n\ttab evil  tail"
    assert clean("ünïcödé 日本 → ok") == "ünïcödé 日本 → ok"
    assert one_line("one\ntwo\u2028three\x1b[2J\t four ") == "one two three four"
    assert fmt.short("name\x1b]0;x\x07\nnext", 40) == "name next"
    e = clean_event(ev.ToolCall("s", "t", "bash", {"command": "echo \x1b[31m", "n": 1}))
    assert e.input == {"command": "echo ", "n": 1}
    same = ev.TextDelta("s", "plain")
    assert clean_event(same) is same


def test_a_dotted_keymap_id_unquoted_is_the_dotted_binding(tmp_path, monkeypatch):
    # TOML reads `diff.merge = "g"` as the table {"diff": {"merge": "g"}}: it means the id diff.merge
    monkeypatch.setenv("COCKPIT_DATA_DIR", str(tmp_path))
    (tmp_path / "config.toml").write_text('[keymap]\ndiff.merge = "g"\nspawn = "o"\n')
    assert state.load_keymap() == {"diff.merge": "g", "spawn": "o"}
    from cockpit.tui.keymap import check_keymap

    check_keymap(state.load_keymap())


def test_the_strip_says_whose_cost_it_shows_or_why_there_is_none():
    from cockpit.tui.model import SessionView
    from cockpit.tui.widgets.strip import cost_note

    v = SessionView("s1", "t")
    assert cost_note(v) == "our price table"
    v.cost_usd = None
    assert cost_note(v) == "n/a: model not priced"
    v.cost_source = "acp:opencode"
    assert cost_note(v) == "n/a: none reported"
    v.cost_usd = 0.01
    assert cost_note(v) == "reported by the agent"
    v.cost_source = "claude-code"
    assert cost_note(v) == "by Claude Code"
    from cockpit import events as ev

    failed = SessionView("s2", "t")  # an ACP session that failed before any usage
    failed.apply(ev.SessionSpawned("s2", "t", "m", "/ws", "/t", True, backend="acp:opencode"))
    failed.cost_usd = None
    assert cost_note(failed) == "n/a: none reported"


def test_a_bodys_markdown_renders_as_richs_own():
    """``body._markdown`` parses with one reused parser (Rich builds one per call): the lines are
    Rich's own, for every construct an answer uses."""
    from rich.console import Console
    from rich.markdown import Markdown

    from cockpit.tui.widgets.body import _MD, _markdown

    text = ("# Title\n\nSome *text*, **bold**, ~~struck~~ and `code`; [a link](https://example.com)\n\n"
            "- one\n- two\n  1. nested\n\n> quoted\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
            "```python\nprint('x')\n```\n\n---\n")

    def lines(markdown) -> list:
        console = Console(width=60, color_system="truecolor", file=None)
        return [list(line) for line in console.render_lines(markdown, console.options)]

    assert lines(_markdown(text)) == lines(Markdown(text, code_theme="monokai", hyperlinks=False))
    assert _MD.template  # the fast path is the one in use (Rich's constructor is the fallback)


def test_at_80_columns_the_header_keeps_the_spend_with_many_states():
    from textual.content import Content

    from cockpit.tui.widgets.totals import MemoryState, totals_markup

    views = []
    for i, status in enumerate((S.NEEDS_APPROVAL, S.WAITING, S.DONE, S.STREAMING, S.BUDGET_REACHED, S.ERROR)):
        v = SessionView(f"s{i}")
        v.status, v.usage, v.cost_usd = status, Usage(1000, 0), 0.01
        views.append(v)
    memory = MemoryState(notes_missing="/home/someone/projects/webshop/notes")
    wide = totals_markup(views, memory, 0, 1, width=0)
    assert "1 needs approval" in wide and "1 waiting for you" in wide  # named where there is room
    line = totals_markup(views, memory, 0, 1, width=80)
    plain = Content.from_markup(line).plain
    assert len(plain) <= 80, plain
    assert "6.0k tok" in plain and "$0.0600" in plain and "no notes folder" in plain  # nothing cut
    assert "waiting for you" not in plain  # the states by glyph and count


def test_at_80_columns_a_few_states_are_said_in_a_word_each():
    """The states by glyph alone ("? 1") are for when nothing else fits: a newcomer at 80×24 with
    a few sessions reads what each count is."""
    from textual.content import Content

    from cockpit.tui.widgets.totals import MemoryState, totals_markup

    views = []
    for i, status in enumerate((S.WAITING, S.RUNNING_TOOL, S.RUNNING_TOOL)):
        v = SessionView(f"s{i}")
        v.status, v.usage, v.cost_usd = status, Usage(1000, 0), 0.01
        views.append(v)
    memory = MemoryState(notes_missing="/home/someone/projects/webshop/notes")
    plain = Content.from_markup(totals_markup(views, memory, 0, 1, width=80)).plain
    assert len(plain) <= 80 and "no notes folder" in plain and "3.0k tok" in plain, plain
    assert "? 1 waiting" in plain and "⚙ 2 running" in plain, plain
    views[2].status = S.NEEDS_APPROVAL
    plain = Content.from_markup(totals_markup(views, MemoryState(model_state="ready", notes=6), 0, 1, width=80)).plain
    assert "! 1 asking" in plain and "? 1 waiting" in plain and "⚙ 1 running" in plain, plain


def test_a_header_narrower_still_puts_the_spend_before_the_states():
    from textual.content import Content

    from cockpit.tui.widgets.totals import MemoryState, totals_markup

    views = []
    for i, status in enumerate((S.NEEDS_APPROVAL, S.WAITING, S.DONE, S.STREAMING, S.BUDGET_REACHED, S.ERROR,
                                S.INTERRUPTED)):
        v = SessionView(f"s{i}")
        v.status, v.usage, v.cost_usd = status, Usage(2200, 0), 0.0022
        views.append(v)
    line = Content.from_markup(totals_markup(views, MemoryState(model_state="ready", notes=6), 1, 3,
                                             width=60)).plain
    assert line.startswith("cockpit │ page 2/3 │ 6 notes │ 15.4k tok  $0.0154"), line  # what a cut end cannot take


async def test_the_diff_view_pans_sideways_over_long_lines():
    from textual.app import App
    from textual.content import Content
    from tui_fakes import until

    from cockpit.tui.diffrender import DiffLine
    from cockpit.tui.widgets.diffview import DiffView

    class Host(App):
        def compose(self):
            yield DiffView()

    app = Host()
    async with app.run_test(size=(60, 10)) as pilot:
        view = app.query_one(DiffView)
        long = "+" + "x" * 200
        view.set_lines([DiffLine("add", long, None, 1)], [Content(long)])
        view.focus()
        await until(pilot, lambda: view.max_scroll_x > 100 and app.focused is view, "laid out and focused")
        await pilot.pause()
        for key, x in (("right", 8), ("right", 16), ("shift+right", 56), ("left", 48), ("shift+left", 8),
                       ("shift+left", 0)):
            await pilot.press(key)
            await until(pilot, lambda x=x: view.scroll_offset.x == x, f"{key} → {x}")
