"""Reciprocal-rank fusion (memory.search.fuse) and the vector lane's top-k order, without a model."""

from __future__ import annotations

import numpy as np
import pytest

from memory.search import RRF_K, W_BM25, W_IDENT, W_VEC, fuse, top_order


def test_fused_score_is_the_lanes_agreement_and_priority_adds_nothing():
    vec = [(1, 0.9), (2, 0.8), (3, 0.7)]
    bm25 = [2, 4]
    cands = {c.note_id: c for c in fuse(vec, bm25, {4}, priority_ids={3},
                                        cos_of=lambda ids: {i: 0.1 for i in ids})}
    assert cands[2].rrf == pytest.approx(W_VEC / (RRF_K + 2) + W_BM25 / (RRF_K + 1))  # both lanes
    assert cands[1].rrf == pytest.approx(W_VEC / (RRF_K + 1))  # one lane only
    assert cands[4].rrf == pytest.approx(W_BM25 / (RRF_K + 2) + W_IDENT / (RRF_K + 1))  # identifier vote
    assert cands[4].cosine == 0.1  # a keyword-only note gets its cosine from cos_of
    assert cands[3].priority and cands[3].fused == cands[3].rrf  # given by rule in the preseed, not lifted
    assert all(c.fused == c.rrf for c in cands.values())
    # the lanes agreeing on note 2 beat note 1's first place in one lane
    assert cands[2].rrf > cands[1].rrf


@pytest.mark.parametrize("seed", range(5))
def test_top_order_is_a_stable_descending_sort_cut_at_k(seed):
    rng = np.random.default_rng(seed)
    for n, k in ((1, 1), (10, 3), (200, 50), (300, 400), (2000, 200)):
        scores = rng.random(n).astype(np.float32)
        scores[rng.integers(0, n, n // 3)] = 0.5  # many ties, also at the cut
        want = np.argsort(-scores, kind="stable")[:k]
        assert np.array_equal(top_order(scores, k), want)


def test_blas_scopes_nest_and_restore_the_thread_count_at_the_last_exit():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from memory.search import one_blas_thread

    libs = [lib for lib in threadpoolctl.ThreadpoolController().select(user_api="blas").lib_controllers
            if "numpy" in str(getattr(lib, "filepath", ""))]
    if not libs:
        pytest.skip("numpy's BLAS is not visible to threadpoolctl")
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        before = [lib.get_num_threads() for lib in libs]
        with one_blas_thread():
            with one_blas_thread():  # a search inside a search
                assert [lib.get_num_threads() for lib in libs] == [1] * len(libs)
            assert [lib.get_num_threads() for lib in libs] == [1] * len(libs)  # not restored by the inner scope
        assert [lib.get_num_threads() for lib in libs] == before
