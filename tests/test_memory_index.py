"""The index: incremental sync, no ghost rows, model changes, malformed folders, concurrency."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3  # noqa: F401 - only for type names in messages
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from test_memory_support import HashEmbedder, copy_fixture, note, snapshot

from memory import IndexModelError, IndexOpenError, MemoryEngine, binding_name
from memory.paths import default_index_path


def counts(engine: MemoryEngine) -> dict[str, int]:
    q = engine.store.query
    return {t: q(f"SELECT count(*) FROM {t}")[0][0]
            for t in ("notes", "notes_fts", "chunks", "vec_chunks")}


def make(tmp_path, emb=None, **kw):
    emb = emb or HashEmbedder()
    return MemoryEngine(tmp_path / "notes", index_path=tmp_path / "idx.sqlite", model=emb, **kw), emb


def test_binding_is_one_that_loads_extensions():
    assert binding_name in {"sqlite3", "sqlean", "pysqlite3"}


def test_first_sync_indexes_everything_and_second_embeds_nothing(tmp_path):
    copy_fixture("seed", tmp_path / "notes")
    eng, emb = make(tmp_path)
    r1 = eng.sync()
    assert (r1.added, r1.updated, r1.removed, r1.unchanged) == (10, 0, 0, 0)
    assert r1.embedded == emb.embedded > 10  # title + body chunk per note
    c = counts(eng)
    assert c["notes"] == c["notes_fts"] == 10 and c["chunks"] == c["vec_chunks"] == r1.embedded
    before = emb.embedded
    r2 = eng.sync()
    assert (r2.added, r2.updated, r2.removed, r2.unchanged, r2.embedded) == (0, 0, 0, 10, 0)
    assert emb.embedded == before
    assert eng.store.get_meta("model") == "test-hash" and eng.store.get_meta("dim") == "32"


def test_touch_without_content_change_is_not_reembedded(tmp_path):
    notes = copy_fixture("seed", tmp_path / "notes")
    eng, emb = make(tmp_path)
    eng.sync()
    before = emb.embedded
    p = notes / "oncall.md"
    os.utime(p, ns=(time.time_ns(), time.time_ns() + 5_000_000_000))
    r = eng.sync()
    assert r.unchanged == 10 and r.updated == 0 and emb.embedded == before
    # and it is re-stamped, so the next sync does not even read it
    row = eng.store.query("SELECT mtime_ns FROM notes WHERE path = 'oncall.md'")[0][0]
    assert row == p.stat().st_mtime_ns


def test_edit_delete_rename_leave_no_stale_or_ghost_rows(tmp_path):
    notes = copy_fixture("seed", tmp_path / "notes")
    eng, emb = make(tmp_path)
    eng.sync()
    # edit
    note(notes, "oncall", "The on-call rotation changes every Tuesday.", "Ask in #oncall.")
    r = eng.sync()
    assert (r.updated, r.added, r.removed) == (1, 0, 0)
    assert eng.store.query("SELECT description FROM notes WHERE path='oncall.md'")[0][0] == \
        "The on-call rotation changes every Tuesday."
    assert eng.store.query("SELECT count(*) FROM notes_fts WHERE notes_fts MATCH 'monday'")[0][0] == 0
    assert eng.search("tuesday rotation", 1, query_vector=emb.encode(["tuesday"])[0])[0].name == "oncall"
    # delete
    (notes / "logging.md").unlink()
    r = eng.sync()
    assert r.removed == 1
    c = counts(eng)
    assert c["notes"] == c["notes_fts"] == 9 and c["chunks"] == c["vec_chunks"]
    assert not eng.store.query("SELECT 1 FROM notes WHERE name = 'logging'")
    assert "logging" not in {h.name for h in eng.search("log json stdout secrets", 10)}
    # rename into a sub-folder: same content → vectors kept, path moved
    before = emb.embedded
    (notes / "archive").mkdir()
    (notes / "code-review.md").rename(notes / "archive" / "code-review.md")
    r = eng.sync()
    assert (r.renamed, r.added, r.removed) == (1, 0, 0) and emb.embedded == before
    paths = {p for (p,) in eng.store.query("SELECT path FROM notes")}
    assert "archive/code-review.md" in paths and "code-review.md" not in paths
    c = counts(eng)
    assert c["notes"] == c["notes_fts"] == 9 and c["chunks"] == c["vec_chunks"]
    # the in-memory mirror agrees with vec0 (no ghost vectors)
    assert len(eng.mirror) == c["vec_chunks"]
    hit = eng.search("review approving pull request", 1)[0]
    assert hit.path == notes / "archive" / "code-review.md"


def test_another_model_on_the_same_index_is_refused_loudly_and_changes_nothing(tmp_path):
    """Issue 12 #2: two processes, one index, two embedding models. The second one gets a
    clear IndexModelError (not a numpy shape error) from sync and search; the first one keeps
    its vectors and its answers."""
    notes = copy_fixture("seed", tmp_path / "notes")
    a, _ = make(tmp_path)
    a.sync()
    before = counts(a)
    want = [h.name for h in a.search("staging port", 3)]
    other = HashEmbedder("other-model", dim=48)
    b = MemoryEngine(notes, index_path=tmp_path / "idx.sqlite", model=other)
    with pytest.raises(IndexModelError, match=r"test-hash \(dim 32\).*other-model \(dim 48\)"):
        b.sync()
    with pytest.raises(IndexModelError, match="One index holds one model"):
        b.search("staging port", 3)
    with pytest.raises(IndexModelError):
        b.build_preseed("staging port", 3)
    assert other.embedded == 0
    assert counts(a) == before and a.store.index_model() == ("test-hash", 32)
    note(notes, "zebra-crossing", "Zebra crossing colours are black and white.")
    a.sync()
    assert [h.name for h in a.search("staging port", 3)] == want
    # same model id, another dimension: refused too
    wide = MemoryEngine(notes, index_path=tmp_path / "idx.sqlite", model=HashEmbedder(dim=64))
    with pytest.raises(IndexModelError, match="dim 64"):
        wide.sync()


def test_default_index_is_one_file_per_model(tmp_path):
    notes = copy_fixture("seed", tmp_path / "notes")
    a = MemoryEngine(notes, model=HashEmbedder())
    b = MemoryEngine(notes, model=HashEmbedder("other-model", dim=48))
    assert a.index_path != b.index_path and a.index_path.parent == b.index_path.parent
    a.sync()
    b.sync()  # no error: each model has its own index
    assert b.store.index_model() == ("other-model", 48) and a.store.index_model() == ("test-hash", 32)
    assert b.search("staging port", 1)


def test_mirror_reloads_when_another_connection_writes(tmp_path):
    notes = copy_fixture("seed", tmp_path / "notes")
    a, emb = make(tmp_path)
    b = MemoryEngine(notes, index_path=tmp_path / "idx.sqlite", model=emb)
    a.sync()
    note(notes, "zebra-crossing", "Zebra crossing colours are black and white.")
    b.sync()
    assert "zebra-crossing" in {h.name for h in a.search("zebra crossing colours", 3)}


def test_malformed_folder_indexes_good_notes_warns_and_changes_no_bytes(tmp_path):
    notes = copy_fixture("malformed", tmp_path / "notes")
    (notes / "binary.md").write_bytes(b"\x00\x01\x02PNG\x00" * 20)
    (notes / "latin1.md").write_bytes("---\nname: caf\xe9\n---\n".encode("latin-1"))
    outside = tmp_path / "secret.md"
    outside.write_text("---\nname: secret\ndescription: outside\n---\n")
    (notes / "escape.md").symlink_to(outside)
    (notes / "folder.md").mkdir()
    os.mkfifo(notes / "fifo.md")
    before = snapshot(notes)
    before_outside = outside.read_bytes()
    eng, _ = make(tmp_path)
    rep = eng.sync()
    names = {n for (n,) in eng.store.query("SELECT name FROM notes")}
    # `created: 2025-02-30` and a 240-digit `size:` are text now (plain scalars are not typed)
    assert names == {"bom-note", "crlf-note", "no-frontmatter", "2024", "nested-note", "good-note",
                     "release-date", "huge-int"}
    skipped = dict(rep.skipped)
    assert skipped["binary.md"].startswith("binary")
    assert skipped["latin1.md"].startswith("not UTF-8")
    assert skipped["escape.md"] == "symlink points outside the notes folder"
    assert skipped["folder.md"] == "a directory, not a note file"
    assert skipped["fifo.md"] == "not a regular file"
    assert "alias" in skipped["yaml-bomb.md"]
    assert skipped["unsafe-tag.md"].startswith("invalid YAML")
    assert skipped["invalid-yaml.md"].startswith("invalid YAML")
    assert "impossible-date.md" not in skipped and "huge-int.md" not in skipped
    assert "MEMORY.md" not in skipped and "MEMORY.md" not in {p for (p,) in eng.store.query("SELECT path FROM notes")}
    assert any(w.startswith("typed-yaml.md:") for w in rep.warnings)
    assert any(w.startswith("no-frontmatter.md:") for w in rep.warnings)
    # skipped files are remembered: the second sync reports them again without crashing
    rep2 = eng.sync()
    assert dict(rep2.skipped) == skipped and rep2.unchanged == 8
    assert snapshot(notes) == before and outside.read_bytes() == before_outside
    st = eng.status()
    assert st.notes == 8 and any("binary.md" in w for w in st.warnings)


def test_note_that_becomes_unreadable_loses_its_row(tmp_path):
    notes = copy_fixture("seed", tmp_path / "notes")
    eng, _ = make(tmp_path)
    eng.sync()
    (notes / "oncall.md").write_bytes(b"\x00\x00binary now")
    rep = eng.sync()
    assert rep.removed == 1 and dict(rep.skipped)["oncall.md"].startswith("binary")
    assert counts(eng)["notes"] == 9


def test_missing_notes_folder_and_bad_index_raise(tmp_path):
    eng, _ = make(tmp_path)
    with pytest.raises(FileNotFoundError):
        eng.sync()
    bad = tmp_path / "garbage.sqlite"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(IndexOpenError):
        MemoryEngine(tmp_path, index_path=bad, model=HashEmbedder())


def test_default_index_path_is_per_user_and_outside_notes(tmp_path, monkeypatch):
    data = Path(os.environ["COCKPIT_DATA_DIR"])
    p = default_index_path(tmp_path / "notes")
    assert p.parent == data / "index" and p.name.endswith(".s3.sqlite") and len(p.name.split(".")[0]) == 12
    assert default_index_path(tmp_path / "other") != p
    monkeypatch.setenv("COCKPIT_INDEX", str(tmp_path / "x.sqlite"))
    assert default_index_path(tmp_path / "notes") == tmp_path / "x.sqlite"


def test_concurrent_writers_in_threads_do_not_lock(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    emb = HashEmbedder()
    errors = []

    def worker(i):
        try:
            eng = MemoryEngine(notes, index_path=tmp_path / "idx.sqlite", model=emb)
            for j in range(5):
                eng.save(f"t{i}-n{j}", f"Thread {i} note {j}.", "body")
                eng.sync()
            eng.close()
        except Exception as exc:
            errors.append(repr(exc))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    eng = MemoryEngine(notes, index_path=tmp_path / "idx.sqlite", model=emb)
    eng.sync()
    assert counts(eng)["notes"] == 20 == counts(eng)["notes_fts"]


def _proc_writer(notes: str, index: str, i: int, q) -> None:
    try:
        eng = MemoryEngine(notes, index_path=index, model=HashEmbedder())
        for j in range(4):
            eng.save(f"p{i}-n{j}", f"Process {i} note {j}.", "body")
        eng.close()
        q.put("ok")
    except Exception as exc:
        q.put(repr(exc))


def test_concurrent_writers_in_processes_do_not_lock(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    ctx = multiprocessing.get_context("spawn")  # no fork of a process with torch threads
    q = ctx.Queue()
    procs = [ctx.Process(target=_proc_writer, args=(str(notes), str(tmp_path / "idx.sqlite"), i, q))
             for i in range(3)]
    for p in procs:
        p.start()
    results = [q.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(10)
    assert results == ["ok"] * 3
    eng = MemoryEngine(notes, index_path=tmp_path / "idx.sqlite", model=HashEmbedder())
    eng.sync()
    c = counts(eng)
    assert c["notes"] == c["notes_fts"] == 12 and c["chunks"] == c["vec_chunks"]
    assert eng.store.query("PRAGMA journal_mode")[0][0] == "wal"


def test_search_query_vector_equals_embedding_path(tmp_path):
    copy_fixture("seed", tmp_path / "notes")
    eng, emb = make(tmp_path)
    eng.sync()
    q = "staging port host"
    a = eng.search(q, 5)
    b = eng.search(q, 5, query_vector=eng.embed_query(q))
    assert [h.name for h in a] == [h.name for h in b]
    assert np.isclose(a[0].score, b[0].score)


class NotReadyEmbedder(HashEmbedder):
    """Still warming: any wait for it is recorded and fails the sync."""

    def __init__(self):
        super().__init__()
        self.ready, self.state, self.dim = False, "warming", None
        self.waits = 0

    def wait(self, timeout=None):
        self.waits += 1
        raise AssertionError("waited for the model")


def test_sync_with_nothing_to_embed_does_not_wait_for_the_model(tmp_path):
    notes = copy_fixture("seed", tmp_path / "notes")
    eng, _ = make(tmp_path)
    eng.sync()
    eng.close()
    cold = NotReadyEmbedder()
    eng2 = MemoryEngine(notes, index_path=tmp_path / "idx.sqlite", model=cold)
    (notes / "logging.md").unlink()
    os.utime(notes / "oncall.md", ns=(1, 2))
    rep = eng2.sync()  # a deletion and a touch need no embedding
    assert (rep.removed, rep.unchanged, cold.waits) == (1, 9, 0)
    note(notes, "brand-new", "Needs embedding.")
    with pytest.raises(AssertionError, match="waited"):
        eng2.sync()
    assert cold.waits == 1


def test_mirror_title_vectors_follow_sync(tmp_path):
    from memory.text import title_text

    notes = copy_fixture("seed", tmp_path / "notes")
    eng, emb = make(tmp_path)
    eng.sync()
    nid = eng.store.query("SELECT id FROM notes WHERE name = 'oncall'")[0][0]
    desc = eng.store.query("SELECT description FROM notes WHERE id = ?", (nid,))[0][0]
    want = emb.encode([title_text("oncall", desc)])[0]
    assert np.allclose(eng.mirror.title_vectors([nid])[0], want)
    (notes / "oncall.md").unlink()
    eng.sync()
    assert not eng.mirror.title_vectors([nid]).any()
    fresh = MemoryEngine(notes, index_path=tmp_path / "idx.sqlite", model=emb)
    fresh._fresh_mirror()  # loaded from vec0: same title rows as the patched mirror
    ids = [i for (i,) in eng.store.query("SELECT id FROM notes")]
    assert np.allclose(fresh.mirror.title_vectors(ids), eng.mirror.title_vectors(ids))


@pytest.mark.parametrize("query", ['"; DROP TABLE notes; --', "NEAR(a b) AND OR NOT *", "^", "   ",
                                   'name:"x" OR body:y', "a-b-c.d:e/f_g"])
def test_queries_cannot_break_fts(tmp_path, query):
    copy_fixture("seed", tmp_path / "notes")
    eng, _ = make(tmp_path)
    eng.sync()
    assert isinstance(eng.search(query, 3), list)
    assert isinstance(eng.build_preseed(query).text, str)
    assert counts(eng)["notes"] == 10


def test_not_ready_while_the_first_sync_is_running(tmp_path):
    # A spawn made while the watcher's first sync is still embedding must wait for it, or it
    # would be preseeded from a half-built (here: empty) index.
    class GatedEmbedder(HashEmbedder):
        def __init__(self):
            super().__init__()
            self.gate = threading.Event()

        def encode(self, texts):
            assert self.gate.wait(10)
            return super().encode(texts)

    copy_fixture("seed", tmp_path / "notes")
    emb = GatedEmbedder()
    eng, _ = make(tmp_path, emb)
    assert eng.ready  # no sync begun yet: searching the existing index is allowed
    worker = threading.Thread(target=eng.sync)
    worker.start()
    for _ in range(200):
        if eng._sync_started:
            break
        time.sleep(0.01)
    assert not eng.ready
    assert eng.wait_ready(timeout=0.05) is False
    emb.gate.set()
    assert eng.wait_ready(timeout=10) is True
    worker.join(10)
    assert eng.ready
    assert [h.name for h in eng.search("make ship-v2", top_k=1)] == ["deploy-command"]


def test_an_empty_file_and_an_unclosed_frontmatter_are_skipped_and_a_cased_key_is_named(tmp_path):
    """An empty file and a frontmatter never closed were indexed as notes (a session's block then
    read `- [empty]` and `- [unclosed] ---`); `Name:` was only "no name"."""
    from memory import MemoryEngine

    notes = tmp_path / "notes"
    notes.mkdir()
    note(notes, "good-one", "The cache TTL is 300 seconds.")
    (notes / "empty.md").write_bytes(b"")
    (notes / "unclosed.md").write_text("---\nname: unclosed\ndescription: never closed\nbody\n")
    (notes / "cased.md").write_text("---\nName: Weird-Case\nDescription: Only retry idempotent methods.\n---\nBody.\n")
    e = MemoryEngine(notes, index_path=tmp_path / "i.sqlite", model=HashEmbedder())
    rep = e.sync()
    skipped = dict(rep.skipped)
    assert skipped["empty.md"] == "empty file"
    assert skipped["unclosed.md"].startswith("frontmatter not closed")
    assert {r[0] for r in e.store.query("SELECT name FROM notes")} == {"good-one", "cased"}
    assert any("'Name' is not read: frontmatter keys are lower-case" in w for w in e.status().warnings)


def test_an_index_an_older_parser_made_is_read_again_once(tmp_path, monkeypatch):
    """An index built before a parser change kept what the old rules made of a file: an empty
    file stayed a note (`- [empty]` in every block) until it was edited or the index rebuilt.
    The next full sync reads every file again, once, and embeds nothing whose texts are the same."""
    from memory import MemoryEngine, engine, sync
    from memory.notes import Note

    notes = tmp_path / "notes"
    notes.mkdir()
    note(notes, "good-one", "The cache TTL is 300 seconds.")
    note(notes, "typo", "We used Drone", extra="status: supersded\nsuperseded_by: good-one\n")
    (notes / "empty.md").write_bytes(b"")
    real = sync.read_note

    def old_rules(entry):  # what the parser before version 2 made of an empty file: a note
        if entry.rel == "empty.md":
            return Note("empty.md", "empty", "", "", False, None, False, "e3b0", entry.mtime_ns, entry.size)
        return real(entry)

    monkeypatch.setattr(sync, "read_note", old_rules)
    monkeypatch.setattr(engine, "PARSER_VERSION", "1")
    index = tmp_path / "i.sqlite"

    def names(e):
        return {r[0] for r in e.store.query("SELECT name FROM notes")}

    with MemoryEngine(notes, index_path=index, model=HashEmbedder()) as old:
        old.sync()
        old.store.conn.execute("UPDATE notes SET warnings = '[]' WHERE name = 'typo'")  # (the old wording)
        old.store.conn.commit()
        assert "empty" in names(old)
    monkeypatch.undo()
    with MemoryEngine(notes, index_path=index, model=HashEmbedder()) as new:
        rep = new.sync()
        assert names(new) == {"good-one", "typo"} and dict(rep.skipped)["empty.md"] == "empty file"
        assert rep.embedded == 0  # the notes whose texts are the same keep their vectors
        assert any("typo.md: unknown status 'supersded'" in w and "still retires it" in w
                   for w in new.status().warnings)
        again = new.sync()  # once: the next sync reads nothing
        assert not again.changed and again.unchanged == 2


def test_the_list_of_notes_names_a_successor_before_any_search(tmp_path):
    """`notes://index` read first (a fresh engine on an existing index) said `(superseded)` with no
    successor: the successors were kept per index generation, read before the index was."""
    from memory import MemoryEngine

    notes = tmp_path / "notes"
    notes.mkdir()
    note(notes, "a", "The old way.", extra="status: superseded\nsuperseded_by: b\n")
    note(notes, "b", "The new way.")
    with MemoryEngine(notes, index_path=tmp_path / "i.sqlite", model=HashEmbedder()) as e:
        e.sync()
    with MemoryEngine(notes, index_path=tmp_path / "i.sqlite", model=HashEmbedder()) as fresh:
        listed = {n["name"]: n for n in fresh.list_notes()}
    assert (listed["a"]["status"], listed["a"]["superseded_by"]) == ("superseded", "b")
