"""Re-sync the index when note files change (watchfiles; blocking, run in a thread)."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import watchfiles

log = logging.getLogger(__name__)


def _is_note_change(change, path: str) -> bool:
    p = Path(path)
    if any(part.startswith(".") for part in p.parts[-1:]):
        return False  # hidden files, including save()'s temp files
    return p.suffix.lower() == ".md" or p.suffix == ""  # "" : folders moved or removed


def watch_notes(engine, stop: threading.Event, on_sync=None, debounce_ms: int = 300) -> None:
    """Sync once, then again after each batch of note changes, until ``stop`` is set.

    ``on_sync(report)`` runs after every sync. A failing sync (e.g. the folder vanished) is
    logged and watching goes on; a notes folder that does not exist yet is waited for; an
    exception raised by ``on_sync`` propagates.
    """
    def run_sync():
        try:
            report = engine.sync()
        except Exception as exc:  # noqa: BLE001 - keep watching
            log.warning("memory sync failed: %s", exc)
            return
        if on_sync is not None:
            on_sync(report)

    run_sync()
    while not engine.notes_dir.is_dir():  # not there yet: wait for it rather than fail
        if stop.wait(1.0):
            return
    run_sync()
    for _changes in watchfiles.watch(engine.notes_dir, watch_filter=_is_note_change,
                                     stop_event=stop, debounce=debounce_ms, step=50,
                                     rust_timeout=500, yield_on_timeout=False,
                                     raise_interrupt=False):
        if stop.is_set():
            break
        run_sync()
