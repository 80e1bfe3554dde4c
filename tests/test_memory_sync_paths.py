"""Targeted sync (``sync(paths=...)``, what ``watch`` runs), the cheaper full walk, the
per-note row index of the vector mirror and the query-vector cache. Behaviour, not timing."""

from __future__ import annotations

import os
import shutil
import threading

import numpy as np
import pytest
from test_memory_support import HashEmbedder, copy_fixture, note

from memory import MemoryEngine
from memory.notes import scan, scan_paths, walk


def make(tmp_path, emb=None):
    emb = emb or HashEmbedder()
    return MemoryEngine(tmp_path / "notes", index_path=tmp_path / "idx.sqlite", model=emb), emb


def state(engine: MemoryEngine) -> dict:
    """Everything a sync decides: rows (path → name, description, body, hash, mtime, size),
    vectors per path, FTS rows and the skipped table."""
    q = engine.store.query
    rows = {r[0]: r[1:] for r in q(
        "SELECT path, name, description, body, hash, mtime_ns, size, priority FROM notes")}
    vecs = {}
    for path, kind, emb in q("SELECT n.path, c.kind, v.embedding FROM notes n JOIN chunks c ON "
                             "c.note_id = n.id JOIN vec_chunks v ON v.rowid = c.id"):
        vecs[(path, kind)] = bytes(emb)
    fts = sorted(q("SELECT f.rowid = n.id, f.body FROM notes_fts f JOIN notes n ON n.id = f.rowid"))
    return {"rows": rows, "vecs": vecs, "fts": fts, "fts_n": q("SELECT count(*) FROM notes_fts")[0][0],
            "skipped": sorted(q("SELECT path, reason FROM skipped"))}


def fresh_state(tmp_path, notes_dir) -> dict:
    other = MemoryEngine(notes_dir, index_path=tmp_path / "fresh.sqlite", model=HashEmbedder())
    other.sync()
    st = state(other)
    other.close()
    (tmp_path / "fresh.sqlite").unlink()
    return st


@pytest.fixture
def seeded(tmp_path):
    copy_fixture("seed", tmp_path / "notes")
    eng, emb = make(tmp_path)
    eng.sync()
    emb.calls.clear()
    return eng, emb


def read_files(monkeypatch):
    """Record which note files a sync reads."""
    import memory.sync as engine_mod  # plan_sync reads the files

    seen = []
    real = engine_mod.read_note

    def spy(entry):
        seen.append(entry.rel)
        return real(entry)

    monkeypatch.setattr(engine_mod, "read_note", spy)
    return seen


def test_targeted_sync_examines_only_the_given_paths(seeded, monkeypatch):
    eng, emb = seeded
    notes = eng.notes_dir
    files = sorted(p.name for p in notes.glob("*.md"))
    a, b = notes / files[0], notes / files[1]
    with open(a, "a") as fh:
        fh.write("An added sentence about the ingress controller.\n")
    with open(b, "a") as fh:
        fh.write("Another edit nobody reported.\n")
    reads = read_files(monkeypatch)
    rep = eng.sync(paths=[a])
    assert (rep.updated, rep.added, rep.removed) == (1, 0, 0)
    assert reads == [a.name]
    assert emb.embedded >= 1 and all(t.startswith(a.stem.replace("-", " ")) for c in emb.calls for t in c)
    # the unreported edit is still there for the next full sync to find
    rep = eng.sync()
    assert (rep.updated, rep.added, rep.removed) == (1, 0, 0)
    assert eng.sync().changed is False


def test_targeted_sync_accepts_relative_paths_and_ignores_outside_and_hidden(seeded, tmp_path):
    eng, emb = seeded
    notes = eng.notes_dir
    p = note(notes, "fresh-one", "A note added later about quotas.", "Quota is 5 GB.")
    outside = note(tmp_path / "elsewhere", "stray", "Not in the notes folder.")
    hidden = note(notes / ".cache", "hidden", "Inside a hidden folder.")
    rep = eng.sync(paths=[outside, hidden, "fresh-one.md"])
    assert (rep.added, rep.updated, rep.removed) == (1, 0, 0)
    assert eng.store.query("SELECT path FROM notes WHERE name = 'fresh-one'") == [("fresh-one.md",)]
    assert not eng.store.query("SELECT 1 FROM notes WHERE name IN ('stray', 'hidden')")
    rep = eng.sync(paths=[outside])
    assert not rep.changed and rep.embedded == 0
    assert p.exists()
    # the folder given through a symlink to it
    link = tmp_path / "notes-link"
    link.symlink_to(notes)
    p2 = note(notes, "via-link", "Reported through a symlinked folder path.")
    rep = eng.sync(paths=[link / p2.name])
    assert rep.added == 1 and eng.store.query("SELECT path FROM notes WHERE name = 'via-link'")


def test_targeted_sync_removes_deleted_and_renames_without_embedding(seeded):
    eng, emb = seeded
    notes = eng.notes_dir
    files = sorted(notes.glob("*.md"))
    gone, moved = files[0], files[1]
    gone.unlink()
    target = notes / "sub" / "moved-here.md"
    target.parent.mkdir()
    os.rename(moved, target)
    rep = eng.sync(paths=[gone, moved, target])
    assert (rep.removed, rep.renamed, rep.added, rep.updated) == (1, 1, 0, 0)
    assert emb.embedded == 0
    paths = {r[0] for r in eng.store.query("SELECT path FROM notes")}
    assert gone.name not in paths and moved.name not in paths and "sub/moved-here.md" in paths


def test_targeted_sync_of_folders_added_and_removed(seeded, tmp_path):
    eng, emb = seeded
    notes = eng.notes_dir
    staging = tmp_path / "staging"
    note(staging / "deep", "folder-a", "First note of a folder moved in.", "Alpha.")
    note(staging, "folder-b", "Second note of a folder moved in.", "Beta.")
    os.rename(staging, notes / "team")
    rep = eng.sync(paths=[notes / "team"])  # watchfiles reports only the folder
    assert rep.added == 2
    assert {r[0] for r in eng.store.query("SELECT path FROM notes WHERE path LIKE 'team/%'")} == \
        {"team/deep/folder-a.md", "team/folder-b.md"}
    # a sibling whose name starts like the folder is out of scope
    note(notes / "team2", "lookalike", "Not part of the removed folder.")
    eng.sync()
    shutil.rmtree(notes / "team")
    rep = eng.sync(paths=[notes / "team"])
    assert rep.removed == 2
    assert eng.store.query("SELECT path FROM notes WHERE path LIKE 'team2/%'") == [("team2/lookalike.md",)]
    assert state(eng) == fresh_state(tmp_path, notes)


def test_targeted_sync_skips_bad_files_and_keeps_other_skips(tmp_path):
    notes = copy_fixture("seed", tmp_path / "notes")
    (notes / "broken-one.md").write_text("---\nname: [unclosed\n---\nbody\n")
    eng, _ = make(tmp_path)
    eng.sync()
    assert [p for p, _ in eng.sync().skipped] == ["broken-one.md"]
    victim = sorted(notes.glob("*.md"))[0]
    name = victim.name if victim.name != "broken-one.md" else sorted(notes.glob("*.md"))[1].name
    (notes / name).write_bytes(b"\x00\x01binary")
    rep = eng.sync(paths=[notes / name])
    assert rep.removed == 1
    assert [p for p, _ in rep.skipped] == sorted(["broken-one.md", name])
    assert dict(rep.skipped)[name].startswith("binary")
    # fixed again: indexed, its skip gone, the other skip kept
    note(notes, name[:-3], "Repaired note.", "Fine now.")
    rep = eng.sync(paths=[notes / name])
    assert rep.added == 1 and [p for p, _ in rep.skipped] == ["broken-one.md"]
    assert state(eng) == fresh_state(tmp_path, notes)


def test_targeted_sync_of_the_folder_itself_is_a_full_sync(seeded):
    eng, emb = seeded
    notes = eng.notes_dir
    for p in sorted(notes.glob("*.md"))[:2]:
        with open(p, "a") as fh:
            fh.write("Edited.\n")
    rep = eng.sync(paths=[notes])
    assert rep.updated == 2 and rep.unchanged == 8


def test_random_targeted_syncs_match_a_fresh_index(tmp_path):
    """Edits, adds, deletes, renames and folder moves, each reported by path: the index ends
    exactly as a fresh full index of the folder, and search answers the same."""
    import random

    notes = copy_fixture("seed", tmp_path / "notes")
    eng, _ = make(tmp_path)
    eng.sync()
    rng = random.Random(7)
    for step in range(40):
        files = sorted(p for p in notes.rglob("*.md"))
        op = rng.choice(["edit", "add", "delete", "rename", "move-folder"])
        changed = []
        if op == "edit" and files:
            p = rng.choice(files)
            with open(p, "a") as fh:
                fh.write(f"Step {step} adds port {6000 + step}.\n")
            changed = [p]
        elif op == "add":
            changed = [note(notes / rng.choice(["", "x", "x/y"]), f"n{step}",
                            f"Note {step} about service {step}.", f"Body {step}.")]
        elif op == "delete" and files:
            p = rng.choice(files)
            p.unlink()
            changed = [p]
        elif op == "rename" and files:
            p = rng.choice(files)
            dst = p.with_name(f"r{step}-{p.name}")
            os.rename(p, dst)
            changed = [p, dst]
        elif op == "move-folder" and (notes / "x").exists():
            dst = notes / f"z{step}"
            os.rename(notes / "x", dst)
            changed = [notes / "x", dst]
        eng.sync(paths=changed)
    assert state(eng) == fresh_state(tmp_path, notes)
    assert eng.sync().changed is False
    other = MemoryEngine(notes, index_path=tmp_path / "other.sqlite", model=HashEmbedder())
    other.sync()
    # the patched in-memory mirror gives every note the cosine a fresh index gives it (search
    # order itself may differ on exact ties, which break by note id / row order)
    for q in ["port 6010", "service", "deploy", "Body 12"]:
        cos = []
        for e in (eng, other):
            e._fresh_mirror()
            names = dict(e.store.query("SELECT id, name FROM notes"))
            _, cos_of = e.mirror.top_notes(e.embed_query(q), 5)
            cos.append({names[i]: round(c, 5) for i, c in cos_of(list(names)).items()})
        assert cos[0] == cos[1]


def test_walk_and_scan_paths_agree_with_scan(tmp_path):
    root = tmp_path / "notes"
    (root / "sub" / "deep").mkdir(parents=True)
    (root / "a.md").write_text("x")
    (root / "sub" / "deep" / "b.md").write_text("xy")
    (root / "MEMORY.md").write_text("index")
    (root / "dir.md").mkdir()
    (root / "real").mkdir()
    (root / "real" / "c.md").write_text("c")
    (root / "linked").symlink_to(root / "real")  # symlinked folders are not followed
    (root / "inside-link.md").symlink_to(root / "a.md")
    entries, skipped = scan(root)
    raw, raw_skipped = walk(str(root))
    assert sorted((e.rel, e.mtime_ns, e.size) for e in entries) == sorted(raw)
    assert sorted(raw_skipped) == skipped
    rels = ["a.md", "sub", "dir.md", "MEMORY.md", "linked/c.md", "inside-link.md", "gone.md", "real/c.md"]
    got, got_skipped, exact, prefixes = scan_paths(root, rels)
    assert sorted(e[0] for e in got) == ["a.md", "inside-link.md", "real/c.md", "sub/deep/b.md"]
    assert got_skipped == [("dir.md", "a directory, not a note file")]
    assert "gone.md" in exact and "sub/" in prefixes and "gone.md/" not in prefixes


def test_watch_runs_targeted_syncs(tmp_path):
    notes = copy_fixture("seed", tmp_path / "notes")
    eng, _ = make(tmp_path)
    calls = []
    real = eng.sync

    def spy(progress=None, paths=None):
        calls.append(None if paths is None else [str(p) for p in paths])
        return real(progress, paths=paths)

    eng.sync = spy
    stop = threading.Event()
    seen = threading.Event()
    watching = threading.Event()
    t = threading.Thread(target=eng.watch, args=(stop, lambda rep: len(calls) > 1 and rep.added and seen.set()),
                         kwargs={"on_status": lambda state, _d: state == "watching" and watching.set()}, daemon=True)
    t.start()
    assert watching.wait(15), "the watcher never started watching"
    p = note(notes, "watched-two", "Written while watching.")
    assert seen.wait(15), "watch did not pick up the new note"
    stop.set()
    t.join(10)
    assert calls[0] is None  # the first sync walks everything
    assert any(c and str(p) in c for c in calls[1:]), calls


@pytest.fixture(params=["exact scan", "compact first stage"])
def first_stage(request, monkeypatch):
    """Run a test with the vector lane's exact scan and with its compact first stage (forced on
    for these small folders: a 16-dimensional projection of the 32-dim test vectors, a
    shortlist of 4 rows)."""
    import memory.search as search_mod

    if request.param == "compact first stage":
        monkeypatch.setattr(search_mod, "FIRST_STAGE_MIN_ROWS", 1)
        monkeypatch.setattr(search_mod, "FIRST_STAGE_DIMS", 16)
        monkeypatch.setattr(search_mod, "FIRST_STAGE_MIN_SHORTLIST", 4)
    return request.param


def test_mirror_cosines_of_any_note_match_brute_force(tmp_path, first_stage):
    notes = copy_fixture("seed", tmp_path / "notes")
    eng, _ = make(tmp_path)
    eng.sync()
    files = sorted(notes.glob("*.md"))
    with open(files[0], "a") as fh:
        fh.write("A new second paragraph.\n\n" + " ".join(["word"] * 130) + "\n")
    files[1].unlink()
    eng.sync(paths=[files[0], files[1]])  # patched mirror (apply)

    def brute(qv):
        ids, note_ids, mat = eng.store.load_vectors()
        sc = mat @ qv
        best = {}
        for nid, s in zip(note_ids.tolist(), sc.tolist(), strict=False):
            best[nid] = max(best.get(nid, -2.0), s)
        return best

    all_ids = [r[0] for r in eng.store.query("SELECT id FROM notes")]
    for q in ["deploy the staging stack", "port", "database migrations"]:
        qv = eng.embed_query(q)
        want = brute(qv)
        for mirror_state in ("patched", "reloaded"):
            if mirror_state == "reloaded":
                eng.mirror.reload(eng.store)
            ranked, cos_of = eng.mirror.top_notes(qv, 50)
            got = cos_of(all_ids + [10**9])
            assert got[10**9] == 0.0
            for nid in all_ids:
                assert got[nid] == pytest.approx(want[nid], abs=1e-6)
            for nid, cos in ranked:  # every cosine returned is exact
                assert cos == pytest.approx(want[nid], abs=1e-6)
            if first_stage == "exact scan":
                assert [n for n, _ in ranked] == sorted(want, key=lambda n: -want[n])[:len(ranked)]
            else:  # the shortlist is approximate; the best note by its exact cosine is among the ranked
                assert eng.mirror._proj is not None
                assert [n for n, _ in ranked] == sorted((n for n, _ in ranked), key=lambda n: -want[n])


def test_a_new_or_edited_note_is_found_the_moment_its_sync_commits(tmp_path, first_stage):
    """The compact first stage must not hide a note written after the mirror was loaded: its
    rows are projected when the sync patches the mirror."""
    notes = copy_fixture("seed", tmp_path / "notes")
    eng, emb = make(tmp_path)
    eng.sync()
    eng.mirror.reload(eng.store)  # loaded (basis fitted) before the writes below
    eng.search("warm the mirror", 3)
    note(notes, "zebra-crossing", "Zebra crossing stripes are repainted every spring.")
    eng.sync(paths=[notes / "zebra-crossing.md"])
    assert eng.search("zebra crossing stripes repainted spring", 1)[0].name == "zebra-crossing"
    with open(notes / "oncall.md", "a") as fh:
        fh.write("\nThe pager rotation now includes the quokka sanctuary keepers.\n")
    eng.sync(paths=[notes / "oncall.md"])
    hits = eng.search("pager rotation quokka sanctuary keepers", 1)
    assert hits[0].name == "oncall"
    # the vector lane alone, queried with the edited note's new body vector, finds it first
    from memory.text import note_texts

    nid, name, desc, body = eng.store.query(
        "SELECT id, name, description, body FROM notes WHERE name = 'oncall'")[0]
    qv = emb.encode([note_texts(name, desc, body)[0][-1]])[0]
    ranked, _ = eng.mirror.top_notes(qv, 1)
    assert ranked[0] == (nid, pytest.approx(1.0, abs=1e-5))
    m = eng.mirror
    if m._proj is not None:  # every live row's projection is current
        live = np.flatnonzero(m._notes[: m._n] >= 0)
        assert np.allclose(m._low[live], (m._mat[live] - m._center) @ m._proj, atol=1e-5)


@pytest.mark.parametrize("layout", ["random", "title rows low, body rows high", "ties"])
def test_best_rows_holds_the_true_top_k_and_stays_close_to_k(layout):
    """The shortlist's threshold (read off a sample) never drops one of the k best rows, and
    keeps well under 2k of them — also when a note's rows alternate low/high (an even sample
    stride once saw only titles and fell back to the slow partition half the time)."""
    from memory.search import _best_rows

    rng = np.random.default_rng(7)
    n, k = 200_000, 2000
    scores = rng.normal(0.2, 0.1, n).astype(np.float32)
    if layout.startswith("title"):
        scores[0::2] -= 0.15  # titles
    elif layout == "ties":
        scores = np.round(scores, 2)
    rows = _best_rows(scores, k)
    assert np.all(np.diff(rows) > 0)  # sorted, no repeats
    top = np.argpartition(scores, n - k)[n - k:]
    assert set(top.tolist()) <= set(rows.tolist()) or layout == "ties"
    assert np.sort(scores[rows])[-k:].min() >= np.sort(scores)[-k]  # the k best scores are all there
    assert k <= len(rows) < 2 * k or layout == "ties"
    assert _best_rows(scores[:10], 20).tolist() == list(range(10))


def test_the_two_lanes_side_by_side_give_what_they_give_one_after_the_other(tmp_path, monkeypatch):
    """A large index runs the keyword lane beside the vector lane (PARALLEL_LANES_ROWS): the
    ranking is the same as the lanes run in turn."""
    import memory.engine as engine_mod

    copy_fixture("seed", tmp_path / "notes")
    eng, _ = make(tmp_path)
    eng.sync()
    queries = ["deploy the staging stack", "which port", "database migrations", "ship-v2"]
    vectors = [eng.embed_query(q) for q in queries]
    serial = [[h.name for h in eng.search(q, 5, query_vector=v)] for q, v in zip(queries, vectors, strict=True)]
    monkeypatch.setattr(engine_mod, "PARALLEL_LANES_ROWS", 1)
    side = [[h.name for h in eng.search(q, 5, query_vector=v)] for q, v in zip(queries, vectors, strict=True)]
    assert side == serial and any(serial)
