"""The app's memory engine is built on first use (after the first frame), not at launch."""

from __future__ import annotations

import threading

from test_memory_support import copy_fixture

from cockpit.tui_cli import _DeferredEngine, detached_message
from memory import MemoryEngine


def test_engine_is_built_once_on_first_use_from_any_thread(tmp_path, monkeypatch):
    notes = copy_fixture("seed", tmp_path / "notes")
    monkeypatch.setenv("COCKPIT_INDEX", str(tmp_path / "idx.sqlite"))
    deferred = _DeferredEngine(notes)
    assert deferred._engine is None  # launching built nothing
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(deferred.notes_dir)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert isinstance(deferred._engine, MemoryEngine) and seen == [notes.resolve()] * 4
    assert deferred.index_path == tmp_path / "idx.sqlite"
    deferred.close()


def test_closing_an_engine_never_used_builds_nothing(tmp_path):
    deferred = _DeferredEngine(tmp_path / "no-such-notes")
    deferred.close()
    assert deferred._engine is None


def test_the_detach_line_counts_sessions_in_english():
    assert detached_message(1).startswith("cockpit: 1 session stays in the server (1 working; ")
    assert detached_message(3, 2).startswith("cockpit: 3 sessions stay in the server (1 working, 2 need you (a follow-up or an approval); ")
    assert detached_message(2, 2).startswith("cockpit: 2 sessions stay in the server (2 need you (a follow-up or an approval); ")
