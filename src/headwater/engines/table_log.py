"""A Delta table's log as the rooms above the engines read it, whichever engine writes it.

The Delta protocol makes a table's log readable by any reader: its versions, each commit's
actions (``commitInfo``, metadata, files added and removed, change files) and each
version's live files with their statistics. So there is one reader for both engines: the
door of either hands out a :class:`TableLog` (headwater's log access, delta-rs where it
reads correctly), and a view's refresh, an AUTO CDC flow or COPY INTO's load record read a
delta-spark table's log exactly as they read one headwater wrote. It only reads: every
change to a table goes through the door's write methods, each engine's own.

The values it returns are typed by the door's read-only views
(:class:`~headwater.engines.log_views.SnapshotView`,
:class:`~headwater.engines.log_views.CommitView`),
so the rooms above depend on what they read, not on how the engine stores it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import Filter
from pyspark.sql.types import LongType, StructField, StructType

from headwater import storage
from headwater.delta.files import change_data
from headwater.delta.files.arrow_read import FileTask, read_file, read_files
from headwater.delta.log.actions import decode_path
from headwater.delta.log.delta_log import DeltaLog, Snapshot
from headwater.delta.read import change_feed, row_changes
from headwater.delta.read.pruning import keep_files
from headwater.engines.log_views import CommitView, DataFileView, SnapshotView

# The table property that turns the change data feed on, and the column of its change type.
CHANGE_FEED = change_data.ENABLE
CHANGE_TYPE = change_feed.CHANGE_TYPE


def change_feed_enabled(configuration: dict[str, str]) -> bool:
    """Whether a table's properties have the change data feed on."""
    return change_data.enabled(configuration)


class TableLog:
    """The log of the Delta table at ``location`` (which may not exist yet)."""

    def __init__(self, location: str) -> None:
        self._log = DeltaLog(location)

    @property
    def root(self) -> str:
        """The table's location as every part of headwater spells it."""
        return self._log.root

    def exists(self) -> bool:
        return self._log.exists()

    def require_table_or_empty(self) -> bool:
        """Whether a Delta table is there (False: nothing or an empty folder); a folder of
        other files is refused by name."""
        return self._log.require_table_or_empty()

    def latest_version(self) -> int:
        return self._log.latest_version()

    def version(self) -> int | None:
        """The latest version; None when there is no table."""
        return self._log.latest_version() if self._log.exists() else None

    def snapshot(self, version: int | None = None) -> SnapshotView:
        """The table at ``version`` (the latest when None)."""
        return self._log.snapshot(version)

    def read_commit(self, version: int) -> CommitView:
        """The typed actions of commit ``version``."""
        return self._log.read_commit(version)

    def commit_info(self, version: int) -> dict[str, Any]:
        """Commit ``version``'s ``commitInfo`` (empty when it has none)."""
        info = self._log.read_commit(version).info
        return dict(info.values) if info is not None else {}

    def files_matching(self, snapshot: SnapshotView, filters: list[Filter]) -> list[DataFileView]:
        """The live files of ``snapshot`` whose statistics and partition values may hold
        rows matching every one of ``filters`` (data-source filters)."""
        return list(keep_files(_own(snapshot), filters))

    def change_files(self, since: int, now: int) -> list[str] | None:
        """The change files (``cdc`` actions) that hold every row the commits after
        ``since`` up to ``now`` changed, when each data-changing commit among them wrote
        some (Delta's rule: a commit's change files, when it has them, are its whole
        change), for an unpartitioned table without column mapping: Parquet files of the
        table's columns and ``_change_type`` that Spark reads natively. None otherwise (an
        append, or a delete of whole files, has none: the change feed's reader derives
        them from the added and removed files)."""
        config = self._log.snapshot(now).configuration
        if config.get("delta.columnMapping.mode", "none") != "none":
            return None
        found: list[str] = []
        for version in range(since + 1, now + 1):
            actions = self._log.commit_actions(version)
            cdc = [a["cdc"] for a in actions if "cdc" in a]
            if any(c.get("partitionValues") or "://" in c["path"] for c in cdc):
                return None
            if cdc:
                found += [storage.join(self.root, decode_path(c["path"])) for c in cdc]
            elif any(
                kind in a and a[kind].get("dataChange", True)
                for a in actions
                for kind in ("add", "remove")
            ):
                return None
        return found

    def change_tasks(
        self, since: int, now: int, row_id_column: str | None = None
    ) -> list[FileTask]:
        """The files holding the rows the commits after ``since`` up to ``now`` changed,
        each task saying what it holds (a change file, or a data file added or removed
        whole or through a deletion vector), as the change data feed reads them
        (``row_id_column``: with the rows' ids read into that column)."""
        tasks: list[FileTask] = []
        for version in range(since + 1, now + 1):
            actions = self._log.commit_actions(version)
            found = change_feed.version_tasks(self._log, version, actions)
            if row_id_column is not None:
                found = row_changes.with_row_ids(self._log, version, actions, found, row_id_column)
            tasks += found
        return tasks

    def derivable_rows(self, since: int, now: int) -> int | None:
        """The rows :func:`read_changes` reads for the commits after ``since`` up to
        ``now``, by the log's statistics and deletion vectors, without reading a data
        file; None when it cannot read them back: a file a commit removed is gone (VACUUM
        deleted it), or a file's row count is not logged."""
        counts: dict[str, int | None] = {}
        total = 0
        for task in self.change_tasks(since, now):
            removed = task.change is not None and task.change[0] == "delete"
            if removed and not storage.exists(task.path):
                return None
            if task.selection is not None:
                total += sum(task.selection)
                continue
            if task.change is not None and task.change[0] is None:
                total += _footer_rows(task.path)  # a cdc file: the log counts its rows nowhere
                continue
            if not counts:
                counts = self._record_counts(since, now)
            n = counts.get(task.path)
            if n is None:
                return None
            total += n
        return total

    def _record_counts(self, since: int, now: int) -> dict[str, int | None]:
        """Each data file's row count, by its absolute path, as the versions from ``since``
        to ``now`` log it (a removed file was live at ``since`` or added after it)."""
        counts: dict[str, int | None] = {}
        snapshot = self._log.snapshot(since)
        paths = snapshot.add_actions.column("path").to_pylist()
        rows = snapshot.add_actions.column("num_records").to_pylist()
        for path, n in zip(paths, rows, strict=True):
            counts[storage.join(self.root, decode_path(path))] = n
        for version in range(since + 1, now + 1):
            for add in self._log.read_commit(version).adds:
                counts[storage.join(self.root, add.relative_path)] = add.num_records
        return counts

    def snapshot_tasks(self, snapshot: SnapshotView) -> list[FileTask]:
        """The files of ``snapshot``'s rows, with their deletion vectors."""
        return change_feed.snapshot_tasks(self._log, _own(snapshot))


def read_changes(spark: SparkSession, log: TableLog, since: int, now: int) -> DataFrame:
    """The rows the commits after ``since`` up to ``now`` changed, in the table's columns
    at ``now`` with the change data feed's ``_change_type``, ``_commit_version`` and
    ``_commit_timestamp``: the change files where a commit wrote them, else derived from
    its actions, as delta-spark derives them (a file removed or added whole deletes or
    inserts its live rows; a file whose deletion vector changed, the rows between the
    two). So any Delta table's updates and deletes can be read back, with its feed on or
    not, on either engine: the files are read with pyarrow on the executors (Arrow
    batches), whatever the store. On a table with row tracking, the rows a rewrite only
    copied (same id, same values) are left out (:mod:`headwater.delta.read.row_changes`):
    what remains is what its change data feed would hold, typed ``delete`` or
    ``insert``, without commit versions."""
    snapshot = _own(log.snapshot(now))
    row_id = row_changes.row_id_column(snapshot)
    tasks = log.change_tasks(since, now, row_id)
    columns = snapshot.schema
    if row_id is not None:
        columns = StructType([*columns.fields, StructField(row_id, LongType())])
    schema = change_feed.cdf_schema(columns)
    physical = snapshot.physical_schema
    mapped = change_feed.cdf_schema(physical) if physical is not None else None
    slots = max(1, min(len(tasks), spark.sparkContext.defaultParallelism))
    groups: list[list[FileTask]] = [[] for _ in range(slots)]
    for i, task in enumerate(sorted(tasks, key=lambda t: -t.size)):
        groups[i % slots].append(task)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for slot in batch.column(0).to_pylist():
                yield from change_feed.read_changes(groups[slot], schema, mapped)

    changes = spark.range(slots, numPartitions=slots).mapInArrow(run, schema)
    return changes if row_id is None else row_changes.net(changes, row_id)


def _footer_rows(path: str) -> int:
    """The rows a Parquet file holds, from its footer."""
    fs, inner = storage.filesystem(path)
    with fs.open_input_file(inner) as f:
        return int(pq.ParquetFile(f).metadata.num_rows)


def _own(snapshot: SnapshotView) -> Snapshot:
    """A snapshot this reader handed out, as the log access it came from types it."""
    assert isinstance(snapshot, Snapshot), type(snapshot)
    return snapshot


def read_arrow(tasks: Sequence[FileTask], schema: StructType) -> Iterator[pa.RecordBatch]:
    """The rows of ``tasks`` in ``schema`` (Spark's types as Arrow batches of them), with
    partition values filled in and deleted rows left out."""
    return read_files(list(tasks), schema)


def read_arrow_file(task: FileTask, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The rows of one task in the Arrow ``schema`` (a dictionary-typed column is read as
    one)."""
    return read_file(task, schema)
