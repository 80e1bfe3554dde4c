"""The ONNX Runtime sentence encoder: the packaged MiniLM as an ONNX graph, run without torch
or the sentence-transformers wrapper.

* **Where the graph comes from.** The packaged MiniLM ships its graph (``memory/model/
  model.onnx``, built when Cockpit was built): it is loaded as it is. For another model folder
  :func:`ensure_onnx` builds it from the folder's own weights (``model.safetensors``) with
  :mod:`memory.onnx_build` (needs ``onnx`` and ``safetensors``: the ``models`` extra) — no torch,
  no download, about one second — and keeps it in the per-user model cache (``$COCKPIT_MODEL_CACHE``, else
  ``<COCKPIT_DATA_DIR>/models``, else ``platformdirs.user_cache_path("cockpit")/models``), so
  later starts only load it. The file name holds a fingerprint of the model folder and of the
  builder, so a new model version gets a new graph. Concurrent first uses build once (file
  lock). A cache that cannot be written is no error: the graph is then built in memory.
* **Same vectors.** The graph pools and normalises inside; its vectors equal
  ``SentenceTransformer.encode`` (cosine ≥ 0.9999 on 220 texts, checked by
  ``tests/test_encoder_reference.py``), so an index built with either runtime serves the other.
* **Speed.** Tokenising with the model's own ``tokenizer.json`` (Hugging Face ``tokenizers``),
  one ORT session with one intra-op thread: a short query is one ``run`` (≈ 4 ms for MiniLM
  on this box against ≈ 10 ms through ``SentenceTransformer.encode``). Bulk encodes sort texts
  by token count (little padding), cut batches of ≤ ``BATCH_TEXTS`` texts and run them on
  ``threads`` Python threads against the same session (ORT releases the GIL).
"""

from __future__ import annotations

import hashlib
import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

# ONNX Runtime keeps a telemetry event store (device id, OS, CPU, the interpreter's path) in
# ~/.cache/Microsoft/DeveloperTools/.onnxruntime/ unless this is set before it is imported
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

BATCH_TEXTS = 8          # bulk batches: small ones, length-sorted (measured best on 2 cores: 8 > 16 > 32)
BATCH_TOKENS = 4096      # … and at most this many (padded) tokens
BUILD_LOCK_TIMEOUT_S = 120  # another process building the same graph


def model_cache_dir() -> Path:
    """Folder of exported ONNX models (see module docstring)."""
    env = os.environ.get("COCKPIT_MODEL_CACHE")
    if env:
        return Path(env).expanduser()
    root = os.environ.get("COCKPIT_DATA_DIR")
    if root:
        return Path(root).expanduser() / "models"
    import platformdirs

    return platformdirs.user_cache_path("cockpit") / "models"


def _fingerprint(model_dir: Path) -> str:
    from .onnx_build import GRAPH_VERSION

    h = hashlib.sha1(GRAPH_VERSION.encode())
    for name in ("config.json", "modules.json", "sentence_bert_config.json", "1_Pooling/config.json",
                 "tokenizer.json"):
        p = model_dir / name
        h.update(name.encode() + b"\0" + (p.read_bytes() if p.exists() else b"-") + b"\0")
    for p in sorted(model_dir.glob("*.safetensors")) + sorted(model_dir.glob("*.bin")):
        st = p.stat()
        h.update(f"{p.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:12]


def ensure_onnx(model_dir: str | os.PathLike, model_id: str) -> Path | bytes:
    """The encoder graph for the local model folder ``model_dir``: the cached ``model.onnx``,
    built first if the cache does not have it, or the serialised graph itself when the cache
    cannot be written. Raises ``FileNotFoundError`` when ``model_dir`` is not a local folder
    with a ``tokenizer.json`` and :class:`memory.onnx_build.UnsupportedModel` for a model the
    builder does not reproduce."""
    src = Path(model_dir)
    if not src.is_dir() and model_id == str(model_dir):
        raise FileNotFoundError(f"the embedding model {model_id} is not installed here (Cockpit's own copy, "
                                "memory/model, is missing): reinstall cockpit; its build fetches the model once")
    if not (src / "tokenizer.json").is_file():
        raise FileNotFoundError(f"{src} is not a local model folder with a tokenizer.json")
    if (src / "model.onnx").is_file():  # built already (the packaged model)
        return src / "model.onnx"
    try:
        import onnx  # noqa: F401  (the builder's own imports, checked here for a clear message)
        import safetensors  # noqa: F401
    except ImportError:
        raise RuntimeError(f"{src} has no model.onnx; building one needs onnx and safetensors: "
                           "pip install 'cockpit[models]'") from None
    from .onnx_build import build_model
    slug = "".join(c if c.isalnum() or c in "-_." else "-" for c in model_id.rsplit("/", 1)[-1])
    folder = model_cache_dir() / f"{slug}-{_fingerprint(src)}"
    out = folder / "model.onnx"
    if out.is_file():
        return out
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return build_model(src).SerializeToString()
    from filelock import FileLock, Timeout

    try:
        with FileLock(str(folder / ".build.lock"), timeout=BUILD_LOCK_TIMEOUT_S):
            if out.is_file():  # another process built it while we waited
                return out
            data = build_model(src).SerializeToString()
            tmp = folder / f".model.{os.getpid()}.onnx"
            try:
                tmp.write_bytes(data)
                os.replace(tmp, out)
            except OSError:
                return data
            finally:
                tmp.unlink(missing_ok=True)
    except (Timeout, OSError):
        return build_model(src).SerializeToString()
    return out


def _max_tokens(model_dir: Path) -> int:
    p = model_dir / "sentence_bert_config.json"
    if p.exists():
        v = json.loads(p.read_text(encoding="utf-8")).get("max_seq_length")
        if v:
            return int(v)
    return 512


class OnnxEncoder:
    """Tokenizer + ONNX Runtime session for one exported model. ``encode`` is thread-safe."""

    runtime = "onnxruntime"

    def __init__(self, model_dir: str | os.PathLike, model_id: str, threads: int = 2):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        ort.disable_telemetry_events()  # (the variable below is what stops the event store)

        src = Path(model_dir)
        path = ensure_onnx(src, model_id)
        self.threads = max(1, threads)
        tok = Tokenizer.from_file(str(src / "tokenizer.json"))
        tok.no_padding()
        tok.enable_truncation(_max_tokens(src))
        self._tok = tok
        self._pad = tok.token_to_id("[PAD]") or 0
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1  # parallelism comes from running batches side by side
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3
        graph = str(path) if isinstance(path, Path) else path
        self._sess = ort.InferenceSession(graph, opts, providers=["CPUExecutionProvider"])
        self.path = path if isinstance(path, Path) else None
        self.dim = int(self._run([self._tok.encode("warm up").ids]).shape[1])

    def _run(self, ids_list: list[list[int]]) -> np.ndarray:
        width = max(len(x) for x in ids_list)
        ids = np.full((len(ids_list), width), self._pad, np.int64)
        mask = np.zeros((len(ids_list), width), np.int64)
        for i, x in enumerate(ids_list):
            ids[i, : len(x)] = x
            mask[i, : len(x)] = 1
        return self._sess.run(None, {"input_ids": ids, "attention_mask": mask})[0]

    def encode(self, texts: list[str]) -> np.ndarray:
        """``texts`` → float32 ``(len(texts), dim)``, rows L2-normalised."""
        if len(texts) == 1:
            return np.asarray(self._run([self._tok.encode(texts[0]).ids]), np.float32)
        ids = [e.ids for e in self._tok.encode_batch(list(texts))]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        batches: list[list[int]] = []
        cur: list[int] = []
        for i in order:  # ascending length: the last text of a batch sets its width
            if cur and (len(cur) >= BATCH_TEXTS or (len(cur) + 1) * len(ids[i]) > BATCH_TOKENS):
                batches.append(cur)
                cur = []
            cur.append(i)
        if cur:
            batches.append(cur)
        out = np.empty((len(ids), self.dim), np.float32)

        def run(batch: list[int]) -> None:
            out[batch] = self._run([ids[i] for i in batch])

        if self.threads > 1 and len(batches) > 1:
            with ThreadPoolExecutor(min(self.threads, len(batches))) as pool:
                list(pool.map(run, batches))
        else:
            for b in batches:
                run(b)
        return out
