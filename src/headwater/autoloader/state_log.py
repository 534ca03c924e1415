"""The durable log behind an Auto Loader file state kept on an object store.

SQLite needs a filesystem with locks and in-place page writes; object stores have neither
(and SQLite on a network mount is unsafe for the same reason). There, the truth of the
file state is this log under ``<schemaLocation>/_headwater_file_state/log/``: one object
per change, numbered from 1, created with create-if-absent (a crash leaves a change whole
or absent; two writers cannot both write version n). Every :data:`CHECKPOINT_INTERVAL`
versions a Parquet snapshot of the whole state is written and entries older than the
previous snapshot are removed, so the log stays bounded however long the stream runs.

The SQLite database becomes a cache on local disk (:func:`cache_path`): opened, it applies
the entries after the version it holds; lost — a new machine, a new container — it is
rebuilt from the newest snapshot and the entries after it.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import uuid
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from headwater import storage
from headwater.errors import StorageError
from headwater.storage.guard import check_create_if_absent

CHECKPOINT_INTERVAL = 100
CACHE_ENV = "HEADWATER_STATE_CACHE"

_ENTRY = re.compile(r"(\d{20})\.(json|checkpoint\.parquet)$")

# A change is a list of operations ``(name, rows)``; each names one parameterised SQL
# statement of the state (see ``state.OPERATIONS``) run once per row.
Change = list[tuple[str, list[list]]]


@dataclass(frozen=True)
class Pending:
    """What a cache at some version must read to be current: the changes after it, or the
    newest snapshot first when the changes it needs were already removed."""

    changes: list[int]
    snapshot: int | None


def cache_path(state_dir: str) -> str:
    """Where the local SQLite cache of the state at ``state_dir`` lives: under
    ``$HEADWATER_STATE_CACHE`` (default ``~/.cache/headwater/file-state``), one folder per
    state location, so a restarted stream on the same machine only reads what is new."""
    root = os.environ.get(CACHE_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
        "headwater",
        "file-state",
    )
    name = hashlib.sha256(storage.normalize(state_dir).encode()).hexdigest()[:24]
    return os.path.join(root, name, "files.sqlite")


class StateLog:
    """The numbered changes and snapshots of one file state on a store with create-if-absent
    writes (S3, or any local or mounted folder)."""

    def __init__(self, state_dir: str) -> None:
        self.dir = storage.join(state_dir, "log")
        self._id_path = storage.join(state_dir, "state_id")
        check_create_if_absent(state_dir)

    def state_id(self) -> str:
        """The identity of this state (what stream offsets name), created by the first
        writer; a state location deleted and recreated gets a new one."""
        storage.put_if_absent(self._id_path, uuid.uuid4().hex.encode())
        return storage.read_bytes(self._id_path).decode()

    def _entry(self, version: int, kind: str = "json") -> str:
        return storage.join(self.dir, f"{version:020d}.{kind}")

    def pending(self, version: int) -> Pending:
        """The entries a cache at ``version`` has not applied (one listing after its key)."""
        changes: list[int] = []
        snapshots: list[int] = []
        for path, _size, _modified in storage.list_after(self.dir, self._entry(version)):
            match = _ENTRY.search(path)
            if match is None:
                continue
            number = int(match.group(1))
            if number <= version:
                continue  # the snapshot of the cache's own version sorts after its change
            (changes if match.group(2) == "json" else snapshots).append(number)
        if not changes or changes[0] == version + 1 or not snapshots:
            return Pending(changes, None)
        snapshot = max(snapshots)
        return Pending([c for c in changes if c > snapshot], snapshot)

    def read(self, version: int) -> Change:
        body = json.loads(storage.read_bytes(self._entry(version)))
        return [(name, rows) for name, rows in body["ops"]]

    def append(self, version: int, change: Change) -> None:
        """Write ``change`` as ``version``; refused when that version exists, which means
        another stream is writing the same state."""
        body = json.dumps({"version": version, "ops": change}, separators=(",", ":"))
        if not storage.put_if_absent(self._entry(version), body.encode()):
            raise StorageError(
                f"Auto Loader file state {self.dir}: version {version} was written by "
                "another process. Two streams share this cloudFiles.schemaLocation; give "
                "each stream its own (and its own checkpointLocation).",
                error_class="HEADWATER_FILE_STATE_CONCURRENT_WRITER",
            )

    def write_snapshot(self, version: int, table: pa.Table) -> None:
        """Snapshot the whole state at ``version``, then drop what the previous snapshot
        already covers (a cache older than that rebuilds from a snapshot)."""
        sink = io.BytesIO()
        pq.write_table(table, sink)
        storage.put_if_absent(self._entry(version, "checkpoint.parquet"), sink.getvalue())
        older = version - CHECKPOINT_INTERVAL
        for path, _size, _modified in list(storage.list_after(self.dir, "")):
            match = _ENTRY.search(path)
            if match and int(match.group(1)) < older:
                storage.delete_file(path)

    def read_snapshot(self, version: int) -> pa.Table:
        data = storage.read_bytes(self._entry(version, "checkpoint.parquet"))
        return pq.read_table(pa.BufferReader(data))
