"""The index file: one SQLite database holding note rows, an FTS5 table and a sqlite-vec
``vec0`` table. Derived data only: delete the file and ``sync`` rebuilds it.

Binding: the stdlib ``sqlite3`` when it can load extensions, else ``sqlean`` (sqlean.py, a
drop-in build with FTS5 and extension loading), else ``pysqlite3``. :data:`binding_name` says
which. WAL mode, ``busy_timeout`` and ``BEGIN IMMEDIATE`` write transactions let several threads
and processes write the same index without "database is locked". The WAL is bounded:
``journal_size_limit`` truncates it after checkpoints, and :meth:`Store.checkpoint` (run by the
engine after a sync that wrote many rows) folds it back into the file and truncates it.

All of the engine's SQL for syncing lives here (:meth:`Store.apply_sync` applies one batch of a
:class:`memory.sync.SyncPlan`).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import threading
import time
from pathlib import Path

import numpy as np
import sqlite_vec

from .sync import Applied, IndexRow, Skip, SyncWrite
from .types import IndexModelError, IndexOpenError

SCHEMA_VERSION = "3"  # 3: status, superseded_by
BUSY_TIMEOUT_MS = 60_000
JOURNAL_SIZE_LIMIT = 32 * 2**20  # bytes the WAL file is truncated to after a checkpoint
_ROW_COLS = "SELECT id, path, mtime_ns, size, hash, embedded FROM notes"


def _pick_binding():
    errors = []
    for name in ("sqlite3", "sqlean", "pysqlite3.dbapi2"):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        conn = mod.connect(":memory:")
        try:
            if not hasattr(conn, "enable_load_extension"):
                errors.append(f"{name}: no enable_load_extension")
                continue
            conn.enable_load_extension(True)
            sqlite_vec.load(conn)
            conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
            return mod, name.split(".")[0]
        except Exception as exc:  # try the next binding
            errors.append(f"{name}: {exc}")
        finally:
            conn.close()
    raise IndexOpenError("no SQLite binding can load sqlite-vec with FTS5: " + "; ".join(errors))


_DB, binding_name = _pick_binding()
"""The DB-API module in use and its name ("sqlite3" | "sqlean" | "pysqlite3")."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS notes (
    id INTEGER PRIMARY KEY,
    path TEXT UNIQUE NOT NULL,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    body TEXT NOT NULL,
    priority INTEGER NOT NULL,
    type TEXT,
    has_description INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    hash TEXT NOT NULL,
    warnings TEXT NOT NULL DEFAULT '[]',
    embedded INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL DEFAULT '',
    superseded_by TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS notes_hash ON notes(hash);
CREATE INDEX IF NOT EXISTS notes_name ON notes(name);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    note_id INTEGER NOT NULL,
    kind TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_note ON chunks(note_id);
CREATE TABLE IF NOT EXISTS skipped (
    path TEXT PRIMARY KEY, mtime_ns INTEGER, size INTEGER, reason TEXT NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS notes_fts USING fts5(
    name, description, body, tokenize = 'porter unicode61'
);
"""


class Store:
    """One connection to an index file, safe to share between threads (calls serialise on a
    lock). Raises :class:`IndexOpenError` if the file is not a usable index."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.binding = binding_name
        self.lock = threading.RLock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = _DB.connect(str(self.path), timeout=BUSY_TIMEOUT_MS / 1000,
                                    isolation_level=None, check_same_thread=False)
            self.conn.enable_load_extension(True)
            sqlite_vec.load(self.conn)
            self.conn.enable_load_extension(False)
            self.conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            self._retry(lambda: self.conn.execute("PRAGMA journal_mode=WAL"))
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute(f"PRAGMA journal_size_limit={JOURNAL_SIZE_LIMIT}")
            with self.write():
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        self.conn.execute(statement)
                ver = self.get_meta("schema")
                if ver is None:
                    self.set_meta("schema", SCHEMA_VERSION)
                elif ver != SCHEMA_VERSION:
                    raise IndexOpenError(
                        f"index {self.path} has schema {ver}, expected {SCHEMA_VERSION}; "
                        "delete it to rebuild")
        except IndexOpenError:
            raise
        except (_DB.Error, OSError) as exc:
            raise IndexOpenError(f"cannot open index {self.path}: {exc}") from None

    # ------------------------------------------------------------------ plumbing
    @staticmethod
    def _retry(fn, attempts: int = 50):
        for i in range(attempts):
            try:
                return fn()
            except _DB.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc) or i == attempts - 1:
                    raise
                time.sleep(0.05 + 0.01 * i)

    @contextlib.contextmanager
    def write(self):
        """``BEGIN IMMEDIATE`` … ``COMMIT`` (rollback on error), holding the thread lock.
        Bumps the ``generation`` counter so other connections know the vectors changed."""
        with self.lock:
            self._retry(lambda: self.conn.execute("BEGIN IMMEDIATE"))
            try:
                yield self.conn
                self.conn.execute(
                    "INSERT INTO meta(key, value) VALUES('generation', '1') ON CONFLICT(key) "
                    "DO UPDATE SET value = CAST(value AS INTEGER) + 1")
                self.conn.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(Exception):
                    self.conn.execute("ROLLBACK")
                raise

    def query(self, sql: str, params=()) -> list[tuple]:
        with self.lock:
            return self.conn.execute(sql, params).fetchall()

    def get_meta(self, key: str) -> str | None:
        with self.lock:
            row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", (key, value))

    def generation(self) -> int:
        return int(self.get_meta("generation") or 0)

    # ------------------------------------------------------------------ vectors
    def has_vec_table(self) -> bool:
        return bool(self.query(
            "SELECT 1 FROM sqlite_master WHERE name = 'vec_chunks'"))

    def index_model(self) -> tuple[str | None, int | None]:
        """``(model_id, dim)`` the index's vectors were made with; ``(None, None)`` when empty."""
        model, dim = self.get_meta("model"), self.get_meta("dim")
        return model, (int(dim) if dim else None)

    def check_model(self, model_id: str, dim: int | None) -> None:
        """Raise :class:`IndexModelError` unless the index is empty or holds ``model_id``'s
        vectors (and, when ``dim`` is known, of that dimension)."""
        cur_model, cur_dim = self.index_model()
        if cur_model is None:
            return
        if cur_model != model_id or (dim is not None and cur_dim is not None and cur_dim != dim):
            have = f"{cur_model} (dim {cur_dim})"
            want = f"{model_id} (dim {dim})" if dim is not None else model_id
            raise IndexModelError(self.path, have, want)

    def ensure_model(self, model_id: str, dim: int) -> None:
        """Record ``model_id``/``dim`` as the index's model and create the vector table. Raises
        :class:`IndexModelError` when the index already holds another model's vectors (it
        never drops them: another process may be searching them). Call inside :meth:`write`."""
        self.check_model(model_id, dim)
        self.conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS vec_chunks USING vec0(embedding float[{dim}])")
        self.set_meta("model", model_id)
        self.set_meta("dim", str(dim))

    # ------------------------------------------------------------------ sync
    def rows_all(self) -> dict[str, IndexRow]:
        """Every note row, by path."""
        return {r[1]: IndexRow(*r) for r in self.query(_ROW_COLS)}

    def rows_at(self, exact: set[str], prefixes: tuple[str, ...]) -> dict[str, IndexRow]:
        """Rows at ``exact`` paths or under the folder ``prefixes`` (``"a/"``; path index)."""
        rows: dict[str, IndexRow] = {}
        ex = list(exact)
        for i in range(0, len(ex), 500):
            part = ex[i: i + 500]
            for r in self.query(f"{_ROW_COLS} WHERE path IN ({','.join('?' * len(part))})", part):
                rows[r[1]] = IndexRow(*r)
        for pre in prefixes:  # "a/" <= path < "a0" ('0' follows '/')
            for r in self.query(f"{_ROW_COLS} WHERE path >= ? AND path < ?", (pre, pre[:-1] + "0")):
                rows[r[1]] = IndexRow(*r)
        return rows

    def skips(self) -> dict[str, Skip]:
        """The stored skip list: path → :class:`Skip`."""
        return {r[0]: Skip(r[1], r[2], r[3]) for r in self.query(
            "SELECT path, mtime_ns, size, reason FROM skipped")}

    def note_text(self, note_id: int) -> tuple[str, str, str]:
        """``(name, description, body)`` of a row (the rename check compares them)."""
        rows = self.query("SELECT name, description, body FROM notes WHERE id = ?", (note_id,))
        return tuple(rows[0]) if rows else ("", "", "")

    def apply_sync(self, w: SyncWrite, model_id: str, dim: int | None) -> Applied:
        """Apply one batch of a sync in one ``BEGIN IMMEDIATE`` transaction: delete rows,
        move renamed rows, re-stamp touched files, replace or insert embedded notes (row, FTS,
        chunks, vectors), rewrite the skip list. ``dim`` None means nothing is embedded in this
        batch (the model may still be warming). Raises :class:`IndexModelError` when another
        process has meanwhile given the index another model."""
        with self.write() as c:
            out = Applied(generation=self.generation())
            if dim is not None:
                self.ensure_model(model_id, dim)
            else:
                self.check_model(model_id, None)
            for r in w.delete:
                out.removed_chunks += self.delete_note(r.id)
                out.gone_paths.append(r.path)
            for nid, n, old in w.renames:
                if c.execute("SELECT 1 FROM notes WHERE path = ?", (n.rel,)).fetchone():
                    out.removed_chunks += self.delete_note(nid)  # the new path is taken
                else:
                    c.execute("UPDATE notes SET path = ?, mtime_ns = ?, size = ? WHERE id = ?",
                              (n.rel, n.mtime_ns, n.size, nid))
                    out.rows.append(IndexRow(nid, n.rel, n.mtime_ns, n.size, n.hash, 1))
                out.gone_paths.append(old)
            c.executemany("UPDATE notes SET mtime_ns = ?, size = ?, priority = ?, type = ?, has_description = ?, "
                          "warnings = ?, status = ?, superseded_by = ? WHERE path = ?",
                          [(n.mtime_ns, n.size, int(n.priority), n.type, int(n.has_description),
                            json.dumps(n.warnings), n.status, n.superseded_by, n.rel) for n in w.touched])
            if w.parser is not None:
                self.set_meta("parser", w.parser)
            for n in w.touched:
                row = c.execute(f"{_ROW_COLS} WHERE path = ?", (n.rel,)).fetchone()
                if row:
                    out.rows.append(IndexRow(*row))
            for n, kinds, vecs in w.insert:
                old = c.execute("SELECT id FROM notes WHERE path = ?", (n.rel,)).fetchone()
                if old:
                    out.removed_chunks += self.delete_note(old[0])
                    out.updated_notes += 1
                else:
                    out.added_notes += 1
                nid = self.insert_note(n, embedded=True)
                out.rows.append(IndexRow(nid, n.rel, n.mtime_ns, n.size, n.hash, 1))
                out.added.append((self.insert_vectors(nid, kinds, vecs), nid, vecs))
            if w.skipped is not None:
                c.execute("DELETE FROM skipped")
                c.executemany("INSERT INTO skipped(path, mtime_ns, size, reason) VALUES (?,?,?,?)",
                              [(p, *s) for p, s in w.skipped.items()])
        return out

    def checkpoint(self) -> None:
        """Fold the WAL into the database file and truncate it (``wal_checkpoint(TRUNCATE)``).
        Best effort: readers still in the WAL make SQLite stop early, which is harmless."""
        with self.lock, contextlib.suppress(_DB.Error):
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    # ------------------------------------------------------------------ search support
    def note_count(self) -> int:
        return self.query("SELECT count(*) FROM notes")[0][0]

    def priority_ids(self) -> set[int]:
        """Ids of notes marked ``priority: high``."""
        return {r[0] for r in self.query("SELECT id FROM notes WHERE priority = 1")}

    def note_rows(self, ids: list[int]) -> dict[int, tuple]:
        """``{id: (id, name, description, body, priority, path, status, superseded_by)}`` for the
        given note ids."""
        out: dict[int, tuple] = {}
        for i in range(0, len(ids), 500):
            part = ids[i: i + 500]
            marks = ",".join("?" * len(part))
            for r in self.query("SELECT id, name, description, body, priority, path, status, superseded_by FROM notes "
                                f"WHERE id IN ({marks})", tuple(part)):
                out[r[0]] = r
        return out

    def note_by_name(self, name: str) -> tuple[str, str, str, int, str | None, str, str, str] | None:
        """``(name, description, body, priority, type, path, status, superseded_by)`` of the note
        named exactly ``name`` (the first by path when two share it), or None."""
        rows = self.query("SELECT name, description, body, priority, type, path, status, superseded_by FROM notes "
                          "WHERE name = ? ORDER BY path LIMIT 1", (name,))
        return rows[0] if rows else None

    def note_list(self) -> list[tuple[str, str, int, str]]:
        """``(name, description, priority, path)`` of every note, ★ first, then by name and path."""
        return self.query("SELECT name, description, priority, path FROM notes ORDER BY priority DESC, name, path")

    def lifecycles(self) -> list[tuple[int, str, str, str, str]]:
        """``(id, name, path, status, superseded_by)`` of every note with a status or a successor."""
        return self.query("SELECT id, name, path, status, superseded_by FROM notes "
                          "WHERE status != '' OR superseded_by != ''")

    def priority_rows(self) -> list[tuple[int, str, str]]:
        """``(id, name, description)`` of every priority note."""
        return self.query("SELECT id, name, description FROM notes WHERE priority != 0 ORDER BY name, path")

    def note_texts_all(self) -> list[tuple[str, str]]:
        """``(name, "name description body")`` of every note (the eval's keyword baseline)."""
        return self.query("SELECT name, name || ' ' || description || ' ' || body FROM notes")

    def lint_rows(self) -> list[tuple[int, str, str, str, str, int]]:
        """``(id, path, name, description, body, has_description)`` of every note."""
        return self.query("SELECT id, path, name, description, body, has_description FROM notes")

    def note_warnings(self) -> list[tuple[str, str]]:
        """``(path, warnings as JSON)`` of every note its parse warned about."""
        return self.query("SELECT path, warnings FROM notes WHERE warnings NOT IN ('', '[]')")

    def title_vectors(self) -> list[tuple[int, bytes]]:
        """``(note_id, float32 vector bytes)`` of each note's title vector, by note id; [] when
        the index has no vector table yet."""
        if not self.has_vec_table():
            return []
        return self.query("SELECT c.note_id, v.embedding FROM chunks c JOIN vec_chunks v ON v.rowid = c.id "
                          "WHERE c.kind = 'title' ORDER BY c.note_id")

    def skipped_files(self) -> list[tuple[str, str]]:
        """``(path, reason)`` of each file the last syncs skipped."""
        return self.query("SELECT path, reason FROM skipped")

    # ------------------------------------------------------------------ keyword lane (FTS5)
    def fts_count(self, match: str, cap: int) -> int:
        """Notes the FTS5 expression ``match`` finds, counting stops at ``cap`` + 1."""
        return self.query("SELECT count(*) FROM (SELECT 1 FROM notes_fts WHERE notes_fts MATCH ? LIMIT ?)",
                          (match, cap + 1))[0][0]

    def fts_bm25(self, match: str, limit: int) -> list[int]:
        """Note ids the FTS5 expression ``match`` finds, best BM25 first (name 4×, description
        2×, body 1×), at most ``limit``."""
        return [r[0] for r in self.query("SELECT rowid FROM notes_fts WHERE notes_fts MATCH ? "
                                         "ORDER BY bm25(notes_fts, 4.0, 2.0, 1.0) LIMIT ?", (match, limit))]

    def fts_ids(self, match: str, limit: int) -> list[int]:
        """Note ids the FTS5 expression ``match`` finds, in no order, at most ``limit``."""
        return [r[0] for r in self.query("SELECT rowid FROM notes_fts WHERE notes_fts MATCH ? LIMIT ?",
                                         (match, limit))]

    def notes_named(self, name: str) -> list[tuple[str, str, str, int]]:
        """``(path, description, body, priority)`` of notes whose name equals ``name``
        (case-insensitive)."""
        return self.query("SELECT path, description, body, priority FROM notes "
                          "WHERE lower(name) = lower(?)", (name,))

    def load_vectors(self, spare_rows=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """All vectors: ``(chunk_ids int64 (n,), note_ids int64 (n,), matrix float32 (n, dim))``.

        ``spare_rows(n)``: when given, the matrix (and id arrays, padded with −1) get that many
        extra rows at the end, allocated here so the caller needs no second copy; the first
        ``n`` rows are the vectors."""
        dim = int(self.get_meta("dim") or 0)
        if not dim or not self.has_vec_table():
            return (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, max(dim, 1)), np.float32))
        rows = self.query(
            "SELECT v.rowid, c.note_id, v.embedding FROM vec_chunks v JOIN chunks c ON c.id = v.rowid "
            "ORDER BY v.rowid")  # a note's title vector is its first (lowest) chunk id
        n = len(rows)
        spare = spare_rows(n) if spare_rows else 0
        ids = np.full(n + spare, -1, np.int64)
        ids[:n] = np.fromiter((r[0] for r in rows), np.int64, n)
        notes = np.full(n + spare, -1, np.int64)
        notes[:n] = np.fromiter((r[1] for r in rows), np.int64, n)
        mat = np.zeros((n + spare, dim), np.float32)
        if n:
            mat[:n] = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(n, dim)
        return ids, notes, mat

    # ------------------------------------------------------------------ rows
    def delete_note(self, note_id: int) -> list[int]:
        """Delete a note's row, FTS row, chunks and vectors; returns the deleted chunk ids."""
        c = self.conn
        chunk_ids = [r[0] for r in c.execute("SELECT id FROM chunks WHERE note_id = ?", (note_id,))]
        if chunk_ids and self.has_vec_table():
            c.executemany("DELETE FROM vec_chunks WHERE rowid = ?", [(i,) for i in chunk_ids])
        c.execute("DELETE FROM chunks WHERE note_id = ?", (note_id,))
        c.execute("DELETE FROM notes_fts WHERE rowid = ?", (note_id,))
        c.execute("DELETE FROM notes WHERE id = ?", (note_id,))
        return chunk_ids

    def insert_note(self, note, embedded: bool) -> int:
        c = self.conn
        cur = c.execute(
            "INSERT INTO notes(path, name, description, body, priority, type, has_description,"
            " mtime_ns, size, hash, warnings, embedded, status, superseded_by) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (note.rel, note.name, note.description, note.body, int(note.priority), note.type,
             int(note.has_description), note.mtime_ns, note.size, note.hash,
             json.dumps(note.warnings), int(embedded), note.status, note.superseded_by))
        nid = cur.lastrowid
        c.execute("INSERT INTO notes_fts(rowid, name, description, body) VALUES (?,?,?,?)",
                  (nid, note.name.replace("-", " ").replace("_", " "), note.description, note.body))
        return nid

    def insert_vectors(self, note_id: int, kinds: list[str], vectors: np.ndarray) -> list[int]:
        c = self.conn
        ids = []
        for kind in kinds:
            ids.append(c.execute("INSERT INTO chunks(note_id, kind) VALUES (?, ?)",
                                 (note_id, kind)).lastrowid)
        c.executemany("INSERT INTO vec_chunks(rowid, embedding) VALUES (?, ?)",
                      [(i, np.ascontiguousarray(v, dtype=np.float32).tobytes())
                       for i, v in zip(ids, vectors, strict=False)])
        return ids

    def close(self) -> None:
        with self.lock:
            with contextlib.suppress(Exception):
                self.conn.close()
