"""Hybrid retrieval: vector similarity (in-memory mirror of ``vec0``) fused with FTS5 BM25.

Ranking, in order:

1. *Vector lane.* Each note has several vectors (title = name + description, and body chunks).
   A note's cosine is the max over its vectors. Computed against an in-memory numpy mirror of
   the ``vec0`` table (refreshed on sync) — one mat-vec, no SQLite call.
2. *Keyword lane.* FTS5 BM25 over name (×4), description (×2) and body (×1), query terms OR-ed,
   identifiers also as exact phrases (``ship-v2`` → ``"ship v2"``).
3. *Fusion.* Reciprocal-rank fusion ``Σ w/(K + rank)`` over the two lanes; an exact identifier
   phrase that only a few notes contain counts as an extra rank-1 vote.
4. *Priority* does not move a note in the ranking: a priority note is given to every session by
   rule (:mod:`memory.preseed`), so search orders by relevance alone (a lift used to put ★ notes
   above far better matches: 77 % of the top-5 slots against a 31 % base rate).
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass

import numpy as np

from .text import fts_terms, quote

RRF_K = 5.0
W_VEC = 1.0
W_BM25 = 1.0
W_IDENT = 1.0
IDENT_MAX_NOTES = 5          # an identifier phrase in more notes is not distinctive
CANDIDATES = 50              # per lane


@dataclass(slots=True)
class Candidate:
    """One note of the fused ranking. ``cosine``: its best cosine with the query; ``vec_rank`` /
    ``bm25_rank``: its rank in each lane (None: not in the lane's first ``CANDIDATES``);
    ``ident``: it holds a distinctive identifier of the query; ``rrf``: its reciprocal-rank
    score — how strongly the lanes agree on it (0 … 0.5 with the default weights); ``fused``:
    the order of the ranking (``rrf``; priority no longer adds to it)."""

    note_id: int
    cosine: float = 0.0
    vec_rank: int | None = None
    bm25_rank: int | None = None
    ident: bool = False
    priority: bool = False
    fused: float = 0.0
    rrf: float = 0.0


class _BlasOneThread:
    """Limit numpy's own BLAS to one thread around the mat-vecs, then restore: a threaded
    sgemv waits for a second core that a busy machine (nine sessions, a UI) does not give it —
    measured p90 1.5 ms vs 8-80 ms at 20k×384 — and its worker then spins on the CPU. The
    library controllers are looked up once (threadpoolctl, numpy's BLAS only — torch's OpenMP
    pool is not touched). Scoped, so the host process keeps its settings; nested and
    overlapping scopes (a search inside a search, two threads searching) set the thread count
    once, at the first, and restore it at the last, so a search's several mat-vecs cost two C
    calls, not two each. A no-op without threadpoolctl."""

    def __init__(self) -> None:
        self._libs: list | None = None
        self._lock = threading.Lock()
        self._depth = 0
        self._before: list = []

    def _find(self):
        try:
            from threadpoolctl import ThreadpoolController

            self._libs = [lib for lib in ThreadpoolController().select(user_api="blas").lib_controllers
                          if "numpy" in str(getattr(lib, "filepath", ""))] or \
                ThreadpoolController().select(user_api="blas").lib_controllers
        except Exception:  # optional speed-up only
            self._libs = []
        return self._libs

    def __call__(self) -> _BlasOneThread:
        return self

    def __enter__(self) -> None:
        with self._lock:
            self._depth += 1
            if self._depth > 1:
                return
            libs = self._libs if self._libs is not None else self._find()
            before = []
            try:
                for lib in libs:
                    n = lib.get_num_threads()
                    if n != 1:
                        lib.set_num_threads(1)
                        before.append((lib, n))
            except Exception:  # optional speed-up only: leave the library as it is
                pass
            self._before = before

    def __exit__(self, *exc) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth:
                return
            for lib, n in self._before:
                lib.set_num_threads(n)
            self._before = []


one_blas_thread = _BlasOneThread()


def top_order(scores: np.ndarray, k: int) -> np.ndarray:
    """Indexes of the ``k`` highest ``scores``, best first, ties in index order: the same as
    ``np.argsort(-scores, kind="stable")[:k]`` without sorting every score (a partition, then a
    sort of the ≈ ``k`` best: 0.02 ms instead of 0.08 ms for 2,000 scores)."""
    if k >= len(scores):
        return np.argsort(-scores, kind="stable")
    kth = np.partition(scores, len(scores) - k)[len(scores) - k]
    best = np.flatnonzero(scores >= kth)  # ties at the k-th score all come in, then the cut
    return best[np.lexsort((best, -scores[best]))][:k]


def _best_rows(scores: np.ndarray, k: int) -> np.ndarray:
    """About the ``k`` highest ``scores`` (at least ``k``; all when fewer), as sorted indexes.
    A threshold read off a strided sample keeps a little more than ``k`` in one comparison pass
    (0.2 ms over 200k scores, where an ``argpartition`` takes 1.5 ms); a threshold that kept too
    few falls back to the partition, so never fewer than ``k`` come back."""
    n = len(scores)
    if k >= n:
        return np.arange(n)
    # an odd stride: a note's rows sit side by side (title, then body chunks), and an even one
    # would sample only titles, whose scores run lower
    step = max(1, n // 8192) | 1
    sample = scores[::step]
    want = min(len(sample) - 1, int(len(sample) * (1 - 1.5 * k / n)))  # 1.5×: a margin over k
    if want > 0:
        threshold = np.partition(sample, want)[want]
        rows = np.flatnonzero(scores >= threshold)
        if len(rows) >= k:
            return rows
    rows = np.argpartition(scores, n - k)[n - k:]
    rows.sort()
    return rows


FIRST_STAGE_MIN_ROWS = 16_384  # from this many vectors on, the vector lane scans a compact copy first
FIRST_STAGE_DIMS = 32           # … the vectors projected on their top principal components
FIRST_STAGE_SHARE = 100         # … and re-scores exactly the best 1/this of the rows (≥ FIRST_STAGE_MIN_SHORTLIST)
FIRST_STAGE_MIN_SHORTLIST = 1_000
PCA_SAMPLE_ROWS = 20_000        # rows the projection is fitted on


def _headroom(n: int) -> int:
    """Spare rows kept after a load or a growth, so that editing a note (2-3 new rows) does not
    copy the whole matrix (300 MiB at 100k notes)."""
    return max(1024, n // 8)


class VectorMirror:
    """The ``vec0`` vectors as a float32 matrix in memory (rows with note id −1 are dead).

    ``generation`` is the index generation it reflects; :meth:`apply` patches it after this
    process's own writes, :meth:`reload` re-reads everything when someone else wrote.
    ``_note_rows`` maps a note id to its rows (title first), so per-note lookups (the cosine of a
    keyword-lane candidate, title vectors for MMR) touch only that note's rows.

    **Compact first stage** (``FIRST_STAGE_MIN_ROWS`` vectors and more: ≈ 8k notes). An exact
    scan reads 1.5 KiB per vector (30 MiB at 10k notes, 300 MiB at 100k: ≈ 1.3 and 12-25 ms on
    one core). Instead the lane scans the vectors projected on their ``FIRST_STAGE_DIMS``
    principal components (fitted at load on a sample of rows; 128 bytes per vector), keeps about
    the best 1/``FIRST_STAGE_SHARE`` of the rows (at least ``FIRST_STAGE_MIN_SHORTLIST``; a
    threshold read off a sample, :func:`_best_rows`), and ranks those by their exact float32
    cosine: every cosine returned is exact, only the shortlist is approximate. Measured on the
    100k-note bench corpus (200k MiniLM vectors, 200 queries): hit@10 of the target note equal
    to the exact scan's (0.880 both), top-10 notes overlap 0.986, the vector lane 3.5 ms instead
    of ≈ 25. (Sign-bit codes with Hamming distance were measured too: at 128-384 bits their
    shortlists lost 1-30 % of the exact top 10.) Rows added by :meth:`apply` are projected with
    the same basis at once, so a note is findable the moment its sync commits; the basis is
    refitted at the next :meth:`reload`.
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.generation = -1
        self.dim = 0
        self._n = 0
        self._mat = np.zeros((0, 1), np.float32)
        self._notes = np.zeros(0, np.int64)
        self._chunks = np.zeros(0, np.int64)
        self._row_of: dict[int, int] = {}
        self._note_rows: dict[int, list[int]] = {}  # note id → rows (title row first)
        self._by_note: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # see _note_index
        self._dead = 0
        self._center: np.ndarray | None = None  # first stage: mean vector, projection, projected rows
        self._proj: np.ndarray | None = None
        self._low = np.zeros((0, 1), np.float32)

    def reload(self, store) -> None:
        with self.lock:
            gen = store.generation()
            # spare rows at the end, so the next edits append without copying the matrix
            ids, notes, mat = store.load_vectors(spare_rows=_headroom)
            n = int(np.count_nonzero(ids >= 0))
            self._mat, self._notes, self._chunks = mat, notes, ids
            self._n = n
            self.dim = self._mat.shape[1]
            self._row_of = dict(zip(ids[:n].tolist(), range(n), strict=False))
            note_rows: dict[int, list[int]] = {}
            for i, nid in enumerate(notes[:n].tolist()):  # rows in chunk id order: title first
                rows = note_rows.get(nid)
                if rows is None:
                    note_rows[nid] = [i]
                else:
                    rows.append(i)
            self._note_rows = note_rows
            self._by_note = None
            self._dead = 0
            self._fit_first_stage()
            self.generation = gen

    def _fit_first_stage(self) -> None:
        """Fit the projection on a sample of the live rows and project every row (or drop the
        first stage below ``FIRST_STAGE_MIN_ROWS``)."""
        n = self._n
        if n < FIRST_STAGE_MIN_ROWS or self.dim <= FIRST_STAGE_DIMS:
            self._center, self._proj, self._low = None, None, np.zeros((0, 1), np.float32)
            return
        live = np.flatnonzero(self._notes[:n] >= 0)
        sample = self._mat[live[:: max(1, len(live) // PCA_SAMPLE_ROWS)]]
        center = sample.mean(axis=0)
        cov = (sample - center).T @ (sample - center)
        _, vecs = np.linalg.eigh(cov.astype(np.float64))  # ascending eigenvalues
        proj = np.ascontiguousarray(vecs[:, ::-1][:, :FIRST_STAGE_DIMS], dtype=np.float32)
        low = np.zeros((len(self._mat), FIRST_STAGE_DIMS), np.float32)
        for i in range(0, n, 65_536):  # in slices: no full-size temporary
            low[i: min(i + 65_536, n)] = (self._mat[i: min(i + 65_536, n)] - center) @ proj
        self._center, self._proj, self._low = center.astype(np.float32), proj, low

    def apply(self, removed_chunks: list[int], added: list[tuple[list[int], int, np.ndarray]],
              generation: int) -> None:
        """Drop ``removed_chunks``; append ``(chunk_ids, note_id, vectors)`` groups."""
        with self.lock:
            self._by_note = None
            for c in removed_chunks:
                r = self._row_of.pop(int(c), None)
                if r is not None:
                    nid = int(self._notes[r])
                    rows = self._note_rows.get(nid)
                    if rows is not None:
                        if r in rows:
                            rows.remove(r)
                        if not rows:
                            del self._note_rows[nid]
                    self._notes[r] = -1
                    self._mat[r] = 0.0
                    if self._proj is not None:
                        self._low[r] = 0.0
                    self._dead += 1
            total = sum(len(ids) for ids, _, _ in added)
            if total:
                dim = added[0][2].shape[1]
                if self._n == 0 or self._mat.shape[1] != dim:
                    self._mat = np.zeros((0, dim), np.float32)
                    self._notes = np.zeros(0, np.int64)
                    self._chunks = np.zeros(0, np.int64)
                    self._n = 0
                    self._row_of = {}
                    self._note_rows = {}
                    self._dead = 0
                    self.dim = dim
                    self._center, self._proj, self._low = None, None, np.zeros((0, 1), np.float32)
                need = self._n + total
                if need > len(self._mat):
                    cap = max(need + _headroom(need), int(len(self._mat) * 1.5))
                    mat = np.zeros((cap, dim), np.float32)
                    mat[: self._n] = self._mat[: self._n]
                    notes = np.full(cap, -1, np.int64)
                    notes[: self._n] = self._notes[: self._n]
                    chunks = np.full(cap, -1, np.int64)
                    chunks[: self._n] = self._chunks[: self._n]
                    self._mat, self._notes, self._chunks = mat, notes, chunks
                    if self._proj is not None:
                        low = np.zeros((cap, self._low.shape[1]), np.float32)
                        low[: self._n] = self._low[: self._n]
                        self._low = low
                for ids, note_id, vecs in added:
                    k = len(ids)
                    self._mat[self._n: self._n + k] = vecs
                    if self._proj is not None:  # findable through the first stage at once
                        assert self._center is not None
                        self._low[self._n: self._n + k] = (np.asarray(vecs, np.float32) - self._center) @ self._proj
                    self._notes[self._n: self._n + k] = note_id
                    self._chunks[self._n: self._n + k] = ids
                    for j, c in enumerate(ids):
                        self._row_of[int(c)] = self._n + j
                    if k:
                        # a note's vectors are always written together, title first
                        self._note_rows[int(note_id)] = list(range(self._n, self._n + k))
                    self._n += k
                if self._proj is None and self._n >= FIRST_STAGE_MIN_ROWS:
                    self._fit_first_stage()  # grew past the threshold (e.g. a cold index)
            self.generation = generation

    def _note_index(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(start, count, rows)``: note id ``i``'s rows are ``rows[start[i]: start[i] + count[i]]``
        (``count`` 0, or ``i`` past the arrays: none). ``_note_rows`` in arrays, so the cosines of
        a hundred notes are a few numpy calls, not a Python loop; built on first use after a
        change (≈ 3 ms at 10k notes). Call under the lock."""
        if self._by_note is None:
            lists = self._note_rows
            nids = np.fromiter(lists.keys(), np.int64, len(lists))
            lens = np.fromiter((len(r) for r in lists.values()), np.int64, len(lists))
            size = int(nids.max()) + 1 if len(nids) else 0
            start, count = np.zeros(size, np.int64), np.zeros(size, np.int64)
            count[nids] = lens
            start[nids] = np.cumsum(lens) - lens
            rows = np.fromiter(itertools.chain.from_iterable(lists.values()), np.intp, int(lens.sum()))
            self._by_note = (start, count, rows)
        return self._by_note

    def title_vectors(self, note_ids: list[int]) -> np.ndarray:
        """Title vectors (name + description) of ``note_ids``: float32 ``(len, dim)``; zeros
        for a note without vectors."""
        with self.lock:
            out = np.zeros((len(note_ids), max(self.dim, 1)), np.float32)
            for i, nid in enumerate(note_ids):
                rows = self._note_rows.get(int(nid))
                if rows:
                    out[i] = self._mat[rows[0]]
            return out

    @property
    def dead_fraction(self) -> float:
        return self._dead / self._n if self._n else 0.0

    def __len__(self) -> int:
        return self._n - self._dead

    def top_notes(self, qvec: np.ndarray, limit: int):
        """Best ``limit`` notes by max cosine over their vectors.

        ``qvec``: normalised float32 ``(dim,)``. Returns ``(ranked, cos_of)``: ``ranked`` is
        ``[(note_id, cosine)]`` descending; ``cos_of(note_ids) -> {note_id: cosine}`` gives the
        cosine of any other note from the same scores (0.0 for notes without vectors), looking
        only at those notes' rows.
        """
        with self.lock:
            n = self._n
            if n == 0:
                return [], lambda ids: {i: 0.0 for i in ids}
            q = np.ascontiguousarray(qvec, np.float32)
            mat = self._mat
            take = min(n, limit * 4)
            first_stage = self._proj is not None
            if first_stage:  # compact first stage, exact re-score (class docstring)
                assert self._center is not None and self._proj is not None
                short = min(n, max(FIRST_STAGE_MIN_SHORTLIST, n // FIRST_STAGE_SHARE, take))
                with one_blas_thread():
                    approx = self._low[:n] @ ((q - self._center) @ self._proj)
                    rows = _best_rows(approx, short)  # in memory order: the gather below reads faster
                    exact = mat[rows] @ q
                order = top_order(exact, take)
                idx, top_scores = rows[order], exact[order]

                def score_rows(r: np.ndarray) -> np.ndarray:
                    return mat[r] @ q
            else:
                scores = np.empty(n, np.float32)
                with one_blas_thread():
                    np.dot(mat[:n], q, out=scores)
                idx = top_order(scores, take)
                top_scores = scores[idx]

                def score_rows(r: np.ndarray) -> np.ndarray:
                    return scores[r]
            cand_notes = self._notes[idx]  # only the candidates' note ids (a copy)
            start, count, note_rows = self._note_index()  # as of this search: every row < n
        want = limit * 2 if first_stage else limit  # first stage: re-rank on every row below
        # each live note at its best row (its first in score order), best first
        out: list[tuple[int, float]] = []
        seen: set[int] = set()
        for nid, score in zip(cand_notes.tolist(), top_scores.tolist(), strict=True):
            if nid >= 0 and nid not in seen:  # (a dead row's note id is −1)
                seen.add(nid)
                out.append((nid, score))
                if len(out) == want:
                    break

        def cos_of(ids):
            ids = list(ids)
            got = dict.fromkeys(ids, 0.0)
            if not ids:
                return got
            arr = np.asarray(ids, np.int64)
            if arr.min() >= 0 and arr.max() < len(count):  # the usual case: no mask needed
                per = count[arr]
            else:
                inside = (arr >= 0) & (arr < len(count))
                per = np.zeros(len(arr), np.int64)
                per[inside] = count[arr[inside]]
            if per.all():  # every note has vectors (the usual case)
                c, with_rows = per, arr
            else:
                have = per > 0
                c, with_rows = per[have], arr[have]
            if len(c):
                ends = np.cumsum(c)
                begins = ends - c
                # each note's rows, one after the other: rows[start + 0 … count − 1]
                pos = np.repeat(start[with_rows] - begins, c) + np.arange(int(ends[-1]))
                with self.lock, one_blas_thread():
                    flat_scores = score_rows(note_rows[pos])
                best = np.maximum.reduceat(flat_scores, begins)
                got.update(zip(with_rows.tolist(), best.tolist(), strict=True))
            return got

        if first_stage:  # a note's cosine is the max over all its rows, shortlisted or not
            best = cos_of([nid for nid, _ in out])
            out = sorted(((nid, best[nid]) for nid, _ in out), key=lambda x: -x[1])[:limit]
        return out, cos_of


IDENT_CACHE_SIZE = 4096      # identifier phrases whose notes are kept per index generation
COMMON_MIN_NOTES = 100       # a term in more than max(this, COMMON_FRACTION × notes) notes …
COMMON_FRACTION = 0.05       # … is dropped from the BM25 query (low IDF, high cost)


class KeywordStats:
    """Per-term document counts from the FTS5 index, and the notes holding each identifier
    phrase, cached until the index generation moves. The counts are used to drop very common
    terms from the BM25 query: their IDF is low (they barely change the ranking) while scoring
    every row they match costs milliseconds at 10k notes."""

    def __init__(self) -> None:
        self.generation = -1
        self.total = 0
        self.df: dict[str, int] = {}
        self.idents: dict[str, list[int]] = {}  # identifier phrase → the notes holding it

    def refresh(self, store, generation: int) -> None:
        if generation != self.generation:
            self.generation = generation
            self.total = store.note_count()
            self.df = {}
            self.idents = {}

    def ident_ids(self, store, phrase: str) -> list[int]:
        """Notes containing the identifier ``phrase`` (at most ``IDENT_MAX_NOTES`` + 1)."""
        ids = self.idents.get(phrase)
        if ids is None:
            if len(self.idents) >= IDENT_CACHE_SIZE:
                self.idents.clear()
            ids = self.idents[phrase] = store.fts_ids(quote(phrase), IDENT_MAX_NOTES + 1)
        return ids

    def count(self, store, phrase: str, cap: int) -> int:
        """Notes containing ``phrase`` (counting stops at ``cap`` + 1)."""
        n = self.df.get(phrase)
        if n is None:
            n = store.fts_count(quote(phrase), cap)
            self.df[phrase] = n
        return n


def bm25_notes(store, query: str, limit: int = CANDIDATES,
               stats: KeywordStats | None = None,
               generation: int | None = None) -> tuple[list[int], set[int]]:
    """FTS5 lane: note ids by BM25 (best first) and the ids holding a distinctive identifier
    phrase (one found in ≤ ``IDENT_MAX_NOTES`` notes).

    Terms found in more than ``max(COMMON_MIN_NOTES, COMMON_FRACTION × notes)`` notes are left
    out of the BM25 query when ``stats`` is given (see :class:`KeywordStats`); ``generation``
    is the index generation when the caller has just read it (saves a query)."""
    items, idents = fts_terms(query)
    if not items:
        return [], set()
    if stats is not None:
        stats.refresh(store, store.generation() if generation is None else generation)
        cap = max(COMMON_MIN_NOTES, int(COMMON_FRACTION * stats.total))
        if stats.total > cap:
            items = [t for t in items if stats.count(store, t, cap) <= cap]
    ranked: list[int] = []
    if items:
        ranked = store.fts_bm25(" OR ".join(quote(t) for t in items), limit)
    ident_ids: set[int] = set()
    for phrase in idents:
        found = (stats.ident_ids(store, phrase) if stats is not None
                 else store.fts_ids(quote(phrase), IDENT_MAX_NOTES + 1))
        if 0 < len(found) <= IDENT_MAX_NOTES:
            ident_ids.update(found)
    return ranked, ident_ids


def fuse(vec: list[tuple[int, float]], bm25: list[int], ident: set[int],
         priority_ids: set[int], cos_of) -> list[Candidate]:
    """Reciprocal-rank fusion (see module docstring). ``cos_of(note_ids)`` supplies the cosine of
    notes the vector lane did not return. Returns candidates by fused score, best first.

    Each lane's vote is added as the note is met, lane by lane in the order vector, keyword,
    identifier: the same sums, in the same order, as adding them up afterwards."""
    cands: dict[int, Candidate] = {}
    for r, (nid, cos) in enumerate(vec, 1):
        cands[nid] = Candidate(nid, cos, r, rrf=W_VEC / (RRF_K + r))
    missing: list[int] = []  # notes the vector lane did not return
    for r, nid in enumerate(bm25, 1):
        c = cands.get(nid)
        if c is None:
            c = cands[nid] = Candidate(nid)
            missing.append(nid)
        c.bm25_rank = r
        c.rrf += W_BM25 / (RRF_K + r)
    vote = W_IDENT / (RRF_K + 1)
    for nid in ident:
        c = cands.get(nid)
        if c is None:
            c = cands[nid] = Candidate(nid)
            missing.append(nid)
        c.ident = True
        c.rrf += vote
    if missing:
        for nid, cos in cos_of(missing).items():
            cands[nid].cosine = cos
    for c in cands.values():
        c.fused = c.rrf
        if c.note_id in priority_ids:
            c.priority = True
    return sorted(cands.values(), key=_fused_order)


def _fused_order(c: Candidate) -> tuple[float, float, int]:
    return -c.fused, -c.cosine, c.note_id
