"""Build the sentence encoder's ONNX graph straight from a model folder's weights: no torch,
no transformers, nothing downloaded. ``setup.py`` runs it when Cockpit is built, so the packaged
MiniLM ships as ``memory/model/model.onnx`` and nothing is built at run time; another model
(``COCKPIT_EMBED_MODEL``) is built on first use when ``onnx`` and ``safetensors`` are installed.

A sentence-transformers folder of a BERT model (``config.json`` with ``model_type: bert``,
``model.safetensors``, ``1_Pooling/config.json``, ``modules.json``) becomes one graph:
``input_ids``, ``attention_mask`` (int64, ``(batch, tokens)``) → ``embedding`` (float32,
``(batch, dim)``), pooled and L2-normalised inside, i.e. the vectors
``SentenceTransformer.encode(..., normalize_embeddings=True)`` returns. The graph is written
op by op with ``onnx.helper`` following Hugging Face's ``BertModel`` (eager attention): token +
position + token-type-0 embeddings → LayerNorm → N × (self-attention → add & LayerNorm → GELU
(erf) feed-forward → add & LayerNorm) → pooling → normalise. ``tests/test_encoder_reference.py``
checks the result against vectors ``bench/make_reference_embeddings.py`` made with
sentence-transformers itself.

Anything else (another architecture, a Dense module, relative positions) raises
``UnsupportedModel``; the embedder then says so and uses the torch runtime when it is installed.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

OPSET = 17
GRAPH_VERSION = "3"  # bump when this file changes the graph (the cache key holds it)


class UnsupportedModel(ValueError):
    """The folder holds a model this builder does not reproduce exactly."""


def pooling_mode(model_dir: Path) -> str:
    """``"mean"`` | ``"cls"`` | ``"max"`` from ``1_Pooling/config.json`` (mean when absent)."""
    path = model_dir / "1_Pooling" / "config.json"
    if not path.exists():
        return "mean"
    cfg = json.loads(path.read_text(encoding="utf-8"))
    modes = [k for k, v in cfg.items() if k.startswith("pooling_mode_") and v]
    table = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls",
             "pooling_mode_max_tokens": "max"}
    if len(modes) != 1 or modes[0] not in table:
        raise UnsupportedModel(f"unsupported pooling {modes} in {path}")
    return table[modes[0]]


def check_modules(model_dir: Path) -> None:
    """Refuse a sentence-transformers pipeline other than transformer → pooling → normalize."""
    path = model_dir / "modules.json"
    if not path.exists():
        return
    kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in json.loads(path.read_text(encoding="utf-8"))]
    extra = [k for k in kinds if k not in ("Transformer", "Pooling", "Normalize")]
    if extra:
        raise UnsupportedModel(f"modules {extra} in {path} are not built; use COCKPIT_EMBED_RUNTIME=torch")


def _config(model_dir: Path) -> dict[str, Any]:
    cfg = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    if cfg.get("model_type") != "bert":
        raise UnsupportedModel(f"model_type {cfg.get('model_type')!r} (only bert is built without torch)")
    if cfg.get("position_embedding_type", "absolute") != "absolute":
        raise UnsupportedModel(f"position_embedding_type {cfg['position_embedding_type']!r}")
    if cfg.get("hidden_act", "gelu") != "gelu":
        raise UnsupportedModel(f"hidden_act {cfg['hidden_act']!r} (only gelu)")
    if cfg["hidden_size"] % cfg["num_attention_heads"]:
        raise UnsupportedModel("hidden_size is not a multiple of num_attention_heads")
    return cfg


def load_weights(model_dir: Path) -> dict[str, np.ndarray]:
    """The folder's ``model.safetensors`` as float32 arrays, without a ``bert.`` prefix."""
    from safetensors.numpy import load_file

    path = model_dir / "model.safetensors"
    if not path.is_file():
        raise UnsupportedModel(f"{path} is missing (only safetensors weights are read)")
    raw = load_file(str(path))
    return {(k[5:] if k.startswith("bert.") else k): v for k, v in raw.items()}


class _Graph:
    """A tiny builder: nodes, initializers and unique names."""

    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._n = 0

    def const(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        # (np.ascontiguousarray would make a 0-d array 1-d: a scalar index must stay a scalar)
        self.inits.append(numpy_helper.from_array(np.require(value, requirements="C"), name))
        return name

    def op(self, kind: str, *inputs: str, **attrs: Any) -> str:
        from onnx import helper

        self._n += 1
        out = f"{kind.lower()}_{self._n}"
        self.nodes.append(helper.make_node(kind, list(inputs), [out], **attrs))
        return out

    def linear(self, x: str, w: np.ndarray, b: np.ndarray, name: str) -> str:
        """``x @ w.T + b`` (a torch ``Linear``)."""
        wt = self.const(f"{name}.weight_t", w.T.astype(np.float32))
        bias = self.const(f"{name}.bias", b.astype(np.float32))
        return self.op("Add", self.op("MatMul", x, wt), bias)

    def layer_norm(self, x: str, w: dict[str, np.ndarray], name: str, eps: float) -> str:
        return self.op("LayerNormalization", x, self.const(f"{name}.weight", w[f"{name}.weight"]),
                       self.const(f"{name}.bias", w[f"{name}.bias"]), axis=-1, epsilon=eps)


def build_model(model_dir: str | Path) -> Any:
    """The ``onnx.ModelProto`` for the model folder (see module docstring)."""
    import onnx
    from onnx import TensorProto, helper

    src = Path(model_dir)
    check_modules(src)
    mode = pooling_mode(src)
    cfg = _config(src)
    w = load_weights(src)
    hidden, heads = int(cfg["hidden_size"]), int(cfg["num_attention_heads"])
    head_dim, eps = hidden // heads, float(cfg.get("layer_norm_eps", 1e-12))
    g = _Graph()
    i64 = lambda name, *v: g.const(name, np.array(v, np.int64))  # noqa: E731

    # embeddings: word + position[:tokens] + token type 0, then LayerNorm
    words = g.op("Gather", g.const("word_embeddings", w["embeddings.word_embeddings.weight"]), "input_ids")
    tokens = g.op("Slice", g.op("Shape", "input_ids"), i64("one", 1), i64("two", 2))
    positions = g.op("Slice", g.const("position_embeddings", w["embeddings.position_embeddings.weight"]),
                     i64("zero", 0), tokens, i64("axis0", 0))
    type0 = g.const("token_type_0", w["embeddings.token_type_embeddings.weight"][0])
    x = g.op("Add", g.op("Add", words, positions), type0)
    x = g.layer_norm(x, w, "embeddings.LayerNorm", eps)

    # additive attention mask: 0 where attended, float32's minimum where padded (as BertModel)
    maskf = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    one = g.const("one_f", np.array(1.0, np.float32))
    neg = g.const("mask_min", np.array(np.finfo(np.float32).min, np.float32))
    bias = g.op("Unsqueeze", g.op("Mul", g.op("Sub", one, maskf), neg), i64("axes12", 1, 2))
    split_heads = i64("split_heads", 0, 0, heads, head_dim)
    merge_heads = i64("merge_heads", 0, 0, hidden)
    scale = g.const("scale", np.array(1.0 / math.sqrt(head_dim), np.float32))
    inv_sqrt2 = g.const("inv_sqrt2", np.array(1.0 / math.sqrt(2.0), np.float32))
    half = g.const("half", np.array(0.5, np.float32))

    for n in range(int(cfg["num_hidden_layers"])):
        p = f"encoder.layer.{n}"

        def heads_of(kind: str, perm: list[int], x: str = x, _p: str = p) -> str:
            proj = g.linear(x, w[f"{_p}.attention.self.{kind}.weight"], w[f"{_p}.attention.self.{kind}.bias"],
                            f"{_p}.attention.self.{kind}")
            return g.op("Transpose", g.op("Reshape", proj, split_heads), perm=perm)

        q, k, v = heads_of("query", [0, 2, 1, 3]), heads_of("key", [0, 2, 3, 1]), heads_of("value", [0, 2, 1, 3])
        scores = g.op("Add", g.op("Mul", g.op("MatMul", q, k), scale), bias)
        ctx = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
        ctx = g.op("Reshape", g.op("Transpose", ctx, perm=[0, 2, 1, 3]), merge_heads)
        attn = g.linear(ctx, w[f"{p}.attention.output.dense.weight"], w[f"{p}.attention.output.dense.bias"],
                        f"{p}.attention.output.dense")
        x = g.layer_norm(g.op("Add", attn, x), w, f"{p}.attention.output.LayerNorm", eps)
        inner = g.linear(x, w[f"{p}.intermediate.dense.weight"], w[f"{p}.intermediate.dense.bias"],
                         f"{p}.intermediate.dense")
        gelu = g.op("Mul", g.op("Mul", inner, half), g.op("Add", g.op("Erf", g.op("Mul", inner, inv_sqrt2)), one))
        out = g.linear(gelu, w[f"{p}.output.dense.weight"], w[f"{p}.output.dense.bias"], f"{p}.output.dense")
        x = g.layer_norm(g.op("Add", out, x), w, f"{p}.output.LayerNorm", eps)

    # pooling over the attended tokens, then L2 normalisation (sentence-transformers' Normalize)
    m3 = g.op("Unsqueeze", maskf, i64("axis2", 2))
    axis1 = i64("axis1", 1)
    if mode == "cls":
        pooled = g.op("Gather", x, g.const("first", np.array(0, np.int64)), axis=1)
    elif mode == "max":
        big = g.const("big", np.array(1e9, np.float32))
        pooled = g.op("ReduceMax", g.op("Add", x, g.op("Mul", g.op("Sub", m3, one), big)), axes=[1], keepdims=0)
    else:
        total = g.op("ReduceSum", g.op("Mul", x, m3), axis1, keepdims=0)
        count = g.op("Max", g.op("ReduceSum", m3, axis1, keepdims=0), g.const("tiny", np.array(1e-9, np.float32)))
        pooled = g.op("Div", total, count)
    norm = g.op("Max", g.op("ReduceL2", pooled, axes=[1], keepdims=1), g.const("eps12", np.array(1e-12, np.float32)))
    g.nodes.append(helper.make_node("Div", [pooled, norm], ["embedding"]))

    graph = helper.make_graph(
        g.nodes, "sentence_encoder",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"])],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", hidden])],
        g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="cockpit-memory", producer_version=GRAPH_VERSION)
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=False)
    return model
