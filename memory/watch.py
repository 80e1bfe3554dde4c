"""Re-sync the index when note files change (watchfiles; blocking, run in a thread)."""

from __future__ import annotations

import logging
import os
import threading

import watchfiles

log = logging.getLogger(__name__)


FULL_SYNC_OVER = 1000  # a batch with more changed paths than this gets a full sync


def _is_note_change(change, path: str) -> bool:
    name = os.path.basename(path)
    if not name or name.startswith("."):
        return False  # hidden files, including save()'s temp files
    # note files, and folders moved in/out or removed (a removed path cannot be stat'ed;
    # "v1.2" is a folder name too): only plain non-note files are dropped
    return name.lower().endswith(".md") or not os.path.isfile(path)


def watch_notes(engine, stop: threading.Event, on_sync=None, debounce_ms: int = 300) -> None:
    """Sync once (whole folder), then after each batch of note changes a targeted sync of
    just the changed paths (``engine.sync(paths=...)``), until ``stop`` is set.

    ``on_sync(report)`` runs after every sync. A failing sync (e.g. the folder vanished) is
    logged and watching goes on; a notes folder that does not exist yet is waited for; an
    exception raised by ``on_sync`` propagates.
    """
    full = True  # the next sync walks the whole folder (first one, or after a failure)

    def run_sync(paths=None):
        nonlocal full
        try:
            report = engine.sync(paths=None if full else paths)
        except Exception as exc:  # noqa: BLE001 - keep watching
            log.warning("memory sync failed: %s", exc)
            full = True  # what that batch changed is picked up by a full sync next time
            engine.mark_watched(False)
            return
        full = False
        engine.mark_watched(True)  # one-off searches elsewhere may now skip their folder walk
        if on_sync is not None:
            on_sync(report)

    run_sync()
    while not engine.notes_dir.is_dir():  # not there yet: wait for it rather than fail
        if stop.wait(1.0):
            return
        full = True
    if full:
        run_sync()
    for changes in watchfiles.watch(engine.notes_dir, watch_filter=_is_note_change,
                                    stop_event=stop, debounce=debounce_ms, step=50,
                                    rust_timeout=500, yield_on_timeout=False,
                                    raise_interrupt=False):
        if stop.is_set():
            break
        paths = {p for _change, p in changes}
        # a targeted sync examines only what changed; a flood of events (a checkout, a
        # folder copied in) is cheaper as one walk
        run_sync(None if len(paths) > FULL_SYNC_OVER else sorted(paths))
