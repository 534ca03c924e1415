"""Durable file state of one Auto Loader stream: an append-only discovery log in SQLite.

Every file is recorded once, in discovery order, with a sequence number. Stream offsets are
sequence numbers, so the files of a micro-batch are a range of this log, the same after
any restart: exactly-once. Lookups are by primary key, so a trigger costs O(new files) in
time and memory, not O(files ever seen). SQLite is in the standard library and commits
atomically; the store lives in ``<schemaLocation>/_headwater_file_state/``.

On an object store that folder holds a log of changes instead (:mod:`.state_log`) and the
SQLite database is a local cache of it: every change is applied in a SQLite transaction,
written to the log, and only then committed, so the log is never behind what a stream
offset refers to.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pyarrow as pa

from headwater import storage
from headwater.autoloader.state_log import CHECKPOINT_INTERVAL, Change, StateLog, cache_path
from headwater.errors import StorageError

log = logging.getLogger(__name__)

STATE_DIR = "_headwater_file_state"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    path TEXT NOT NULL,
    size INTEGER NOT NULL,
    modification_time INTEGER NOT NULL,
    discovery_time INTEGER NOT NULL,
    commit_time INTEGER,
    archive_time INTEGER,
    skipped INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX IF NOT EXISTS files_version ON files(path, modification_time, size);
CREATE INDEX IF NOT EXISTS files_path ON files(path);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_COLUMNS = "seq, path, size, modification_time, discovery_time, commit_time, archive_time, skipped"

# Every change of the state, by the name the durable log records it under; each statement
# runs once per row of parameters, so replaying a change is applying it again.
OPERATIONS = {
    "add": "INSERT INTO files(seq, path, size, modification_time, discovery_time) "
    "VALUES (?,?,?,?,?)",
    "commit": "UPDATE files SET commit_time=? WHERE seq<=? AND commit_time IS NULL",
    "skip": "UPDATE files SET skipped=1 WHERE seq<=? AND skipped=0",
    "archive": "UPDATE files SET archive_time=? WHERE seq=?",
    "forget": "DELETE FROM files WHERE modification_time<? AND seq<=? AND commit_time IS NOT NULL",
}


@dataclass(frozen=True)
class FileEntry:
    seq: int
    path: str
    size: int
    modification_time: int


class FileState:
    """The discovery log of one stream. ``durable_log`` keeps the truth in a log of changes
    at ``location`` with SQLite as a local cache; it is on by default for object stores,
    and worth turning on for network mounts, where SQLite's locking is not to be trusted."""

    def __init__(self, location: str, durable_log: bool | None = None) -> None:
        self.dir = storage.join(storage.normalize(location), STATE_DIR)
        if durable_log is None:
            durable_log = storage.is_remote(location)
        self._log = StateLog(self.dir) if durable_log else None
        if self._log is None:
            os.makedirs(self.dir, exist_ok=True)
            self.path = os.path.join(self.dir, "files.sqlite")
        else:
            self.path = cache_path(self.dir)
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)
        self._snapshot_due: int | None = None
        if self._log is None:
            self._db.execute(
                "INSERT OR IGNORE INTO meta VALUES ('state_id', ?)", (uuid.uuid4().hex,)
            )
        else:
            self._catch_up(self._log)

    @property
    def state_id(self) -> str:
        return self._db.execute("SELECT value FROM meta WHERE key='state_id'").fetchone()[0]

    def close(self) -> None:
        self._db.close()

    # -- changes -----------------------------------------------------------------------------

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Cursor]:
        cur = self._db.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            yield cur
            cur.execute("COMMIT")
        except BaseException:
            cur.execute("ROLLBACK")
            self._snapshot_due = None
            raise
        if self._snapshot_due is not None:
            version, self._snapshot_due = self._snapshot_due, None
            try:
                self._snapshot(version)
            except Exception as e:  # a snapshot is a shortcut only: the change is in the log
                log.warning(
                    "Auto Loader file state %s: no snapshot at %d (%s)", self.dir, version, e
                )

    def _logged(self, cur: sqlite3.Cursor, change: Change) -> None:
        """Write ``change`` (applied in the open transaction) to the durable log, if any, as
        the version after the cache's; the transaction commits only once it is there."""
        if self._log is None or not change:
            return
        version = _version(cur) + 1
        self._log.append(version, change)
        cur.execute("INSERT OR REPLACE INTO meta VALUES ('log_version', ?)", (str(version),))
        if version % CHECKPOINT_INTERVAL == 0:
            self._snapshot_due = version

    def _change(self, name: str, rows: list[list]) -> int:
        """Apply one operation of :data:`OPERATIONS`; logged when it changed anything."""
        with self._transaction() as cur:
            cur.executemany(OPERATIONS[name], rows)
            changed = cur.rowcount
            if changed:
                self._logged(cur, [(name, rows)])
        return changed

    def _catch_up(self, log: StateLog) -> None:
        """Bring the cache to the log's newest version (rebuilt when it belongs to another
        state or the changes it needs were folded into a snapshot)."""
        state_id = log.state_id()
        with self._transaction() as cur:
            cached = cur.execute("SELECT value FROM meta WHERE key='state_id'").fetchone()
            if cached is None or cached[0] != state_id:
                _clear(cur)
                cur.execute("INSERT INTO meta VALUES ('state_id', ?)", (state_id,))
            version = _version(cur)
            pending = log.pending(version)
            if pending.snapshot is not None:
                _clear(cur, keep_meta=True)
                table = log.read_snapshot(pending.snapshot)
                cur.executemany(
                    f"INSERT INTO files({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?)",
                    zip(*(table.column(c).to_pylist() for c in _COLUMNS.split(", ")), strict=True),
                )
                version = pending.snapshot
            for number in pending.changes:
                if number != version + 1:
                    raise StorageError(
                        f"Auto Loader file state {log.dir}: change {version + 1} is missing "
                        f"(found {number}). The log was edited; restore it, or start the "
                        "stream with a new cloudFiles.schemaLocation and checkpointLocation."
                    )
                for name, rows in log.read(number):
                    cur.executemany(OPERATIONS[name], rows)
                version = number
            cur.execute("INSERT OR REPLACE INTO meta VALUES ('log_version', ?)", (str(version),))

    def _snapshot(self, version: int) -> None:
        assert self._log is not None
        rows = self._db.execute(f"SELECT {_COLUMNS} FROM files ORDER BY seq").fetchall()
        types = {
            name: pa.string() if name == "path" else pa.int64() for name in _COLUMNS.split(", ")
        }
        table = pa.table(
            {name: pa.array([r[i] for r in rows], t) for i, (name, t) in enumerate(types.items())}
        )
        self._log.write_snapshot(version, table)

    def record(self, files: Iterable[tuple[str, int, int]], allow_overwrites: bool) -> int:
        """Add newly seen ``(path, size, mtime_ms)`` files; returns how many were new.

        Without ``allow_overwrites`` a path is processed once, whatever happens to it later;
        with it, a path whose size or modification time changed is recorded again. The
        listing is compared with the state inside SQLite (one anti-join), not in Python.
        """
        now = int(time.time() * 1000)
        with self._transaction() as cur:
            cur.execute(
                "CREATE TEMP TABLE IF NOT EXISTS listed (path TEXT, size INTEGER, mtime INTEGER)"
            )
            cur.execute("DELETE FROM listed")
            cur.executemany("INSERT INTO listed VALUES (?,?,?)", files)
            known = (
                "f.path = l.path AND f.modification_time = l.mtime AND f.size = l.size"
                if allow_overwrites
                else "f.path = l.path"
            )
            last = _last_seq(cur)
            cur.execute(
                "INSERT INTO files(path, size, modification_time, discovery_time) "
                f"SELECT l.path, l.size, l.mtime, ? FROM listed l WHERE NOT EXISTS "
                f"(SELECT 1 FROM files f WHERE {known}) ORDER BY l.mtime, l.path",
                (now,),
            )
            added = cur.rowcount
            cur.execute("DELETE FROM listed")
            if added and self._log is not None:
                rows = cur.execute(
                    "SELECT seq, path, size, modification_time, discovery_time FROM files "
                    "WHERE seq>? ORDER BY seq",
                    (last,),
                ).fetchall()
                self._logged(cur, [("add", [list(r) for r in rows])])
        return added

    def last_path(self) -> str | None:
        """The greatest path recorded (where an incremental listing starts after)."""
        return self._db.execute("SELECT MAX(path) FROM files").fetchone()[0]

    def arrival_ordered(self, sample: int = 100, at_least: int = 10) -> bool:
        """Whether the latest ``sample`` files, in the order they were discovered, also sort
        by name (dated or numbered names): what makes incremental listing safe."""
        paths = [
            r[0]
            for r in self._db.execute(
                "SELECT path FROM files ORDER BY seq DESC LIMIT ?", (sample,)
            ).fetchall()
        ]
        return len(paths) >= at_least and paths == sorted(paths, reverse=True)

    def max_seq(self) -> int:
        return self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM files").fetchone()[0]

    def mark_skipped_upto(self, seq: int) -> None:
        """Files present before the first start, with includeExistingFiles=false."""
        self._change("skip", [[seq]])

    def admit(
        self, after: int, max_files: int | None, max_bytes: int | None, upto: int | None = None
    ) -> int:
        """The end sequence number of the next batch after ``after`` within the limits."""
        query = "SELECT seq, size FROM files WHERE seq>? AND skipped=0"
        params: list = [after]
        if upto is not None:
            query += " AND seq<=?"
            params.append(upto)
        query += " ORDER BY seq"
        if max_files is not None:
            query += " LIMIT ?"
            params.append(max_files)
        end, total = after, 0
        for seq, size in self._db.execute(query, params):
            if max_bytes is not None and total >= max_bytes and end > after:
                break
            end, total = seq, total + size
        return end

    def between(self, start: int, end: int) -> list[FileEntry]:
        rows = self._db.execute(
            "SELECT seq, path, size, modification_time FROM files WHERE seq>? AND seq<=? AND skipped=0 ORDER BY seq",
            (start, end),
        )
        return [FileEntry(*r) for r in rows]

    def outstanding(self) -> tuple[int, int]:
        """Files (and bytes) discovered but not yet committed by the stream."""
        return _outstanding(self._db)

    def note_reading(self, upto: int) -> None:
        """The batch being read ends at ``upto``: its files are no longer waiting, though
        Spark marks them committed only when it plans the next batch. A local hint for the
        backlog, not a change of the durable log (lost with the cache, it only makes the
        backlog count those files again)."""
        self._db.execute(
            "INSERT OR REPLACE INTO meta VALUES ('reading_upto', ?)", (str(int(upto)),)
        )

    def mark_committed(self, upto: int) -> list[FileEntry]:
        now = int(time.time() * 1000)
        rows = self._db.execute(
            "SELECT seq, path, size, modification_time FROM files WHERE seq<=? AND commit_time IS NULL AND skipped=0",
            (upto,),
        ).fetchall()
        self._change("commit", [[now, upto]])  # skipped files too: they count as done
        return [FileEntry(*r) for r in rows]

    def to_archive(self, older_than_ms: int) -> list[FileEntry]:
        rows = self._db.execute(
            "SELECT seq, path, size, modification_time FROM files "
            "WHERE commit_time IS NOT NULL AND commit_time<=? AND archive_time IS NULL",
            (older_than_ms,),
        )
        return [FileEntry(*r) for r in rows]

    def mark_archived(self, seqs: list[int]) -> None:
        now = int(time.time() * 1000)
        if seqs:
            self._change("archive", [[now, s] for s in seqs])

    def forget_older_than(self, mtime_ms: int, committed_upto: int) -> int:
        """Drop committed entries of files older than ``maxFileAge`` (bounds the state)."""
        return self._change("forget", [[mtime_ms, committed_upto]])

    def rows(self) -> list[tuple]:
        return self._db.execute(
            "SELECT path, size, modification_time, discovery_time, commit_time, archive_time "
            "FROM files WHERE skipped=0 ORDER BY seq"
        ).fetchall()


def outstanding_at(location: str) -> tuple[int, int] | None:
    """:meth:`FileState.outstanding` of the state at ``location``, read without writing
    (an observer must not create or migrate a running stream's state); None if absent.
    On an object store that is the local cache, as current as the stream on this machine
    left it."""
    state_dir = storage.join(storage.normalize(location), STATE_DIR)
    if storage.is_remote(location):
        path = cache_path(state_dir)
    else:
        path = os.path.join(state_dir, "files.sqlite")
    if not os.path.isfile(path):
        return None
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=60)
    try:
        return _outstanding(db)
    finally:
        db.close()


def _version(cur: sqlite3.Cursor) -> int:
    row = cur.execute("SELECT value FROM meta WHERE key='log_version'").fetchone()
    return int(row[0]) if row else 0


def _last_seq(cur: sqlite3.Cursor) -> int:
    row = cur.execute("SELECT seq FROM sqlite_sequence WHERE name='files'").fetchone()
    return row[0] if row else 0


def _clear(cur: sqlite3.Cursor, keep_meta: bool = False) -> None:
    cur.execute("DELETE FROM files")
    cur.execute("DELETE FROM sqlite_sequence WHERE name='files'")
    if not keep_meta:
        cur.execute("DELETE FROM meta")


def _outstanding(db: sqlite3.Connection) -> tuple[int, int]:
    n, size = db.execute(
        "SELECT COUNT(*), COALESCE(SUM(size), 0) FROM files WHERE commit_time IS NULL AND "
        "skipped=0 AND seq > COALESCE((SELECT CAST(value AS INTEGER) FROM meta "
        "WHERE key='reading_upto'), 0)"
    ).fetchone()
    return n, size
