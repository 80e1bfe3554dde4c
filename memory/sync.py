"""Planning a sync: what the notes folder says must change in the index, without writing.

:func:`plan_sync` compares scanned files with the index rows in scope and returns a
:class:`SyncPlan` — rows to delete, renames, files only re-stamped, notes to embed, the skip
list. It reads note files (only those whose mtime or size moved) and asks the index for the
stored text of rename candidates through a callable; it writes nothing. The engine embeds
``plan.to_embed`` in batches and hands each batch to :meth:`memory.store.Store.apply_sync`
as a :class:`SyncWrite`; all SQL lives in :mod:`memory.store`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from .notes import FileEntry, Note, NoteError, read_note


class IndexRow(NamedTuple):
    """One ``notes`` row as the sync sees it."""

    id: int
    path: str
    mtime_ns: int
    size: int
    hash: str
    embedded: int


class Skip(NamedTuple):
    """A file that is not indexable: its stamp (None when it could not be stat'ed) and why."""

    mtime_ns: int | None
    size: int | None
    reason: str


class Rename(NamedTuple):
    note_id: int
    note: Note      # the note at its new path
    old_path: str


@dataclass
class SyncPlan:
    """What one sync must do. Paths are POSIX, relative to the notes folder.

    ``rows``: the index rows in scope (all rows for a full sync). ``gone``: rows whose file
    vanished or became unreadable. ``renames``: vanished rows whose exact content reappeared
    at a new path (kept with their vectors). ``touched``: files whose stamp moved but content
    did not (re-stamped only). ``to_embed``: new or edited notes. ``skipped``: the complete
    skip list after this sync; ``skips_changed`` says whether it differs from the stored one.
    ``unchanged`` counts examined files needing nothing (touched included)."""

    rows: dict[str, IndexRow]
    gone: list[IndexRow] = field(default_factory=list)
    renames: list[Rename] = field(default_factory=list)
    touched: list[Note] = field(default_factory=list)
    to_embed: list[Note] = field(default_factory=list)
    skipped: dict[str, Skip] = field(default_factory=dict)
    skips_changed: bool = False
    unchanged: int = 0
    warnings: list[str] = field(default_factory=list)
    reread: bool = False  # every file was read again (the index was made by an older parser)

    @property
    def writes(self) -> bool:
        """True when the index must change."""
        return bool(self.gone or self.renames or self.touched or self.to_embed or self.skips_changed
                    or self.reread)


@dataclass
class SyncWrite:
    """One write transaction of a sync (see :meth:`memory.store.Store.apply_sync`).

    ``delete``: rows to delete. ``renames``/``touched``: as in :class:`SyncPlan`. ``insert``:
    ``(note, kinds, vectors)`` — a new or edited note (a row at its path is replaced) with its
    embedded texts' kinds and float32 vectors ``(len(kinds), dim)``. ``skipped``: the new skip
    list, or None to leave it. ``parser``: the parser version the index now matches (a full
    sync's first batch), or None."""

    delete: list[IndexRow] = field(default_factory=list)
    renames: list[Rename] = field(default_factory=list)
    touched: list[Note] = field(default_factory=list)
    insert: list[tuple[Note, list[str], np.ndarray]] = field(default_factory=list)
    skipped: dict[str, Skip] | None = None
    parser: str | None = None


@dataclass
class Applied:
    """What :meth:`memory.store.Store.apply_sync` changed, for the in-memory mirrors:
    ``removed_chunks`` (vector row ids deleted), ``added`` ``(chunk_ids, note_id, vectors)``,
    ``rows`` the ``IndexRow`` of every inserted, renamed or re-stamped note, ``gone_paths``
    paths whose row is gone, and the index ``generation`` before (``generation + 1`` after)."""

    generation: int
    removed_chunks: list[int] = field(default_factory=list)
    added: list[tuple[list[int], int, np.ndarray]] = field(default_factory=list)
    rows: list[IndexRow] = field(default_factory=list)
    gone_paths: list[str] = field(default_factory=list)
    added_notes: int = 0
    updated_notes: int = 0


def plan_sync(root: str, entries, scan_skipped: list[tuple[str, str]], rows: dict[str, IndexRow],
              old_skips: dict[str, Skip], stored_text: Callable[[int], tuple[str, str, str]],
              scope: tuple[set[str], tuple[str, ...]] | None = None, reread: bool = False) -> SyncPlan:
    """Compare scanned files with index rows.

    ``entries``: ``(rel, mtime_ns, size)`` of the candidate note files found; ``scan_skipped``:
    ``(rel, reason)`` the scan could not use; ``rows``: index rows in scope by path;
    ``old_skips``: the stored skip list; ``stored_text(note_id)`` → ``(name, description, body)``
    of an index row (rename check). ``scope``: ``(exact, prefixes)`` for a targeted sync — skips
    outside it are kept as they were; None for a full sync. ``reread``: read every file again,
    stamps or not (the index was made by an older parser: a file it took as a note may now be
    skipped, a note's warnings or lifecycle read differently); a note whose content is the same
    is re-stamped with its new reading, embedded again only when its texts changed.
    """
    plan = SyncPlan(rows=rows, reread=reread)
    skipped = {rel: Skip(None, None, reason) for rel, reason in scan_skipped}
    to_read: list[tuple[str, int, int]] = []
    seen: set[str] = set()
    seen_add, rows_get, skips_get = seen.add, rows.get, old_skips.get
    unchanged = 0
    for e in entries:  # one loop, no objects per unchanged file (100k files)
        rel = e[0]
        seen_add(rel)
        r = rows_get(rel)
        if r is not None and r[2] == e[1] and r[3] == e[2] and r[5] and not reread:
            unchanged += 1
            continue
        s = skips_get(rel)
        if s is not None and s[0] == e[1] and s[1] == e[2] and not reread:
            skipped[rel] = Skip(e[1], e[2], s[2])
            continue
        to_read.append(e)

    fresh: list[Note] = []
    for rel, mtime_ns, size in to_read:
        try:
            note = read_note(FileEntry(rel, os.path.join(root, rel), mtime_ns, size))
        except NoteError as exc:
            skipped[rel] = Skip(mtime_ns, size, str(exc))
            continue
        except Exception as exc:  # one file must never stop the others from indexing
            skipped[rel] = Skip(mtime_ns, size, f"could not be read: {type(exc).__name__}: {exc}")
            continue
        plan.warnings.extend(f"{note.rel}: {w}" for w in note.warnings)
        r = rows.get(rel)
        if r is not None and r.hash == note.hash and r.embedded and (
                not reread or stored_text(r.id) == (note.name, note.description, note.body)):
            plan.touched.append(note)
            unchanged += 1
        else:
            fresh.append(note)
    plan.unchanged = unchanged

    # rows whose file is gone, or is now skipped (fresh/touched paths are never skipped)
    gone_paths = rows.keys() - seen
    gone_paths.update(p for p in skipped if p in rows)
    gone = {p: rows[p] for p in gone_paths}
    # renames: a new path with exactly the content (and parse) of a vanished row
    by_hash: dict[str, list[IndexRow]] = {}
    for r in gone.values():
        if r.embedded:
            by_hash.setdefault(r.hash, []).append(r)
    for n in fresh:
        cand = by_hash.get(n.hash)
        if n.rel not in rows and cand:
            match = next((r for r in cand if stored_text(r.id) == (n.name, n.description, n.body)), None)
            if match is not None:
                cand.remove(match)
                del gone[match.path]
                plan.renames.append(Rename(match.id, n, match.path))
                continue
        plan.to_embed.append(n)
    plan.gone = list(gone.values())

    if scope is not None:  # a targeted sync: skips outside the examined paths stay as they were
        exact, prefixes = scope
        for p, s in old_skips.items():
            if p not in exact and not p.startswith(prefixes) and p not in skipped:
                skipped[p] = s
    plan.skipped = skipped
    plan.skips_changed = {p: tuple(s) for p, s in old_skips.items()} != {p: tuple(s) for p, s in skipped.items()}
    return plan
