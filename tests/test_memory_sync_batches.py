"""Sync under load: cold indexes commit in batches, one writer embeds, the WAL stays bounded,
and one-off searches skip the folder walk while a watcher keeps the index in step."""

from __future__ import annotations

import os
import threading

import pytest
from test_memory_support import HashEmbedder, note

import memory.engine as engine_mod
from memory import MemoryEngine


def make_notes(folder, n):
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        note(folder, f"bulk-{i:04d}", f"Bulk note number {i} about service {i % 7}.",
             f"The body of bulk note {i}. It mentions port {6000 + i}.")
    return folder


class Stop(Exception):
    pass


def test_interrupted_cold_index_keeps_the_batches_it_committed(tmp_path, monkeypatch):
    notes = make_notes(tmp_path / "notes", 23)
    monkeypatch.setattr(engine_mod, "SYNC_BATCH_NOTES", 5)
    monkeypatch.setattr(engine_mod, "ENCODE_STEP", 4)
    emb = HashEmbedder()
    eng = MemoryEngine(notes, index_path=tmp_path / "idx.sqlite", model=emb)
    total_texts = []

    def progress(done, total):
        total_texts.append(total)
        if done >= 2 * 5 * 2 + 1:  # past two whole batches (5 notes × 2 texts each)
            raise Stop

    with pytest.raises(Stop):
        eng.sync(progress=progress)
    eng.close()
    again = MemoryEngine(notes, index_path=tmp_path / "idx.sqlite", model=HashEmbedder())
    kept = again.store.note_count()
    assert kept == 10  # both committed batches survived the interruption
    assert len(again.search("bulk note number 3", 3)) == 3
    rep = again.sync()
    assert (rep.added, rep.updated) == (13, 0)  # only the rest is embedded
    assert rep.embedded == 26 and again.store.note_count() == 23


def test_each_batch_is_searchable_and_progress_counts_all_texts(tmp_path, monkeypatch):
    notes = make_notes(tmp_path / "notes", 12)
    monkeypatch.setattr(engine_mod, "SYNC_BATCH_NOTES", 5)
    eng = MemoryEngine(notes, index_path=tmp_path / "idx.sqlite", model=HashEmbedder())
    seen = []
    rep = eng.sync(progress=lambda d, t: seen.append((d, t)))
    assert rep.added == 12 and rep.embedded == 24
    assert {t for _, t in seen} == {24} and seen[-1] == (24, 24)
    assert len(eng.mirror) == 24 and eng.store.generation() >= 3  # three transactions


class BlockingEmbedder(HashEmbedder):
    """Blocks inside ``encode`` until released; records that it got there."""

    def __init__(self):
        super().__init__()
        self.entered, self.release = threading.Event(), threading.Event()

    def encode(self, texts):
        self.entered.set()
        assert self.release.wait(30)
        return super().encode(texts)


def test_concurrent_syncs_embed_new_notes_once(tmp_path):
    """Issue 12: two `memory save`/sync processes must not both embed the same new notes.
    The second sync waits on the index's sync lock (an OS file lock, so processes too) and then
    finds them indexed."""
    notes = make_notes(tmp_path / "notes", 6)
    first, second = BlockingEmbedder(), BlockingEmbedder()
    a = MemoryEngine(notes, index_path=tmp_path / "idx.sqlite", model=first)
    b = MemoryEngine(notes, index_path=tmp_path / "idx.sqlite", model=second)
    reports = {}
    ta = threading.Thread(target=lambda: reports.setdefault("a", a.sync()))
    ta.start()
    assert first.entered.wait(10)  # a has planned and is embedding
    tb = threading.Thread(target=lambda: reports.setdefault("b", b.sync()))
    tb.start()
    second.release.set()
    # without the lock, b plans the same six notes now and enters encode
    embedded_meanwhile = second.entered.wait(1.0)
    first.release.set()
    ta.join(10)
    tb.join(10)
    assert not embedded_meanwhile, "the second sync embedded while the first was embedding"
    assert reports["a"].added == 6 and reports["a"].embedded == 12
    assert reports["b"].added == 0 and reports["b"].embedded == 0 and second.calls == []


def test_a_big_sync_truncates_the_wal(tmp_path, monkeypatch):
    notes = make_notes(tmp_path / "notes", 30)
    monkeypatch.setattr(engine_mod, "CHECKPOINT_AFTER_TEXTS", 20)
    eng = MemoryEngine(notes, index_path=tmp_path / "idx.sqlite", model=HashEmbedder())
    assert eng.store.query("PRAGMA journal_size_limit")[0][0] == 32 * 2**20
    eng.sync()
    wal = tmp_path / "idx.sqlite-wal"
    assert not wal.exists() or wal.stat().st_size == 0
    note(notes, "one-more", "A small sync leaves the WAL to SQLite's auto-checkpoint.")
    eng.sync()
    assert wal.stat().st_size > 0


def test_one_off_search_skips_the_walk_while_a_watcher_keeps_the_index(tmp_path, monkeypatch):
    notes = make_notes(tmp_path / "notes", 4)
    index = tmp_path / "idx.sqlite"
    app = MemoryEngine(notes, index_path=index, model=HashEmbedder())
    cli = MemoryEngine(notes, index_path=index, model=HashEmbedder())
    assert not cli.kept_in_step()
    stop, synced = threading.Event(), threading.Event()
    t = threading.Thread(target=app.watch, args=(stop, lambda rep: synced.set()), daemon=True)
    t.start()
    try:
        assert synced.wait(10)
        assert cli.kept_in_step()
        other = MemoryEngine(tmp_path / "elsewhere", index_path=index, model=HashEmbedder())
        assert not other.kept_in_step()  # a watcher of another folder says nothing about this one
    finally:
        stop.set()
        t.join(10)
    assert not t.is_alive() and not cli.kept_in_step()


def test_cli_search_does_not_walk_when_watched(tmp_path, monkeypatch, capsys):
    from test_memory_cli import run

    notes = make_notes(tmp_path / "notes", 3)
    index = tmp_path / "idx.sqlite"
    assert run(["index", "--notes", str(notes), "--index", str(index)], capsys)[0] == 0
    walks = []
    real_walk = engine_mod.walk
    monkeypatch.setattr(engine_mod, "walk", lambda *a, **k: walks.append(a) or real_walk(*a, **k))
    run(["search", "bulk note", "--notes", str(notes), "--index", str(index)], capsys)
    assert len(walks) == 1  # not watched: the search syncs first
    monkeypatch.setattr(engine_mod.MemoryEngine, "kept_in_step", lambda self: True)
    code, out, _ = run(["search", "bulk note", "--notes", str(notes), "--index", str(index)], capsys)
    assert code == 0 and "bulk-000" in out and len(walks) == 1


def test_cli_rebuild_replaces_an_index_of_another_model(tmp_path, capsys, monkeypatch):
    from test_memory_cli import run

    notes = make_notes(tmp_path / "notes", 3)
    index = tmp_path / "idx.sqlite"
    eng = MemoryEngine(notes, index_path=index, model=HashEmbedder("old-model", 16))
    eng.sync()
    eng.close()
    code, _, err = run(["search", "bulk", "--notes", str(notes), "--index", str(index)], capsys)
    assert code == 2 and "old-model (dim 16)" in err and "Traceback" not in err
    code, out, _ = run(["index", "--rebuild", "--notes", str(notes), "--index", str(index)], capsys)
    assert code == 0 and "3 added" in out
    code, out, _ = run(["search", "bulk", "--notes", str(notes), "--index", str(index)], capsys)
    assert code == 0 and "bulk-00" in out
    assert os.path.exists(index)
