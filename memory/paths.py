"""Where the derived index lives (never in the repo or the notes folder)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

# a new index file name whenever the schema changes (memory.store.SCHEMA_VERSION): the old
# file is derived data, so an upgrade simply builds a new index instead of refusing the old one
INDEX_GENERATION = ".s3"


def data_root() -> Path | None:
    v = os.environ.get("COCKPIT_DATA_DIR")
    return Path(v).expanduser() if v else None


def default_index_path(notes_dir: str | os.PathLike, model_id: str | None = None) -> Path:
    """``$COCKPIT_INDEX`` if set; else ``<root>/index/<sha1(abs notes path)[:12]>.s3.sqlite`` (the
    default model) or ``<root>/index/<sha1(abs notes path)[:12]>-<sha1(model_id)[:8]>.s3.sqlite``
    (any other ``model_id``; ``.s3``: :data:`INDEX_GENERATION`), where root is ``$COCKPIT_DATA_DIR`` or
    ``platformdirs.user_cache_path("cockpit")``. One file per notes folder and model: processes
    using different embedding models (``COCKPIT_EMBED_MODEL``) never share an index."""
    env = os.environ.get("COCKPIT_INDEX")
    if env:
        return Path(env).expanduser()
    key = hashlib.sha1(str(Path(notes_dir).expanduser().resolve()).encode()).hexdigest()[:12]
    from .embedder import DEFAULT_MODEL

    if model_id and model_id != DEFAULT_MODEL:
        key += "-" + hashlib.sha1(model_id.encode()).hexdigest()[:8]
    root = data_root()
    if root is None:
        import platformdirs

        root = platformdirs.user_cache_path("cockpit")
    return root / "index" / f"{key}{INDEX_GENERATION}.sqlite"


def calibration_path() -> Path:
    """Where ``cockpit memory calibrate`` keeps the line threshold it fitted on the user's own
    sessions: ``$COCKPIT_DATA_DIR/calibration.json``, else the per-user config folder's."""
    root = data_root()
    if root is None:
        import platformdirs

        root = platformdirs.user_config_path("cockpit")
    return root / "calibration.json"
