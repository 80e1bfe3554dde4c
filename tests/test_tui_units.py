"""Pure parts of the TUI: formatting, the event fold, themes as files, UI state, grid shape,
transcript rendering."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cockpit import events as ev
from cockpit.events import InjectedNote, SessionStatus as S, Usage
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
    view = _fold(ev.Preseeded("s1", notes, 60, "<notes/>", sel))
    assert view.selector == sel
    assert "selector 1.3k" in strip_markup(view) and "1 chosen" in strip_markup(view)
    fell = ev.SelectorInfo("claude-haiku-5-5", Usage(), None, 5000.0, None, "timeout: no answer within 5 s")
    assert "fell back" in strip_markup(_fold(ev.Preseeded("s1", notes, 60, "<notes/>", fell)))
    assert "selector" not in strip_markup(_fold(ev.Preseeded("s1", notes, 60, "<notes/>")))


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


def test_transcript_rendering_shows_everything():
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
    text = render_transcript(records)
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
