"""Durable file state of one Auto Loader stream: an append-only discovery log in SQLite.

Every file is recorded once, in discovery order, with a sequence number. Stream offsets are
sequence numbers, so the files of a micro-batch are a range of this log, the same after
any restart: exactly-once. Lookups are by primary key, so a trigger costs O(new files) in
time and memory, not O(files ever seen). SQLite is in the standard library and commits
atomically; the store lives in ``<schemaLocation>/_headwater_file_state/``.
"""

from __future__ import annotations

import os
import sqlite3
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from headwater import storage
from headwater.errors import OptionError

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


@dataclass(frozen=True)
class FileEntry:
    seq: int
    path: str
    size: int
    modification_time: int


class FileState:
    def __init__(self, location: str) -> None:
        if storage.is_remote(location):
            raise OptionError(
                f"cloudFiles.schemaLocation {location} is on an object store; Auto Loader "
                "keeps its file state (SQLite) on a local or mounted filesystem so far. Put "
                "cloudFiles.schemaLocation and checkpointLocation on one (the landing folder "
                "and the table may stay on the object store)."
            )
        self.dir = os.path.join(location, STATE_DIR)
        os.makedirs(self.dir, exist_ok=True)
        self.path = os.path.join(self.dir, "files.sqlite")
        self._db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)
        self._db.execute("INSERT OR IGNORE INTO meta VALUES ('state_id', ?)", (uuid.uuid4().hex,))

    @property
    def state_id(self) -> str:
        return self._db.execute("SELECT value FROM meta WHERE key='state_id'").fetchone()[0]

    def close(self) -> None:
        self._db.close()

    def record(self, files: Iterable[tuple[str, int, int]], allow_overwrites: bool) -> int:
        """Add newly seen ``(path, size, mtime_ms)`` files; returns how many were new.

        Without ``allow_overwrites`` a path is processed once, whatever happens to it later;
        with it, a path whose size or modification time changed is recorded again. The
        listing is compared with the state inside SQLite (one anti-join), not in Python.
        """
        now = int(time.time() * 1000)
        cur = self._db.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
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
            cur.execute(
                "INSERT INTO files(path, size, modification_time, discovery_time) "
                f"SELECT l.path, l.size, l.mtime, ? FROM listed l WHERE NOT EXISTS "
                f"(SELECT 1 FROM files f WHERE {known}) ORDER BY l.mtime, l.path",
                (now,),
            )
            added = cur.rowcount
            cur.execute("DELETE FROM listed")
            cur.execute("COMMIT")
        except BaseException:
            cur.execute("ROLLBACK")
            raise
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
        self._db.execute("UPDATE files SET skipped=1 WHERE seq<=?", (seq,))

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

    def mark_committed(self, upto: int) -> list[FileEntry]:
        now = int(time.time() * 1000)
        rows = self._db.execute(
            "SELECT seq, path, size, modification_time FROM files WHERE seq<=? AND commit_time IS NULL AND skipped=0",
            (upto,),
        ).fetchall()
        self._db.execute(
            "UPDATE files SET commit_time=? WHERE seq<=? AND commit_time IS NULL", (now, upto)
        )
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
        self._db.executemany(
            "UPDATE files SET archive_time=? WHERE seq=?", [(now, s) for s in seqs]
        )

    def forget_older_than(self, mtime_ms: int, committed_upto: int) -> int:
        """Drop committed entries of files older than ``maxFileAge`` (bounds the state)."""
        cur = self._db.execute(
            "DELETE FROM files WHERE modification_time<? AND seq<=? AND commit_time IS NOT NULL",
            (mtime_ms, committed_upto),
        )
        return cur.rowcount

    def rows(self) -> list[tuple]:
        return self._db.execute(
            "SELECT path, size, modification_time, discovery_time, commit_time, archive_time "
            "FROM files WHERE skipped=0 ORDER BY seq"
        ).fetchall()


def outstanding_at(location: str) -> tuple[int, int] | None:
    """:meth:`FileState.outstanding` of the state at ``location``, read without writing
    (an observer must not create or migrate a running stream's state); None if absent."""
    path = os.path.join(location, STATE_DIR, "files.sqlite")
    if not os.path.isfile(path):
        return None
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=60)
    try:
        return _outstanding(db)
    finally:
        db.close()


def _outstanding(db: sqlite3.Connection) -> tuple[int, int]:
    n, size = db.execute(
        "SELECT COUNT(*), COALESCE(SUM(size), 0) FROM files WHERE commit_time IS NULL AND skipped=0"
    ).fetchone()
    return n, size
