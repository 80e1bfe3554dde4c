"""Memory-side robustness (issue 12): undecodable file names, a notes folder deleted and
re-created under the watcher, Claude Code's body structure in lint."""

from __future__ import annotations

import os
import queue
import shutil
import threading

import pytest
from test_memory_support import HashEmbedder, copy_fixture, note

from memory import MemoryEngine

BAD = os.fsdecode(b"bad\xff.md")  # a name with an invalid UTF-8 byte (surrogate-escaped)


def names(e: MemoryEngine) -> set[str]:
    return {r[0] for r in e.store.query("SELECT name FROM notes")}


@pytest.fixture()
def undecodable(tmp_path):
    notes = copy_fixture("seed", tmp_path / "notes")
    body = b"---\nname: bad-name\ndescription: A note whose file name is not UTF-8.\n---\nbody\n"
    try:
        (notes / BAD).write_bytes(body)
        (notes / os.fsdecode(b"dir\xfe")).mkdir()
        (notes / os.fsdecode(b"dir\xfe") / "inner.md").write_bytes(body.replace(b"bad-name", b"inner"))
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system refuses undecodable names")
    return notes


def test_undecodable_file_names_are_skipped_and_the_rest_index(undecodable, tmp_path):
    e = MemoryEngine(undecodable, index_path=tmp_path / "i.sqlite", model=HashEmbedder())
    rep = e.sync()
    assert rep.added == 10 and "staging-stack" in names(e) and not {"bad-name", "inner"} & names(e)
    skipped = dict(rep.skipped)
    assert "not valid UTF-8" in skipped["bad\\xff.md"] and "not valid UTF-8" in skipped["dir\\xfe"]
    assert any("bad\\xff.md" in w for w in e.status().warnings)  # named, printable
    assert e.sync().added == 0  # a second sync is calm
    # a watcher reporting the undecodable path (targeted sync) does not break either
    rep = e.sync(paths=[str(undecodable / BAD), str(undecodable / "staging-stack.md")])
    assert "bad\\xff.md" in dict(rep.skipped)
    assert e.search("staging port", 3)[0].name == "staging-stack"


def _states(q: queue.Queue, until: str, timeout: float = 20.0) -> list[str]:
    seen = []
    while True:
        state, _detail = q.get(timeout=timeout)
        seen.append(state)
        if state == until:
            return seen


def test_watch_recovers_when_the_notes_folder_is_deleted_and_recreated(tmp_path):
    notes = copy_fixture("seed", tmp_path / "notes")
    e = MemoryEngine(notes, index_path=tmp_path / "i.sqlite", model=HashEmbedder())
    stop = threading.Event()
    states: queue.Queue = queue.Queue()
    added: queue.Queue = queue.Queue()
    t = threading.Thread(target=e.watch, args=(stop,), daemon=True,
                         kwargs={"on_status": lambda s, d: states.put((s, d)),
                                 "on_sync": lambda rep: added.put(rep.added) if rep.added else None})
    t.start()
    try:
        assert _states(states, "watching") == ["watching"] and e.status().watch == "watching notes"
        shutil.rmtree(notes)
        _states(states, "missing")
        assert "missing" in e.status().watch
        notes.mkdir()
        note(notes, "fresh", "A note written after the folder came back.")
        _states(states, "recovered")
        assert names(e) == {"fresh"}  # the deleted notes left the index, the new one is in it
        assert "re-created" in e.status().watch
        # the new folder is watched
        while not added.empty():
            added.get_nowait()
        note(notes, "later", "A note written into the re-created folder.")
        added.get(timeout=20)
        assert names(e) == {"fresh", "later"}
        # replaced in one go (no time to see it missing): still recovers
        shutil.rmtree(notes)
        notes.mkdir()
        note(notes, "third", "The third folder's note.")
        _states(states, "recovered")
        assert names(e) == {"third"}
    finally:
        stop.set()
        t.join(10)
    assert not t.is_alive() and e.status().watch is None


def test_lint_reads_claude_codes_why_and_how_to_apply_as_one_fact(tmp_path):
    notes = tmp_path / "notes"
    note(notes, "api-errors", "API errors are returned as application/problem+json documents.",
         "Every API error response is a problem+json document.\n\n"
         "**Why:** a partner's mobile client crashed on our old HTML error pages, and support spent a "
         "week answering tickets about it.\n\n"
         "**How to apply:** whenever you write a handler, middleware or reverse-proxy rule, return the "
         "shared helper's output.")
    note(notes, "tz", "Store timestamps in UTC.",
         "Store every timestamp in UTC.\n\n**Why:** daylight saving shifts broke the billing cron in "
         "Denver last spring.\n\n**How to apply:** convert at the edges; templates render the viewer's zone.")
    note(notes, "two-facts", "The staging stack listens on port 6443.",
         "The staging stack listens on port 6443. "
         "Separately, the office coffee machine descales every Thursday morning.")
    e = MemoryEngine(notes, index_path=tmp_path / "i.sqlite")
    gaps = [i.path for i in e.lint() if i.kind == "description-gap"]
    assert gaps == ["two-facts.md"]  # the reason and the guidance are not second facts; a real one is
