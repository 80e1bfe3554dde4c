"""Persisted UI choices (theme, keymap) in ``state.json``, and where per-user UI files live.

``$COCKPIT_DATA_DIR/state.json`` when ``COCKPIT_DATA_DIR`` is set, else platformdirs'
``user_state_path("cockpit")/state.json``. User theme files: ``$COCKPIT_DATA_DIR/themes/`` or
``user_config_path("cockpit")/themes/``. The keymap is read from ``state.json`` ``"keymap"`` and
from the ``[keymap]`` table of ``config.toml`` (state wins), both mapping a binding id to keys,
e.g. ``{"spawn": "s", "kill": "ctrl+k"}``.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any


def _data_dir() -> Path | None:
    root = os.environ.get("COCKPIT_DATA_DIR")
    return Path(root) if root else None


def state_path() -> Path:
    root = _data_dir()
    if root:
        return root / "state.json"
    from platformdirs import user_state_path

    return user_state_path("cockpit") / "state.json"


def config_path() -> Path:
    root = _data_dir()
    if root:
        return root / "config.toml"
    from platformdirs import user_config_path

    return user_config_path("cockpit") / "config.toml"


def user_themes_dir() -> Path:
    root = _data_dir()
    if root:
        return root / "themes"
    from platformdirs import user_config_path

    return user_config_path("cockpit") / "themes"


def load_state() -> dict[str, Any]:
    """The saved UI state; ``{}`` when absent or unreadable (never raises)."""
    try:
        data = json.loads(state_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_state(**changes: Any) -> None:
    """Merge ``changes`` into ``state.json`` atomically (temp file + rename)."""
    path = state_path()
    data = load_state()
    data.update(changes)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def flat_keymap(section: dict, prefix: str = "") -> dict[str, str]:
    """``section`` with its nested tables flattened into dotted ids: TOML reads an unquoted
    ``diff.merge = "k"`` as the table ``{"diff": {"merge": "k"}}``; the user meant the binding
    id ``diff.merge`` (as ``"diff.merge" = "k"`` says)."""
    out: dict[str, str] = {}
    for k, v in section.items():
        bid = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flat_keymap(v, f"{bid}."))
        else:
            out[bid] = str(v)
    return out


def load_keymap() -> dict[str, str]:
    """Binding id → key string(s), from ``config.toml`` ``[keymap]`` then ``state.json``."""
    keymap: dict[str, str] = {}
    try:
        config = tomllib.loads(config_path().read_text(encoding="utf-8"))
        section = config.get("keymap", {})
        if isinstance(section, dict):
            keymap.update(flat_keymap(section))
    except (OSError, tomllib.TOMLDecodeError):
        pass
    saved = load_state().get("keymap", {})
    if isinstance(saved, dict):
        keymap.update(flat_keymap(saved))
    return keymap
