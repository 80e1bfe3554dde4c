"""save (atomic, no silent overwrite), lint (advice only), watch (re-sync on change)."""

from __future__ import annotations

import os
import threading

import frontmatter
import pytest
from test_memory_support import HashEmbedder, copy_fixture, note, snapshot

from memory import LintIssue, MemoryEngine, NoteExistsError


@pytest.fixture()
def eng(tmp_path):
    notes = copy_fixture("seed", tmp_path / "notes")
    e = MemoryEngine(notes, index_path=tmp_path / "idx.sqlite", model=HashEmbedder())
    e.sync()
    yield e
    e.close()


def test_save_writes_a_parseable_note_and_indexes_it(eng):
    p = eng.save("cache-ttl", "The API cache TTL is 300 seconds.", "Set in config/cache.toml.", priority=True)
    assert p == eng.notes_dir / "cache-ttl.md"
    post = frontmatter.load(p)
    assert post["name"] == "cache-ttl" and post["priority"] == "high"
    assert post["description"] == "The API cache TTL is 300 seconds."
    assert post.content == "Set in config/cache.toml."
    row = eng.store.query("SELECT priority, path FROM notes WHERE name = 'cache-ttl'")
    assert row == [(1, "cache-ttl.md")]
    assert not [f for f in os.listdir(eng.notes_dir) if f.startswith(".")]  # no temp left


def test_save_refuses_to_overwrite_a_different_note(eng):
    before = (eng.notes_dir / "oncall.md").read_bytes()
    with pytest.raises(NoteExistsError):
        eng.save("oncall", "Something else entirely.", "x")
    assert (eng.notes_dir / "oncall.md").read_bytes() == before
    # a different file declaring that name also counts
    note(eng.notes_dir / "sub", "renamed-file", "x")
    (eng.notes_dir / "sub" / "renamed-file.md").write_text("---\nname: shadow\ndescription: d\n---\n")
    eng.sync()
    with pytest.raises(NoteExistsError):
        eng.save("shadow", "another", "")
    assert not (eng.notes_dir / "shadow.md").exists()


def test_save_same_note_twice_is_idempotent(eng):
    a = eng.save("same", "Same description.", "Same body.")
    b = eng.save("same", "Same description.", "Same body.")
    assert a == b


def test_save_refuses_an_unindexed_file_in_the_way(eng):
    (eng.notes_dir / "blocker.md").write_bytes(b"\x00binary")
    with pytest.raises(NoteExistsError):
        eng.save("blocker", "d", "b")
    assert (eng.notes_dir / "blocker.md").read_bytes() == b"\x00binary"


@pytest.mark.parametrize("name,desc", [("../escape", "d"), ("", "d"), ("a b", "d"),
                                       ("ok-name", ""), ("ok-name", "two\nlines"), ("ok-name", "two\rlines"),
                                       ("ok-name", "two\u2028lines"),
                                       ("MEMORY", "Claude Code's index file is not a note")])
def test_save_validates(eng, name, desc):
    with pytest.raises(ValueError):
        eng.save(name, desc, "b")


@pytest.mark.parametrize("desc, body, why", [("word " * 14_000, "b", "description is too long"),
                                             ("fine", "x" * 1_000_001, "larger than 1000000 bytes")])
def test_save_never_writes_a_note_the_indexer_would_skip(eng, desc, body, why):
    """It wrote the file, printed its path, and the next sync skipped it: never searchable, its
    name taken."""
    with pytest.raises(ValueError, match=why):
        eng.save("too-big", desc, body)
    assert not (eng.notes_dir / "too-big.md").exists()


def test_concurrent_saves_of_one_name_create_one_file(eng):
    results = []

    def go(i):
        try:
            eng.save("race", f"Racer {i} wins.", "")
            results.append("ok")
        except NoteExistsError:
            results.append("exists")

    ts = [threading.Thread(target=go, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert sorted(results) == ["exists"] * 3 + ["ok"]


def test_lint_reports_each_kind_and_edits_nothing(tmp_path):
    notes = tmp_path / "notes"
    note(notes, "fine", "Deploys happen on Tuesdays.", "Only on Tuesdays.")
    (notes / "undescribed.md").write_text("---\nname: undescribed\n---\nSome body text.\n")
    note(notes, "twin-a", "Backups run nightly at two in the morning.")
    note(notes, "twin-b", "Backups run nightly at two in the morning!")
    note(notes / "sub", "fine", "Another note that is also called fine.")
    (notes / "bin.md").write_bytes(b"\x00\x01")
    (notes / "nameless.md").write_text("---\ndescription: A note whose frontmatter names nothing.\n---\nBody.\n")
    (notes / "bare.md").write_text("A note with no frontmatter at all.\n")
    before = snapshot(notes)
    e = MemoryEngine(notes, index_path=tmp_path / "i.sqlite")  # real MiniLM: "near" is semantic
    issues = e.lint()
    assert all(isinstance(i, LintIssue) for i in issues)
    kinds = {(i.kind, i.path) for i in issues}
    assert ("no-description", "undescribed.md") in kinds
    assert ("name-collision", "sub/fine.md") in kinds
    assert ("near-duplicate", "twin-a.md") in kinds
    assert not any(i.kind == "near-duplicate" and "fine" in i.path for i in issues)
    assert ("skipped", "bin.md") in kinds
    assert ("no-name", "nameless.md") in kinds and ("no-name", "bare.md") in kinds and ("no-name", "fine.md") not in kinds
    assert snapshot(notes) == before


def test_lint_flags_a_body_fact_the_description_misses(tmp_path):
    from memory.embedder import get_embedder

    emb = get_embedder()
    assert emb.wait(120)
    notes = tmp_path / "notes"
    note(notes, "two-facts", "The API gateway times out requests after 30 seconds.",
         "Requests longer than 30 seconds are cut by the gateway. "
         "Separately, the office coffee machine descales every Thursday morning.")
    note(notes, "one-fact", "The API gateway rejects bodies larger than 10 MB.",
         "Uploads above 10 MB get HTTP 413 from the gateway.")
    e = MemoryEngine(notes, index_path=tmp_path / "i.sqlite")
    gaps = [i.path for i in e.lint() if i.kind == "description-gap"]
    assert gaps == ["two-facts.md"]


def test_watch_resyncs_on_change_and_stops(eng):
    stop = threading.Event()
    reports = []
    seen = threading.Event()

    def on_sync(rep):
        reports.append(rep)
        if rep.added:
            seen.set()

    watching = threading.Event()
    t = threading.Thread(target=eng.watch, args=(stop, on_sync),
                         kwargs={"on_status": lambda state, _d: state == "watching" and watching.set()}, daemon=True)
    t.start()
    assert watching.wait(15), "the watcher never started watching"
    assert reports, "no initial sync"
    note(eng.notes_dir, "watched", "A note written while watching.")
    assert seen.wait(15), "watch did not pick up the new note"
    assert eng.store.query("SELECT 1 FROM notes WHERE name = 'watched'")
    stop.set()
    t.join(10)
    assert not t.is_alive()


def test_status_reports_model_binding_and_counts(eng):
    st = eng.status()
    assert st.model_state == "ready" and st.model == "test-hash"
    assert st.notes == 10 and st.binding in {"sqlite3", "sqlean", "pysqlite3"}
    assert st.last_sync is not None and st.index_path == eng.index_path


def test_watch_waits_for_a_missing_folder_and_stops(tmp_path):
    e = MemoryEngine(tmp_path / "later", index_path=tmp_path / "i.sqlite", model=HashEmbedder())
    stop = threading.Event()
    missing = threading.Event()
    t = threading.Thread(target=e.watch, args=(stop,),
                         kwargs={"on_status": lambda state, _d: state == "missing" and missing.set()}, daemon=True)
    t.start()
    assert missing.wait(15)  # it says the folder is missing and waits for it
    assert t.is_alive()  # waiting, not crashed
    stop.set()
    t.join(5)
    assert not t.is_alive()


def test_sync_reports_embedding_progress(tmp_path):
    notes = copy_fixture("seed", tmp_path / "notes")
    e = MemoryEngine(notes, index_path=tmp_path / "i.sqlite", model=HashEmbedder())
    calls = []
    rep = e.sync(progress=lambda done, total: calls.append((done, total)))
    assert calls and calls[-1] == (rep.embedded, rep.embedded)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)
