"""``MemoryEngine``: the façade the cockpit uses (see docs/ARCHITECTURE.md, "memory API").

All methods block; async callers use ``await asyncio.to_thread(engine.method, ...)``. One engine
may be shared by many threads (SQLite calls serialise on a lock; embedding on the model lock).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from filelock import FileLock, Timeout

from . import lint as _lint
from . import preseed as _preseed
from .embedder import Embedder, get_embedder
from .judge import features, load_judge
from .notes import INDEX_FILE_NAMES, MAX_FRONTMATTER_CHARS, MAX_NOTE_BYTES, PARSER_VERSION, scan_paths, walk
from .paths import default_index_path
from .search import CANDIDATES, KeywordStats, VectorMirror, bm25_notes, fuse, one_blas_thread
from .selector import SHORTLIST, Selector, SelectorCandidate, SelectorResult
from .store import Store
from .sync import Applied, SyncWrite, plan_sync
from .text import bound_query, content_terms, note_texts, query_terms, snippet
from .tokens import estimate_tokens
from .types import EngineStatus, Hit, IndexModelError, LintIssue, NoteExistsError, Preseed, SyncReport

Progress = Callable[[int, int], None]
PARALLEL_LANES_ROWS = 50_000  # from this many vectors on, search runs its two lanes side by side
QUERY_CACHE_SIZE = 64  # query vectors kept by embed_query (exact text → vector)
PATH_CACHE_SIZE = 20_000  # note paths kept as Path objects for hits
ROW_CACHE_SIZE = 4096  # note rows kept for searches (per index generation; see _note_rows)

def _p(p: float | None, threshold: float) -> str:
    """A probability with the decimals that keep it apart from ``threshold`` (0.3995, not 0.40).
    (Two non-negative numbers rounded to the same decimals are printed alike exactly when
    ``round`` makes them equal: both round the exact binary value correctly.)"""
    p = p or 0.0
    for digits, apart in zip((2, 3, 4), _rounded(threshold), strict=True):
        out = f"{p:.{digits}f}"
        if out != apart:
            return out
    return f"{p:.4f}"


@functools.lru_cache(maxsize=64)
def _rounded(threshold: float) -> tuple[str, str, str]:
    return f"{threshold:.2f}", f"{threshold:.3f}", f"{threshold:.4f}"


PRIORITY_PRICED = 30  # priority notes priced for their budget per preseed (a handful fit; the rest are cut)
SYNC_BATCH_NOTES = 512  # a cold index commits every this many embedded notes (kept if stopped)
ENCODE_STEP = 1024  # texts per encode call (progress granularity; a bigger call sorts by length better)
CHECKPOINT_AFTER_TEXTS = 2000  # a sync that wrote this much truncates the WAL afterwards
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,119}$")


class MemoryEngine:
    """Notes folder ⇄ index ⇄ search/preseed.

    ``notes_dir``: the notes folder (need not exist until ``sync``/``save``).
    ``index_path``: the SQLite index file; None → :func:`memory.paths.default_index_path` (one
    file per notes folder and embedding model).
    ``model``: None (default MiniLM, resolved offline), a model name or path, or an object with
    ``model_id``, ``dim``, ``encode(texts)->(n, dim) float32``, ``wait(timeout)``, ``start()``
    (tests use this to swap models). Raises :class:`memory.IndexOpenError` when the index
    cannot be opened.
    """

    def __init__(self, notes_dir: str | os.PathLike, index_path: str | os.PathLike | None = None,
                 model=None):
        self.notes_dir = Path(notes_dir).expanduser().resolve()
        self.embedder: Embedder = model if hasattr(model, "encode") else get_embedder(model)
        self.index_path = Path(index_path).expanduser() if index_path else \
            default_index_path(self.notes_dir, self.embedder.model_id)
        self.store = Store(self.index_path)
        # one process at a time plans, embeds and writes a sync of this index (see _sync)
        self._index_lock = FileLock(f"{self.index_path}.lock")
        self.mirror = VectorMirror()
        self.keyword_stats = KeywordStats()
        self._prio: tuple[int, set[int]] = (-1, set())
        self._succ: tuple[int, dict[int, str]] = (-1, {})
        self._prio_hits: tuple[int, list[Hit]] = (-1, [])
        self._prio_pos: tuple[int, dict[str, list[int]]] = (-1, {})  # name → its places in _prio_hits
        self._count: tuple[int, int] = (-1, 0)
        self._rows_cache: tuple[int, dict] = (-1, {})
        self._row_cache: tuple[int, dict[int, tuple]] = (-1, {})  # see _note_rows
        self._sync_lock = threading.Lock()
        self._last_sync: float | None = None
        self._warnings: tuple[int, list[str]] = (-1, [])  # see index_warnings
        self._qcache: OrderedDict[tuple, np.ndarray] = OrderedDict()  # see embed_query
        self._qcache_lock = threading.Lock()
        self._side: ThreadPoolExecutor | None = None  # one lane of a query while the caller runs the other
        self.query_cache_hits = 0
        self._watching: FileLock | None = None  # held while watch() keeps the index in step
        self._model_checked = -1  # index generation whose model was checked against ours
        self._sync_started = False  # a sync has begun in this process
        self.first_report: SyncReport | None = None  # the first whole-folder sync's, in this process
        self._first_sync = threading.Event()  # … and one has ended (ok or not)
        self.watch_status: str | None = None  # set by watch(): one line for a header
        self.watch_state: str | None = None  # … and its state: "watching", "missing", "recovered"
        self._paths: dict[str, Path] = {}  # note path (relative) → absolute Path, for hits

    # ------------------------------------------------------------------ model
    def start_warmup(self) -> None:
        """Load the embedder in a background thread; returns at once."""
        self.embedder.start()

    @property
    def ready(self) -> bool:
        """True once the embedding model is loaded and, if a sync has begun in this process
        (e.g. the watcher's first full sync), once that first sync has ended: a search made
        earlier would answer from a half-built index."""
        first_sync_pending = self._sync_started and not self._first_sync.is_set()
        return bool(self.embedder.ready) and not first_sync_pending

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Block up to ``timeout`` seconds (None: no limit) for the model and for the first
        sync of this process when one has begun; True when searches are meaningful."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self.embedder.wait(timeout):
            return False
        if self._sync_started:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            return self._first_sync.wait(left)
        return True

    def similarity(self, query: str, texts: list[str]) -> list[float]:
        """Cosine (−1…1) of ``query`` to each of ``texts``, with this engine's model (blocking;
        the query vector is cached as for searches). For small sets of texts outside the index,
        e.g. the descriptions of "agent requested" rule files."""
        if not texts:
            return []
        q = self.embed_query(query)
        vecs = np.asarray(self.embedder.encode(list(texts)), np.float32)
        return [float(x) for x in vecs @ q]

    def embed_query(self, query: str) -> np.ndarray:
        """The query vector: float32 ``(dim,)``, L2-normalised. Pass it to ``search``/
        ``build_preseed`` as ``query_vector`` to time retrieval without the embedding.

        The last ``QUERY_CACHE_SIZE`` vectors are kept, keyed by the exact text (and the
        model): the spawn dialog previews the preseed of the very task text the spawn then
        uses, so the spawn's query costs no forward pass. The model runs one text on one torch
        thread (see :mod:`memory.embedder`)."""
        emb = self.embedder
        key = (getattr(emb, "model_id", None), getattr(emb, "dim", None), query)
        with self._qcache_lock:
            v = self._qcache.get(key)
            if v is not None:
                self._qcache.move_to_end(key)
                self.query_cache_hits += 1
                return v.copy()
        v = np.asarray(emb.encode([query])[0], np.float32)
        with self._qcache_lock:
            self._qcache[key] = v
            while len(self._qcache) > QUERY_CACHE_SIZE:
                self._qcache.popitem(last=False)
        return v.copy()

    # ------------------------------------------------------------------ sync
    def sync(self, progress: Progress | None = None, paths=None) -> SyncReport:
        """Bring the index in line with the notes folder, incrementally.

        A file whose mtime (ns) and size match its row is not read; a changed file whose content
        hash matches is only re-stamped; a moved file with identical content keeps its vectors
        (rename); only new or edited notes are embedded (batched, one write transaction).
        Deleted, renamed-away and now-unreadable files leave no rows. A different embedding
        model (id or dimension) than the index's re-embeds every note. ``progress(done, total)``
        is called while embedding (texts). Raises ``FileNotFoundError`` /
        ``NotADirectoryError`` when the notes folder is missing.

        ``paths``: None (default) walks the whole folder. Otherwise an iterable of file or
        folder paths (absolute, or relative to the notes folder) that changed, appeared or
        vanished — what a file watcher reports: only those (folders: their contents) are
        examined, and only index rows at those paths (or under those folders) can be updated
        or removed, so the cost does not grow with the size of the folder. A rename is seen
        when both its old and new path are given. Paths outside the notes folder or hidden are
        ignored; the notes folder itself (or a model change, or an empty index) means a full
        sync. The report's ``unchanged`` then counts only examined files; ``skipped`` is still
        the whole list.
        """
        t0 = time.perf_counter()
        if not self.notes_dir.is_dir():
            if self.notes_dir.exists():
                raise NotADirectoryError(f"notes folder {self.notes_dir} is not a folder")
            raise FileNotFoundError(f"notes folder {self.notes_dir} does not exist")
        rels = None if paths is None else self._rel_paths(paths)
        self._sync_started = True
        try:
            with self._sync_lock, self._index_lock:
                report = self._sync(progress, rels=rels)
        finally:
            self._first_sync.set()
        report.seconds = time.perf_counter() - t0
        self._last_sync = time.time()
        if self.first_report is None and rels is None:
            self.first_report = report
        return report

    def _rel_paths(self, paths) -> list[str] | None:
        """Watcher paths → POSIX paths relative to the notes folder (None: sync everything)."""
        root = str(self.notes_dir)
        out = []
        for p in paths:
            p = os.fspath(p)
            full = os.path.normpath(p if os.path.isabs(p) else os.path.join(root, p))
            if full != root and not full.startswith(root + os.sep):
                # given through a symlinked spelling of the folder? (the folder is resolved)
                head, tail = os.path.split(full)
                real = os.path.join(os.path.realpath(head), tail) if tail else os.path.realpath(full)
                if real != root and not real.startswith(root + os.sep):
                    continue  # not in the notes folder
                full = real
            if full == root:
                return None
            out.append(full[len(root) + 1:].replace(os.sep, "/"))
        return out

    def _sync(self, progress: Progress | None, rels: list[str] | None = None) -> SyncReport:
        """Plan (:func:`memory.sync.plan_sync`), embed in batches, apply each batch in its own
        transaction (:meth:`memory.store.Store.apply_sync`), patch the in-memory mirrors.
        Runs under the index's sync lock: one process at a time plans and embeds, so notes
        another process just embedded are not embedded again here."""
        rep = SyncReport()
        store, emb = self.store, self.embedder
        stored_model, _ = store.index_model()
        store.check_model(emb.model_id, emb.dim)  # IndexModelError: never mix, never replace
        # the model is only waited for when something must be embedded (or checked): a sync
        # with nothing new does not block on the warm-up
        if stored_model is None or emb.ready:
            self._need_model()
            store.check_model(emb.model_id, emb.dim)
        targeted = rels is not None and stored_model is not None
        gen_before = store.generation()
        root = str(self.notes_dir)
        scope = None
        if targeted:
            entries, scan_skipped, exact, prefixes = scan_paths(Path(root), rels)
            rows = store.rows_at(exact, prefixes)
            scope = (exact, prefixes)
        else:
            entries, scan_skipped = walk(root)
            if self._rows_cache[0] == gen_before:
                rows = self._rows_cache[1]  # nobody wrote since our last sync: no need to re-read
            else:
                rows = store.rows_all()
                self._rows_cache = (gen_before, rows)
        # an index an older parser made is read again whole, once (what a file gives changed)
        reread = not targeted and stored_model is not None and store.get_meta("parser") != PARSER_VERSION
        plan = plan_sync(root, entries, scan_skipped, rows, store.skips(), store.note_text, scope, reread)
        rep.unchanged = plan.unchanged
        rep.warnings = plan.warnings
        rep.skipped = sorted((p, s.reason) for p, s in plan.skipped.items())
        if not plan.writes and stored_model is not None:
            return rep  # nothing to write: no transaction, no generation bump

        dim = None
        if plan.to_embed or stored_model is None:
            self._need_model()
            store.check_model(emb.model_id, emb.dim)
            dim = emb.dim
        first = SyncWrite(delete=plan.gone, renames=plan.renames, touched=plan.touched,
                          skipped=plan.skipped if plan.skips_changed or stored_model is None else None,
                          parser=None if targeted else PARSER_VERSION)
        texts_total = sum(len(note_texts(n.name, n.description, n.body)[0]) for n in plan.to_embed)
        done = 0
        batches = [plan.to_embed[i: i + SYNC_BATCH_NOTES]
                   for i in range(0, len(plan.to_embed), SYNC_BATCH_NOTES)] or [[]]
        for i, batch in enumerate(batches):
            w = first if i == 0 else SyncWrite()
            texts: list[str] = []
            spans: list = []
            for n in batch:
                t, kinds = note_texts(n.name, n.description, n.body)
                spans.append((len(texts), kinds))
                texts.extend(t)
            vecs = self._encode(texts, progress, done, texts_total)
            done += len(texts)
            w.insert = [(n, kinds, vecs[start: start + len(kinds)])
                        for n, (start, kinds) in zip(batch, spans, strict=True)]
            applied = store.apply_sync(w, emb.model_id, dim)  # one transaction: kept if we stop later
            rep.embedded += len(texts)
            rep.added += applied.added_notes
            rep.updated += applied.updated_notes
            if i == 0:
                rep.removed = len(plan.gone)
                rep.renamed = len(plan.renames)
            self._after_write(applied, rows, targeted)
        if rep.embedded >= CHECKPOINT_AFTER_TEXTS or len(plan.gone) >= CHECKPOINT_AFTER_TEXTS:
            store.checkpoint()  # a big sync: fold the WAL back and truncate it
        return rep

    def _after_write(self, applied: Applied, rows: dict, targeted: bool) -> None:
        """Patch the row cache and the vector mirror with one committed batch (or drop / reload
        them when another connection wrote in between)."""
        gen0 = applied.generation
        cache_gen, cache = self._rows_cache
        if cache_gen == gen0 and (targeted or cache is rows):
            for p in applied.gone_paths:
                cache.pop(p, None)
            for r in applied.rows:
                cache[r.path] = r
            self._rows_cache = (gen0 + 1, cache)
        else:
            self._rows_cache = (-1, {})
        with self.mirror.lock:
            if self.mirror.generation == gen0:
                self.mirror.apply(applied.removed_chunks, applied.added, gen0 + 1)
            else:
                self.mirror.reload(self.store)

    def _need_model(self) -> None:
        self.embedder.wait()
        if self.embedder.dim is None:
            raise RuntimeError(f"embedding model {self.embedder.model_id!r} failed to load: "
                               f"{self.embedder.error}")

    def _encode(self, texts: list[str], progress: Progress | None, done: int = 0,
                total: int | None = None) -> np.ndarray:
        """Embed ``texts`` in steps of ``ENCODE_STEP``, calling ``progress(done + k, total)``."""
        if not texts:
            return np.zeros((0, self.embedder.dim or 0), np.float32)
        total = len(texts) if total is None else total
        out = []
        for i in range(0, len(texts), ENCODE_STEP):
            out.append(self.embedder.encode(texts[i: i + ENCODE_STEP]))
            if progress:
                progress(done + min(i + ENCODE_STEP, len(texts)), total)
        return np.concatenate(out)

    def _fresh_mirror(self) -> int:
        """Reload the mirror if another connection wrote (or it holds too many dead rows);
        returns the index generation read."""
        gen = self.store.generation()
        m = self.mirror
        if m.generation != gen or m.dead_fraction > 0.3:
            with m.lock:
                gen = self.store.generation()
                if m.generation != gen or m.dead_fraction > 0.3:
                    m.reload(self.store)
        return gen

    # ------------------------------------------------------------------ search
    def _priority_ids(self) -> set[int]:
        gen = self.mirror.generation
        if self._prio[0] != gen:
            self._prio = (gen, self.store.priority_ids())
        return self._prio[1]

    def _rank(self, query: str, query_vector: np.ndarray | None):
        """Fused candidates (best first) → ``(cands, fetch)``; ``fetch(cands)`` returns the
        rows ``{id: (id, name, description, body, priority, path)}`` of the given candidates."""
        gen = self._fresh_mirror()
        if self._model_checked != gen:  # the index's model, checked once per index generation
            self.store.check_model(self.embedder.model_id, self.embedder.dim)
            self._model_checked = gen
        def keyword_lane() -> tuple[list[int], set[int]]:
            return bm25_notes(self.store, query, stats=self.keyword_stats, generation=gen)

        if self._side is None:
            self._side = ThreadPoolExecutor(1, thread_name_prefix="cockpit-query-side")
        lane = None
        if query_vector is None:
            # the keyword lane (SQLite, the GIL released) on the side thread while this thread
            # runs the model's forward pass (one core, the GIL released) and then the vector
            # lane: the lane costs the preseed nothing on two cores, and the forward pass, the
            # longest step, starts at once instead of waiting for a thread to wake
            lane = self._side.submit(keyword_lane)
            qvec = self.embed_query(query)
        else:
            qvec = np.asarray(query_vector, np.float32)
            if len(self.mirror) >= PARALLEL_LANES_ROWS:  # the keyword lane beside the vector lane
                lane = self._side.submit(keyword_lane)
            else:
                bm25, ident = keyword_lane()
        if len(self.mirror) and qvec.shape != (self.mirror.dim,):
            if lane is not None:
                lane.result()
            raise IndexModelError(self.index_path, f"{self.store.index_model()[0]} (dim {self.mirror.dim})",
                                  f"a query vector of shape {qvec.shape}")
        with one_blas_thread():  # one scope for every mat-vec of the vector lane and the fusion
            vec, cos_of = self.mirror.top_notes(qvec, CANDIDATES)
            if lane is not None:
                bm25, ident = lane.result()
            cands = fuse(vec, bm25, ident, self._priority_ids(), cos_of)

        def fetch(some):
            return self._note_rows([c.note_id for c in some], gen)

        return cands, fetch

    def _note_rows(self, ids: list[int], gen: int) -> dict[int, tuple]:
        """``Store.note_rows`` of ``ids`` through a cache of rows kept for index generation ``gen``
        (a write moves the generation and empties it): the same notes come up task after task,
        and a row read again costs a query and new strings, whose hashes the text caches
        (:func:`memory.text.coverage`, snippets, :func:`memory.preseed.neutralise`) then
        compute again."""
        cache_gen, cache = self._row_cache
        if cache_gen != gen:
            cache = {}
            self._row_cache = (gen, cache)
        out: dict[int, tuple] = {}
        missing = []
        for i in ids:
            row = cache.get(i)
            if row is None:
                missing.append(i)
            else:
                out[i] = row
        if missing:
            got = self.store.note_rows(missing)
            if len(cache) + len(got) > ROW_CACHE_SIZE:
                cache.clear()
            cache.update(got)
            out.update(got)
        return out

    def _hit(self, c, row, query: str, with_snippet: bool = True, probability: float | None = None,
             superseded_by: str = "") -> Hit:
        """The :class:`Hit` of candidate ``c`` and its ``note_rows`` row."""
        path = self._paths.get(row[5])
        if path is None:  # a Path costs microseconds to build; the same notes come up again
            if len(self._paths) >= PATH_CACHE_SIZE:
                self._paths.clear()
            path = self._paths[row[5]] = self.notes_dir / row[5]
        # positional: name, description, snippet, priority, score, path, rank_score, keyword
        return Hit(row[1], row[2], snippet(row[3], query) if with_snippet else "",
                   bool(row[4]), max(0.0, c.cosine), path, c.fused, c.ident,
                   probability=probability, status=row[6] or "", superseded_by=superseded_by)

    def search(self, query: str, top_k: int = 5, query_vector: np.ndarray | None = None) -> list[Hit]:
        """Hybrid search → up to ``top_k`` :class:`Hit` s, best first. No relevance floor.

        Ranking (see :mod:`memory.search`): reciprocal-rank fusion of the vector lane (max cosine
        over a note's title and body-chunk vectors) and the FTS5 BM25 lane, plus a vote for notes
        holding an exact identifier of the query (``ship-v2``, ``6443``). Priority does not move a
        note (the preseed gives priority notes by rule). ``Hit.score`` is the cosine,
        clamped to 0…1. ``query_vector`` (float32 ``(dim,)``, normalised) skips embedding the
        query. Does not sync; the index must be current (``sync``/``watch``).
        """
        if not query.strip() and query_vector is None:
            return []
        query = bound_query(query)
        cands, fetch = self._rank(query, query_vector)
        rows = fetch(cands[:top_k])
        # a superseded hit names the note that replaces it (resolved as the preseed resolves it)
        successors = self._successors() if any(rows[c.note_id][7] for c in cands[:top_k]
                                                if c.note_id in rows) else {}
        return [self._hit(c, rows[c.note_id], query, superseded_by=successors.get(c.note_id, ""))
                for c in cands[:top_k] if c.note_id in rows]

    def build_preseed(self, query: str, top_k: int | None = None,
                      query_vector: np.ndarray | None = None,
                      budget_tokens: int = _preseed.DEFAULT_BUDGET_TOKENS,
                      selector: Selector | None = None,
                      line_threshold: float | None = None) -> Preseed:
        """The preseed block for a task, with what went into it (see :mod:`memory.preseed`).

        Every priority note is given as a line (within its own budget). The first
        ``judge.pool`` candidates of the ranking (by lane agreement, one per
        note name) are each judged on their own (:mod:`memory.judge`): a note whose probability
        reaches the line threshold (``line_threshold`` overrides it, for sweeps) is a line, at
        most ``top_k`` (None: ``preseed.MAX_LINES``); the next ones above the index floor go to
        the index of the rest — or the whole folder when its index fits. With a ``selector``
        (:mod:`memory.selector`) the first ``SHORTLIST`` candidates and the task go to it and
        its answer picks the lines instead (``[]``: none); when it has none (``names`` None, or
        it raised) the judge's lines are used. Lifecycle: a superseded or deprecated note is
        never a line; its successor is given in its place, first, and the old note is listed in
        the index marked as superseded. ``Preseed.left_out`` says why close candidates got no
        line.
        """
        if top_k is not None and top_k < 1:
            raise ValueError("top_k must be at least 1")
        if not query.strip():  # no task: the rule still holds, the priority notes are given
            first = self._priority_hits([], self._successors())[:PRIORITY_PRICED]
            rendered = _preseed.render_block(first, [], [], budget_tokens)
            return Preseed(rendered.text, rendered.lines, estimate_tokens(rendered.text), [])
        query = bound_query(query)
        max_lines = top_k or _preseed.MAX_LINES
        judge = load_judge()
        line_at = judge.line if line_threshold is None else line_threshold
        cands, fetch = self._rank(query, query_vector)  # by lane agreement (rrf), best first
        want = max(judge.pool, SHORTLIST if selector is not None else 0)
        n = want + 4
        rows = fetch(cands[:n])
        pool: list = []
        seen: set[str] = set()
        i = 0
        while len(pool) < want and i < len(cands):
            if i >= n:  # same-name notes were dropped: a few more rows
                rows.update(fetch(cands[n: n + 8]))
                n += 8
            c = cands[i]
            i += 1
            row = rows.get(c.note_id)
            if row is None or row[1].casefold() in seen:
                continue
            seen.add(row[1].casefold())
            pool.append(c)
        judged = pool[: judge.pool]
        probs = judge.probabilities(features(judged, rows, query_terms(query), set(content_terms(query))))
        successors = self._successors()
        body_of = {rows[c.note_id][1].casefold(): rows[c.note_id][3] for c in pool}
        considered = []
        for i, c in enumerate(pool):
            p = float(probs[i]) if i < len(probs) else 0.0
            considered.append(self._judged_hit(c, rows[c.note_id], query, p, successors))
        signals = (max((c.cosine for c in judged), default=0.0), 0.0, max((c.rrf for c in judged), default=0.0))
        result: SelectorResult | None = None
        if selector is not None:
            result = self._ask_selector(selector, query, considered[:SHORTLIST])
        if result is not None and result.names is not None:
            chosen = {name.casefold() for name in result.names}
            picked = [h for h in considered[:SHORTLIST] if h.name.casefold() in chosen]
            selected_by = "selector"
        else:
            picked = [h for h in considered[: judge.pool] if (h.probability or 0.0) >= line_at]
            picked.sort(key=lambda h: -(h.probability or 0.0))
            selected_by = "embedded"
        # a superseded decision the task is about (p at least half the threshold) brings in the
        # current one even when it is not a line itself: the task names the old way of doing it
        pulled = [h for h in considered[: judge.pool] if h not in picked and h.superseded_by
                  and (h.probability or 0.0) >= line_at / 2]
        lines, left_out, demoted = self._apply_lifecycle(picked[:max_lines] + pulled, successors, query)
        for h in picked[max_lines:]:
            left_out.append((h.name, f"p {_p(h.probability, line_at)} ≥ {line_at:g} but past the {max_lines} lines"))
        by_p = sorted((h for h in considered[: judge.pool] if h not in picked),
                      key=lambda h: -(h.probability or 0.0))
        index = demoted + [h for h in by_p if (h.probability or 0.0) >= judge.index]
        priority = self._priority_hits(considered, successors)  # (first: the whole index counts them)
        whole = self._whole_index(lines)
        if whole is not None:
            index = demoted + whole
        unpriced = priority[PRIORITY_PRICED:]  # never fit the priority budget: cut without pricing
        rendered = _preseed.render_block(
            priority[:PRIORITY_PRICED], lines, index, budget_tokens,
            fill=lambda h: dataclasses.replace(h, snippet=snippet(body_of.get(h.name.casefold(), ""), query)))
        in_index = {h.name.casefold() for h in rendered.index}
        as_lines = {h.name.casefold() for h in rendered.lines}
        for h in by_p[:8]:
            if (h.probability or 0.0) < judge.index / 2:
                continue  # not close: --explain lists every candidate anyway
            if h.name.casefold() in in_index:
                why = f"p {_p(h.probability, line_at)} < {line_at:g} (line threshold): in the index"
                left_out.append((h.name, why))
            elif h.name.casefold() not in as_lines:
                left_out.append((h.name, f"p {_p(h.probability, judge.index)} < {judge.index:g} (index floor)"))
        left_out += [(h.name, "over the block's token budget") for h in rendered.over_budget]
        cut = rendered.priority_cut + unpriced
        left_out += [(h.name, f"priority note over the {_preseed.PRIORITY_BUDGET_TOKENS}-token priority budget")
                     for h in cut[:8]]
        return Preseed(rendered.text, rendered.lines, estimate_tokens(rendered.text), considered,
                       gate_score=float(max(probs, default=0.0)), gate_signals=signals, selected_by=selected_by,
                       selector=result, index=rendered.index, left_out=left_out,
                       priority_cut=[h.name for h in cut])

    def _judged_hit(self, c, row, query: str, p: float, successors: dict[int, str]) -> Hit:
        return self._hit(c, row, query, with_snippet=False, probability=p,
                         superseded_by=successors.get(row[0], ""))

    def _apply_lifecycle(self, picked: list[Hit], successors: dict[int, str],
                         query: str) -> tuple[list[Hit], list[tuple[str, str]], list[Hit]]:
        """``(lines, left_out, demoted)``: a superseded or deprecated pick gives its line to the
        current decision its ``superseded_by`` chain ends at (put first; fetched when the ranking
        did not have it; none when the chain loops or ends at another superseded note) and goes
        to the index."""
        lines: list[Hit] = []
        left_out: list[tuple[str, str]] = []
        demoted: list[Hit] = []
        for h in picked:
            if h.status not in ("superseded", "deprecated") and not h.superseded_by:
                lines.append(h)
                continue
            demoted.append(h)
            current = self._current_decision(h, query, successors) if h.superseded_by else None
            if current is None:
                why = f"{h.status or 'superseded'}: listed in the index only"
                if h.superseded_by:
                    why = (f"superseded by {h.superseded_by}, which is not a current decision: "
                           "listed in the index only")
                left_out.append((h.name, why))
                continue
            left_out.append((h.name, f"superseded by {h.superseded_by}: its successor is given instead"))
            if all(x.name.casefold() != current.name.casefold() for x in lines):
                lines.insert(0, dataclasses.replace(current, probability=h.probability))  # given in its place
        return lines, left_out, demoted

    def _current_decision(self, h: Hit, query: str, successors: dict[int, str]) -> Hit | None:
        """The note ``h``'s successor chain ends at, when that is a current decision (not
        superseded or deprecated, no loop), else None."""
        seen = {h.name.casefold()}
        name = h.superseded_by
        for _ in range(8):
            nxt = self._hit_by_name(name, query, successors)
            if nxt is None or nxt.name.casefold() in seen:
                return None
            if nxt.status not in ("superseded", "deprecated") and not nxt.superseded_by:
                return nxt
            if not nxt.superseded_by:
                return None
            seen.add(nxt.name.casefold())
            name = nxt.superseded_by
        return None

    def _hit_by_name(self, name: str, query: str, successors: dict[int, str]) -> Hit | None:
        found = self.store.query("SELECT id FROM notes WHERE name = ? ORDER BY path LIMIT 1", (name,))
        if not found:
            return None
        row = self.store.note_rows([found[0][0]])[found[0][0]]
        from .search import Candidate

        return self._judged_hit(Candidate(row[0]), row, query, 1.0, successors)

    def _successors(self) -> dict[int, str]:
        """``{note id: successor's name}`` for every superseded note whose successor resolves to a
        note of the folder (by name, file name, or a record number such as ADR-0012), cached per
        index generation."""
        gen = self.mirror.generation
        if self._succ[0] == gen:
            return self._succ[1]
        from .lint import resolve_successors

        out = resolve_successors(self.store.lifecycles(), self.store.note_list())
        self._succ = (gen, out)
        return out

    def _priority_hits(self, considered: list[Hit], successors: dict[int, str]) -> list[Hit]:
        """Every priority note (superseded ones excluded): those the judge weighed first, most
        likely first, then the rest by name. The notes are read once per index generation."""
        gen = self.mirror.generation
        if self._prio_hits[0] != gen:
            from .search import Candidate

            rows = self.store.priority_rows()
            full = self.store.note_rows([r[0] for r in rows]) if rows else {}
            base = [dataclasses.replace(self._judged_hit(Candidate(nid), full[nid], "", 0.0, successors), priority=True)
                    for nid, _n, _d in rows
                    if nid in full and full[nid][6] not in ("superseded", "deprecated") and nid not in successors]
            self._prio_hits = (gen, base)
        base = self._prio_hits[1]
        ranked = {h.name: h for h in considered if h.priority}
        if not ranked:
            return base
        if self._prio_pos[0] != gen:
            pos: dict[str, list[int]] = {}
            for i, h in enumerate(base):
                pos.setdefault(h.name, []).append(i)
            self._prio_pos = (gen, pos)
        pos = self._prio_pos[1]
        # the ranked ones in the order of base (a name twice in base comes twice), most likely first
        at = sorted((i, name) for name in ranked for i in pos.get(name, ()))
        front = sorted((dataclasses.replace(ranked[name], priority=True) for _, name in at),
                       key=lambda h: -(h.probability or 0.0))
        return front + [h for h in base if h.name not in ranked]

    def _whole_index(self, lines: list[Hit]) -> list[Hit] | None:
        """Every note as index entries when the whole folder's index fits its budget (the way
        Claude Code loads MEMORY.md whole), else None."""
        gen = self.mirror.generation
        if self._count[0] != gen:
            self._count = (gen, self.store.note_count())
        if self._count[1] - len(self._prio_hits[1]) > _preseed.MAX_INDEX + len(lines):
            return None  # (priority notes are given by rule, never in the index)
        given = {h.name.casefold() for h in lines}
        successors = self._successors()
        hits = []
        for name, desc, prio, path in self.store.note_list():
            if name.casefold() in given or prio:
                continue
            hits.append(Hit(name, desc, "", bool(prio), 0.0, self.notes_dir / path))
        lc = {r[1].casefold(): r for r in self.store.lifecycles()}
        for i, h in enumerate(hits):
            r = lc.get(h.name.casefold())
            if r is not None:
                hits[i] = dataclasses.replace(h, status=r[3], superseded_by=successors.get(r[0], ""))
        if _preseed.index_cost(hits) > _preseed.INDEX_BUDGET_TOKENS:
            return None
        return hits

    @staticmethod
    def _ask_selector(selector: Selector, task: str, shortlist: list[Hit]) -> SelectorResult:
        """The selector's answer; an exception becomes a fall-back answer naming it."""
        t0 = time.perf_counter()
        try:
            res = selector.select(task, [SelectorCandidate(h.name, h.description) for h in shortlist])
        except Exception as exc:  # any selector failure falls back
            return SelectorResult(None, latency_ms=(time.perf_counter() - t0) * 1000,
                                  error=f"selector raised {type(exc).__name__}: {exc}")
        if not isinstance(res, SelectorResult):
            return SelectorResult(None, latency_ms=(time.perf_counter() - t0) * 1000,
                                  error=f"selector returned {type(res).__name__}, not a SelectorResult")
        return res

    def preseed(self, query: str, top_k: int | None = None) -> str:
        """Just the block of :meth:`build_preseed` ("" when nothing qualifies)."""
        return self.build_preseed(query, top_k).text

    # ------------------------------------------------------------------ save
    def save(self, name: str, description: str, body: str, priority: bool = False) -> Path:
        """Write ``<notes>/<name>.md`` atomically (temp file + hard link, so an existing file is
        never replaced) and index it. Returns the path.

        Raises ``ValueError`` for a bad name (letters, digits, ``.-_``; ≤ 120) or an empty /
        multi-line description; :class:`NoteExistsError` when a different note already has that
        name or file name. Saving the identical note again returns its path.
        """
        import frontmatter

        name, description = (name or "").strip(), (description or "").strip()
        if not _NAME_RE.match(name):
            raise ValueError(f"invalid note name {name!r}: use letters, digits, '.', '-', '_'")
        if f"{name}.md" in INDEX_FILE_NAMES:
            raise ValueError(f"invalid note name {name!r}: {name}.md is Claude Code's index file, not a note")
        if not description or len(description.splitlines()) != 1:
            raise ValueError("description must be one non-empty line")
        body = (body or "").strip()
        self.notes_dir.mkdir(parents=True, exist_ok=True)
        path = self.notes_dir / f"{name}.md"
        post = frontmatter.Post(body)
        post.metadata.update({"name": name, "description": description})
        if priority:
            post.metadata["priority"] = "high"
        text = frontmatter.dumps(post, sort_keys=False, width=1000) + "\n"
        # never write a note the indexer would then skip (its name taken, never searchable)
        if len(text.encode("utf-8")) > MAX_NOTE_BYTES:
            raise ValueError(f"the note would be larger than {MAX_NOTE_BYTES} bytes; "
                             "split it into notes of one fact each")
        if len(text) - len(body) > MAX_FRONTMATTER_CHARS:
            raise ValueError(f"the description is too long (a note's header holds at most {MAX_FRONTMATTER_CHARS} "
                             "characters); keep it to one line that says what the note is about")
        self.sync()
        same = self.store.notes_named(name)
        for p, d, b, pr in same:
            if (d, b, bool(pr)) == (description, body, bool(priority)):
                return self.notes_dir / p
        if same:
            raise NoteExistsError(f"a note named {name!r} already exists ({same[0][0]})")
        if os.path.lexists(path):
            raise NoteExistsError(f"{path} already exists")
        tmp = self.notes_dir / f".{name}.md.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            try:
                os.link(tmp, path)  # atomic, fails if path exists
            except FileExistsError:
                raise NoteExistsError(f"{path} already exists") from None
            except OSError:  # no hard links on this filesystem: reserve the name, then rename
                try:
                    os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                except FileExistsError:
                    raise NoteExistsError(f"{path} already exists") from None
                os.replace(tmp, path)
        finally:
            if tmp.exists():
                tmp.unlink()
        self.sync(paths=[path])  # the folder was just synced: only the new file to add
        return path

    # ------------------------------------------------------------------ reading notes
    def get(self, name: str) -> dict | None:
        """The whole note named ``name`` as the index holds it — ``{name, description, body,
        priority, type, path}`` (``path`` relative to the notes folder) — or None. When two
        files share a name (lint reports it), the first by path."""
        row = self.store.note_by_name(name)
        if row is None:
            return None
        n, d, b, p, t, path, status, successor = row
        out = {"name": n, "description": d, "body": b, "priority": bool(p), "type": t, "path": path}
        if status:
            out["status"] = status
        if successor:
            out["superseded_by"] = successor
        return out

    def list_notes(self) -> list[dict]:
        """Every indexed note's ``{name, description, priority, path}`` (and its lifecycle
        ``status`` and resolved ``superseded_by`` when it has them), ★ first, then by name."""
        self._fresh_mirror()  # (the successors are kept per index generation: read it first)
        successors = self._successors()  # resolved: a successor named by file name or record number too
        life = {path: (status, successors.get(i, "")) for i, _name, path, status, _s in self.store.lifecycles()}
        out = []
        for n, d, p, path in self.store.note_list():
            row: dict = {"name": n, "description": d, "priority": bool(p), "path": path}
            status, successor = life.get(path, ("", ""))
            if successor:
                row["superseded_by"] = successor
                status = status or "superseded"
            if status:
                row["status"] = status
            out.append(row)
        return out

    # ------------------------------------------------------------------ lint / watch / status
    def lint(self) -> list[LintIssue]:
        """Advice on notes to fix (never edits): see :func:`memory.lint.lint`. Syncs first."""
        self.sync()
        self._fresh_mirror()
        return _lint.lint(self)

    def _watch_lock(self) -> FileLock:
        key = hashlib.sha1(str(self.notes_dir).encode()).hexdigest()[:8]
        return FileLock(f"{self.index_path}.watch-{key}.lock", timeout=0)

    def mark_watched(self, on: bool) -> None:
        """Called by :func:`memory.watch.watch_notes`: ``True`` after a successful sync (this
        process now keeps the index in step with the folder), ``False`` after a failed one or
        when watching stops. Held as an OS file lock, so it ends with the process however it
        ends. See :meth:`kept_in_step`."""
        if on and self._watching is None:
            lock = self._watch_lock()
            try:
                lock.acquire()
            except Timeout:
                return  # another watcher already says so
            self._watching = lock
        elif not on and self._watching is not None:
            self._watching.release()
            self._watching = None

    def kept_in_step(self) -> bool:
        """True when a live watcher (:meth:`watch`, in any process: the app, a server) keeps
        this index in step with this notes folder, so a one-off search need not walk the folder
        first: the watcher re-indexes each change within its debounce (0.3 s) plus the sync.
        Why not a cheaper check of our own: folder mtimes miss edits made in place (``>>``,
        many editors), and anything finer is the walk itself (one ``stat`` per note)."""
        if self._watching is not None:
            return True
        lock = self._watch_lock()
        try:
            lock.acquire()
        except Timeout:
            return True
        lock.release()
        return False

    def watch(self, stop: threading.Event, on_sync: Callable[[SyncReport], None] | None = None,
              debounce_ms: int = 300, on_status: Callable[[str, str], None] | None = None) -> None:
        """Sync now, then re-sync whenever a note file changes, until ``stop`` is set. Blocking:
        run it in a thread. ``on_sync(report)`` is called after every sync, ``on_status(state,
        detail)`` when the watcher's state changes — ``"watching"``, ``"missing"`` (the notes
        folder is gone: waiting for it), ``"recovered"`` (re-watching after it came back, full
        resync done); both from this thread. See :mod:`memory.watch`."""
        from .watch import watch_notes

        try:
            watch_notes(self, stop, on_sync, debounce_ms, on_status)
        finally:
            self.watch_status = self.watch_state = None
            self.mark_watched(False)

    def index_warnings(self) -> list[str]:
        """What the index says of the notes folder as it is: each indexed note's parse warnings and
        each file not indexed, with why — read from the index, so every process and every restart
        says the same (the last sync's own report covers only the files it read). Kept per index
        generation."""
        gen = self.store.generation()
        if self._warnings[0] != gen:
            out = [f"{p}: {w}" for p, raw in self.store.note_warnings() for w in json.loads(raw or "[]")]
            out += [f"{p}: skipped: {why}" for p, why in self.store.skipped_files()]
            self._warnings = (gen, sorted(out))
        return list(self._warnings[1])

    def status(self) -> EngineStatus:
        """A snapshot: model state, note count, last sync time, warnings, SQLite binding."""
        n = self.store.note_count()
        return EngineStatus(
            model_state=self.embedder.state, model=self.embedder.model_id,
            model_error=getattr(self.embedder, "error", None), notes=n,
            last_sync=self._last_sync, warnings=self.index_warnings(), binding=self.store.binding,
            index_path=self.index_path, notes_dir=self.notes_dir, watch=self.watch_status,
            watch_state=self.watch_state)

    def close(self) -> None:
        """Close the index connection (the shared model stays loaded)."""
        self.mark_watched(False)
        if self._side is not None:
            self._side.shutdown(wait=True)
            self._side = None
        self.store.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
