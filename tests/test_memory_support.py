"""Shared helpers for the memory tests (no tests here)."""

from __future__ import annotations

import hashlib
import shutil
import threading
from pathlib import Path

import numpy as np

DATA = Path(__file__).parent / "data" / "memory"


class HashEmbedder:
    """A tiny deterministic stand-in model: bag of hashed words → normalised vector.
    Fast, and lets tests swap models (different ``model_id`` / ``dim``) and count calls."""

    def __init__(self, model_id: str = "test-hash", dim: int = 32):
        self.model_id, self.dim = model_id, dim
        self.calls: list[list[str]] = []
        self.ready, self.state, self.error = True, "ready", None
        self.lock = threading.Lock()

    def start(self):
        pass

    def wait(self, timeout=None):
        return True

    def encode(self, texts):
        with self.lock:
            self.calls.append(list(texts))
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                h = int(hashlib.md5(w.encode()).hexdigest(), 16)
                out[i, h % self.dim] += 1.0 if (h >> 8) & 1 else -1.0
            n = np.linalg.norm(out[i])
            out[i] = out[i] / n if n else 1.0 / np.sqrt(self.dim)
        return out

    @property
    def embedded(self) -> int:
        return sum(len(c) for c in self.calls)


def copy_fixture(name: str, dest: Path) -> Path:
    shutil.copytree(DATA / name, dest)
    return dest


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every regular file's bytes under ``folder`` (symlinks and specials skipped)."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_symlink() or not p.is_file():
            continue
        out[str(p.relative_to(folder))] = p.read_bytes()
    return out


def note(folder: Path, name: str, description: str, body: str = "", extra: str = "") -> Path:
    p = folder / f"{name}.md"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}\n", encoding="utf-8")
    return p
