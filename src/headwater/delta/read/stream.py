"""Streaming reads of a Delta table: the snapshot first, then every later append.

An offset is the position of the next file to read::

    {"version": v, "index": i, "snapshot": bool}

With ``snapshot`` true it points into the table as of version ``v`` (files ordered by
modification time, then path); otherwise into the data files added by commit ``v``, in log
order. ``"unread": true`` marks a position a ``startingVersion=latest`` stream has not read
past yet: delta-spark's source reports no offset until it has data, so a run that read
nothing leaves no position and the next run starts at the latest version again; Spark runs
(and checkpoints) a first batch of a Python source whatever it holds, so a run resumed at
such a position starts at the latest version again too (:meth:`latestOffset`). Offsets
are normalised (a fully read commit becomes ``(v + 1, 0)``), so equal positions mean no
new data. The log is immutable, so the files between two offsets are the same after any
restart: that is what makes the query exactly-once.

A stream given no starting version begins with the table's snapshot at the version its
first batch is planned at. Spark keeps no start for a first batch: a query restarted before
that batch committed runs it again from :meth:`~DeltaStreamReader.initialOffset`, asked of
a new reader, while its end is the one checkpointed. So that initial offset is the same
after any restart, ``{"version": -1, ...}`` ("the snapshot the first batch began with"),
and the version of that snapshot travels in every offset planned from it, as ``"began"``.
(A ``startingVersion=latest`` stream's first batch is planned at the latest version and
holds nothing: run again from a later one, it still holds nothing.)
A start that named the latest version instead moved on with the table: killed between
checkpointing its first batch's end and committing the batch, a stream over a table that
kept growing ran that batch from past its end, and the snapshot's rows were never read.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import cached_property
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxFiles,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from headwater import storage, stream_runner
from headwater.delta.files.arrow_read import (
    FilePartition,
    FileTask,
    physical_for,
    plan_partitions,
    read_files,
)
from headwater.delta.log import deletion_vectors
from headwater.delta.log.commit_times import ChangeTimes
from headwater.delta.log.delta_log import DeltaLog
from headwater.delta.read import change_feed as cdf
from headwater.delta.schema import column_mapping as mapping
from headwater.errors import StreamingSourceChangedError
from headwater.options import as_bool, as_bytes, as_int

log = logging.getLogger(__name__)

DEFAULT_MAX_FILES = 1000


@dataclass(frozen=True)
class Position:
    version: int  # -1: the snapshot a stream's first batch begins with (see the module doc)
    index: int
    snapshot: bool
    unread: bool = False  # startingVersion=latest, nothing read yet (see the module doc)
    began: int | None = None  # the version of that snapshot, once a batch was planned

    def to_offset(self) -> dict:
        offset: dict = {"version": self.version, "index": self.index, "snapshot": self.snapshot}
        if self.unread:
            offset["unread"] = True
        if self.began is not None:
            offset["began"] = self.began
        return offset

    @classmethod
    def of(cls, offset: dict) -> Position:
        began = offset.get("began")
        return cls(
            int(offset["version"]),
            int(offset["index"]),
            bool(offset["snapshot"]),
            bool(offset.get("unread", False)),
            None if began is None else int(began),
        )


# Where a stream without a starting version begins, until its first batch is planned: the
# snapshot as of the version it is planned at (see the module doc).
BEGINNING = Position(-1, 0, True)


class DeltaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, path: str, options: dict[str, str], schema: StructType) -> None:
        stream_runner.pyarrow_without_pandas()  # (the stream's start: headwater.stream_runner)
        self.log = DeltaLog(path)
        self.schema = schema
        self.max_files = as_int(
            options.get("maxfilespertrigger"), "maxFilesPerTrigger", DEFAULT_MAX_FILES
        )
        self.max_bytes = as_bytes(options.get("maxbytespertrigger"), "maxBytesPerTrigger")
        self.skip_change_commits = as_bool(options.get("skipchangecommits"), "skipChangeCommits")
        self.ignore_deletes = as_bool(options.get("ignoredeletes"), "ignoreDeletes")
        self.ignore_changes = as_bool(options.get("ignorechanges"), "ignoreChanges")
        self.starting_version = options.get("startingversion")
        self.starting_timestamp = options.get("startingtimestamp")
        self.change_feed = cdf.requested(options)
        self.available_now_target: int | None = None
        self._files_cache: dict[tuple[int, bool], list[FileTask]] = {}
        self._initial: dict | None = None
        self._restarted_latest = False
        self._change_times: ChangeTimes | None = None  # from the first version read

    # -- offsets ---------------------------------------------------------------------------

    def initialOffset(self) -> dict:
        """Taken once: Spark asks again when it runs the first batch it planned, and a
        commit landing in between must not move the start (the snapshot's rows would be
        skipped: the batch would run from past its own end)."""
        if self._initial is None:
            self._initial = self._initial_offset()
        return self._initial

    def _initial_offset(self) -> dict:
        if self.starting_version is not None:
            if str(self.starting_version).lower() == "latest":
                return Position(self.log.latest_version() + 1, 0, False, True).to_offset()
            return Position(int(self.starting_version), 0, False).to_offset()
        if self.starting_timestamp is not None:
            version = cdf.first_version_at_or_after(self.log, self.starting_timestamp)
            return Position(version, 0, False).to_offset()
        return BEGINNING.to_offset()

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.max_bytes is not None and self.max_files == DEFAULT_MAX_FILES:
            return ReadMaxBytes(self.max_bytes)
        return ReadMaxFiles(self.max_files or DEFAULT_MAX_FILES)

    def prepareForTriggerAvailableNow(self) -> None:
        self.available_now_target = self.log.latest_version()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        pos = Position.of(start)
        latest = self.log.latest_version()
        if self.available_now_target is not None:
            latest = min(latest, self.available_now_target)
        if pos.unread and self._initial is None and not self._restarted_latest:
            # Resumed where an earlier run of a startingVersion=latest stream read nothing:
            # the latest version again, as delta-spark's source starts there (one empty batch).
            self._restarted_latest = True
            return Position(latest + 1, 0, False, True).to_offset()
        if pos.version == BEGINNING.version:  # the snapshot as of now, and noted as such
            pos = Position(latest, 0, True, began=latest)
        start_pos = pos
        unlimited = isinstance(limit, ReadAllAvailable)
        max_files = None if unlimited else self.max_files
        max_bytes = None if unlimited else self.max_bytes
        taken_files = 0
        taken_bytes = 0
        while pos.version <= latest:
            files = self._files(pos)
            while pos.index < len(files):
                if taken_files and (
                    (max_files is not None and taken_files >= max_files)
                    or (max_bytes is not None and taken_bytes >= max_bytes)
                ):
                    return replace(pos, began=start_pos.began).to_offset()
                taken_files += 1
                taken_bytes += files[pos.index].size
                pos = Position(pos.version, pos.index + 1, pos.snapshot)
            pos = Position(pos.version + 1, 0, False)
        unread = start_pos.unread and not taken_files
        return replace(pos, unread=unread, began=start_pos.began).to_offset()

    def reportLatestOffset(self) -> dict | None:
        return Position(self.log.latest_version() + 1, 0, False).to_offset()

    # -- data ------------------------------------------------------------------------------

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        pos, stop = Position.of(start), Position.of(end)
        if stop.unread:  # nothing read: the start moved to the latest version
            return []
        if pos.version == BEGINNING.version:
            pos = Position(self._began(stop), 0, True)
        tasks: list[FileTask] = []
        while (pos.version, pos.index) < (stop.version, stop.index):
            files = self._files(pos)
            upto = stop.index if stop.version == pos.version else len(files)
            tasks.extend(files[pos.index : upto])
            pos = Position(pos.version + 1, 0, False)
        return list(plan_partitions(tasks, physical=self._physical))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, FilePartition)
        if self.change_feed:
            yield from cdf.read_changes(partition.tasks, self.schema, partition.physical_schema)
        else:
            yield from read_files(partition.tasks, self.schema, partition.physical_schema)

    def _began(self, end: Position) -> int:
        """The version of the snapshot a first batch ending at ``end`` began with. An end
        checkpointed by an earlier headwater does not say: inside a snapshot it is that
        snapshot's; past it, the latest version is where that headwater began again too."""
        if end.began is not None:
            return end.began
        if end.snapshot:
            return end.version
        log.warning(
            "The first batch of the stream over %s was planned by an earlier headwater and "
            "not committed; it is run again from the table's latest version.",
            self.log.root,
        )
        return self.log.latest_version()

    @cached_property
    def _physical(self) -> StructType | None:
        return physical_for(self.log.snapshot(), self.schema)

    @cached_property
    def _logical_partition_names(self) -> dict[str, str]:
        """Physical -> logical column names (the identity without column mapping)."""
        return mapping.logical_paths(self.log.snapshot().schema)

    def commit(self, end: dict) -> None:
        version = Position.of(end).version
        for key in [k for k in self._files_cache if k[0] < version]:
            del self._files_cache[key]

    # -- the files at a position -----------------------------------------------------------

    def _files(self, pos: Position) -> list[FileTask]:
        key = (pos.version, pos.snapshot)
        if key not in self._files_cache:
            loader = self._snapshot_files if pos.snapshot else self._commit_files
            self._files_cache[key] = loader(pos.version)
        return self._files_cache[key]

    def _snapshot_files(self, version: int) -> list[FileTask]:
        snapshot = self.log.snapshot(version=version)
        snapshot.check_readable()
        if self.change_feed:
            return cdf.snapshot_tasks(self.log, snapshot)
        files = sorted(snapshot.files, key=lambda f: (f.modification_time, f.path))
        dvs = snapshot.deletion_vectors
        return [
            FileTask(
                f.absolute(self.log.root),
                f.size,
                tuple(sorted(f.partition_values.items())),
                dvs.get(f.path),
            )
            for f in files
        ]

    def _commit_files(self, version: int) -> list[FileTask]:
        actions = self.log.commit_actions(version)
        adds = [a["add"] for a in actions if "add" in a and a["add"].get("dataChange", True)]
        removes = [
            a["remove"] for a in actions if "remove" in a and a["remove"].get("dataChange", True)
        ]
        metadata = next((a["metaData"] for a in actions if "metaData" in a), None)
        if metadata is not None:
            self._check_schema(version, metadata)
        if self.change_feed:
            if self._change_times is None:
                self._change_times = ChangeTimes(self.log.log_dir, version)
            names = self._logical_partition_names
            return cdf.version_tasks(self.log, version, actions, names, self._change_times)
        if removes:
            if self.skip_change_commits:
                return []
            if self.ignore_changes:
                pass  # re-delivers rewritten files' rows, as delta-spark's ignoreChanges does
            elif self.ignore_deletes and not adds:
                return []
            else:
                raise StreamingSourceChangedError(
                    f"Detected a data update (for example MERGE, UPDATE, DELETE or OVERWRITE) in the "
                    f"source table {self.log.root} at version {version}. This is currently not "
                    "supported for streaming reads. If this is going to happen regularly and you are "
                    "okay to skip changes, set the option 'skipChangeCommits' to 'true'; to ignore "
                    "commits that only delete data, set 'ignoreDeletes' to 'true'. Or restart the "
                    "query from a later version with 'startingVersion'."
                )
        names = self._logical_partition_names
        vectors: dict[str, bytes] = {}  # vector files read for this commit
        return [
            FileTask(
                storage.join(self.log.root, unquote(a["path"])),
                int(a.get("size", 0)),
                tuple(
                    sorted(
                        (names.get(k, k), v) for k, v in (a.get("partitionValues") or {}).items()
                    )
                ),
                self._selection(a.get("deletionVector"), vectors),
            )
            for a in adds
        ]

    def _selection(self, vector: dict | None, cache: dict[str, bytes]) -> tuple[bool, ...] | None:
        """The rows of a re-added file its deletion vector keeps (ignoreChanges re-delivers
        a file a DML marked rows of, without those rows)."""
        if not vector:
            return None
        deleted = deletion_vectors.read(self.log.root, vector, cache)
        live = np.ones(int(deleted.max()) + 1 if len(deleted) else 0, dtype=bool)
        live[deleted.astype(np.int64)] = False
        return tuple(live.tolist())

    def _check_schema(self, version: int, metadata: dict) -> None:
        import json

        new = StructType.fromJson(json.loads(metadata["schemaString"]))
        current = cdf.data_part(self.schema)
        if new != current and {f.name for f in new} != {f.name for f in current}:
            raise StreamingSourceChangedError(
                f"The schema of source table {self.log.root} changed at version {version} "
                f"(now: {new.simpleString()}). Restart the streaming query to read with the new schema."
            )
        types = {f.name: f.dataType for f in current}
        widened = [
            f"{f.name} from {types[f.name].simpleString()} to {f.dataType.simpleString()}"
            for f in new
            if f.name in types and types[f.name] != f.dataType
        ]
        if widened:  # rows of the new type would not fit the stream's old schema
            raise StreamingSourceChangedError(
                f"[DELTA_STREAMING_CANNOT_CONTINUE_PROCESSING_POST_SCHEMA_EVOLUTION] The type of "
                f"column(s) {', '.join(widened)} of source table {self.log.root} changed at "
                f"version {version}. Restart the streaming query to read with the new types."
            )
