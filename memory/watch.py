"""Re-sync the index when note files change (watchfiles; blocking, run in a thread).

The watcher survives the notes folder being deleted, replaced or re-created (a ``git checkout``,
an editor's atomic folder swap, ``rm -rf notes && cp -r …``): every half second it checks that
the folder it watches is still the same folder (device and inode); when not, it stops watching
the old one, waits for the folder to exist again, watches the new folder and, once it has been
quiet for ``POLL_S`` (a copy into it has ended), runs a full sync (deleted notes leave the index,
new ones enter it; a note written meanwhile is an event, never missed). While the folder is missing the index
keeps what it had (a checkout that removes the folder for a moment does not wipe it).

Each state change is reported through ``on_status(state, detail)`` and kept in
``engine.watch_status`` (shown by ``engine.status().watch``): ``state`` is ``"watching"``,
``"missing"`` or ``"recovered"`` (watching again after the folder came back), ``detail`` one line
for a header. ``"watching"``/``"recovered"`` are reported once the OS-level watch is in place
(watchfiles' first yield, at most ``POLL_S`` after it starts): a change made after that is seen —
what a test or a client waits on instead of sleeping. At that moment the folder is walked once
more (a ``stat`` per file when nothing changed): a note changed between the first sync and the
watch being in place is indexed too (it was missed until its next change).
"""

from __future__ import annotations

import logging
import os
import threading
import time

import watchfiles
from watchfiles._rust_notify import WatchfilesRustInternalError

log = logging.getLogger(__name__)


FULL_SYNC_OVER = 1000  # a batch with more changed paths than this gets a full sync
POLL_S = 0.5           # how often the folder's identity is checked (watchfiles' timeout)


def _is_note_change(change, path: str) -> bool:
    name = os.path.basename(path)
    if not name or name.startswith("."):
        return False  # hidden files, including save()'s temp files
    # note files, and folders moved in/out or removed (a removed path cannot be stat'ed;
    # "v1.2" is a folder name too): only plain non-note files are dropped
    return name.lower().endswith(".md") or not os.path.isfile(path)


def _identity(folder) -> tuple[int, int] | None:
    try:
        st = os.stat(folder)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if os.path.isdir(folder) else None


def watch_notes(engine, stop: threading.Event, on_sync=None, debounce_ms: int = 300,
                on_status=None) -> None:
    """Sync once (whole folder), then after each batch of note changes a targeted sync of
    just the changed paths (``engine.sync(paths=...)``), until ``stop`` is set.

    ``on_sync(report)`` runs after every sync, ``on_status(state, detail)`` after every change
    of the watcher's state (see module docstring). A failing sync is logged and watching goes
    on (the next sync is a full one); a notes folder that does not exist (yet, or any more) is
    waited for; an exception raised by a callback propagates.
    """
    full = True  # the next sync walks the whole folder (first one, or after a failure)
    folder = engine.notes_dir

    def status(state: str, detail: str) -> None:
        engine.watch_status, engine.watch_state = detail, state
        if on_status is not None:
            on_status(state, detail)

    def run_sync(paths=None):
        nonlocal full
        try:
            report = engine.sync(paths=None if full else paths)
        except Exception as exc:  # keep watching
            log.warning("memory sync failed: %s", exc)
            full = True  # what that batch changed is picked up by a full sync next time
            engine.mark_watched(False)
            return
        full = False
        engine.mark_watched(True)  # one-off searches elsewhere may now skip their folder walk
        if on_sync is not None:
            on_sync(report)

    run_sync()
    catch_up = True  # a change made after that sync and before the watch is in place: one more walk
    lost = False  # the folder went away while being watched
    while not stop.is_set():
        if _identity(folder) is None:
            status("missing", f"notes folder {folder} missing: waiting for it")
            while _identity(folder) is None:  # not there (yet, or any more): wait for it
                if stop.wait(1.0):
                    return
            full = True
        ident = _identity(folder)
        # a full resync waits for the watch to be in place and the folder to be quiet for a
        # moment (POLL_S without a change): a folder still being copied in (``rm -rf notes &&
        # cp -r …``) is never taken for the whole folder, and a file written after the walk
        # began is an event, never missed
        deferred = full
        announce: tuple[str, str] | None = ("watching", "watching notes")
        if lost:
            announce = ("recovered", f"watching notes (re-watched {time.strftime('%H:%M:%S')} after the "
                                     "folder was re-created; full resync done)")
        lost = False
        try:
            for changes in watchfiles.watch(folder, watch_filter=_is_note_change, stop_event=stop,
                                            debounce=debounce_ms, step=50,
                                            rust_timeout=int(POLL_S * 1000), yield_on_timeout=True,
                                            raise_interrupt=False):
                if stop.is_set():
                    return
                root_event = any(os.path.normpath(p) == str(folder) for _change, p in changes)
                if root_event or _identity(folder) != ident:  # deleted, replaced or re-created
                    lost = full = True
                    log.warning("notes folder %s was removed or replaced: re-watching", folder)
                    break
                if deferred:
                    if changes:
                        continue  # still being written
                    run_sync()
                    deferred = full  # (a failed sync: the next quiet moment tries again)
                    if deferred:
                        continue
                if catch_up and not full:  # the watch is in place: what changed since the first sync
                    catch_up = False
                    run_sync()
                if announce is not None:  # the OS watch is in place (changes are seen), resync done
                    status(*announce)
                    announce = None
                if not changes:
                    continue
                paths = {p for _change, p in changes}
                # a targeted sync examines only what changed; a flood of events (a checkout, a
                # folder copied in) is cheaper as one walk
                run_sync(None if len(paths) > FULL_SYNC_OVER else sorted(paths))
            else:
                return  # watchfiles ended: stop was set
        except WatchfilesRustInternalError as exc:
            # the OS watch broke, e.g. on an event for a file whose name is not UTF-8 ("Unable to
            # decode path"): watch again, after a full sync (that batch is lost; the walk skips
            # such a file with a warning); the index never stops following the folder
            log.warning("watching notes folder %s broke (%s): watching it again", folder, exc)
            full = True
            engine.mark_watched(False)
            if stop.wait(POLL_S):
                return
