"""Reading the change data feed (``option("readChangeFeed", "true")``), batch and stream.

Each commit's changes come from its ``cdc`` files when it has them (they hold the changed
rows and their ``_change_type``); otherwise its data-changing adds are inserts and its
removes are deletes. Rows carry ``_commit_version`` and ``_commit_timestamp``. Files are
read by the executors as Arrow batches (:mod:`headwater.delta.files.arrow_read`), like any Delta read.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import overload
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

from headwater import storage
from headwater.delta.files import change_data
from headwater.delta.files.arrow_read import FileTask, arrow_schema, read_file
from headwater.delta.log.commit_times import ChangeTimes
from headwater.delta.log.delta_log import DeltaLog, Snapshot, parse_timestamp
from headwater.delta.schema import column_mapping as mapping
from headwater.errors import CorruptLogError, DeltaError, OptionError
from headwater.options import as_bool

CHANGE_TYPE = change_data.CHANGE_TYPE
CDF_FIELDS = [
    StructField(CHANGE_TYPE, StringType(), True),
    StructField("_commit_version", LongType(), True),
    StructField("_commit_timestamp", TimestampType(), True),
]
CDF_NAMES = [f.name for f in CDF_FIELDS]


def requested(options: dict[str, str]) -> bool:
    opts = {k.lower(): v for k, v in options.items()}
    return as_bool(opts.get("readchangefeed"), "readChangeFeed")


def cdf_schema(schema: StructType) -> StructType:
    return StructType([*[f for f in schema.fields if f.name not in CDF_NAMES], *CDF_FIELDS])


@overload
def data_part(schema: StructType) -> StructType: ...


@overload
def data_part(schema: None) -> None: ...


def data_part(schema: StructType | None) -> StructType | None:
    """``schema`` without the change feed's own columns."""
    if schema is None:
        return None
    return StructType([f for f in schema.fields if f.name not in CDF_NAMES])


# -- which versions ------------------------------------------------------------------------


def resolve_range(dlog: DeltaLog, options: dict[str, str]) -> tuple[int, int]:
    """``(start, end)`` versions from starting/ending Version/Timestamp, as delta-spark."""
    opts = {k.lower(): v for k, v in options.items()}
    latest = dlog.latest_version()
    if "startingversion" in opts and "startingtimestamp" in opts:
        raise OptionError("Give only one of startingVersion and startingTimestamp.")
    if "startingversion" in opts:
        start = _as_version(opts["startingversion"], "startingVersion", latest)
    elif "startingtimestamp" in opts:
        start = _first_at_or_after(dlog, parse_timestamp(opts["startingtimestamp"]), latest)
    else:
        raise OptionError(
            "[DELTA_NO_START_FOR_CDC_READ] Reading the change data feed needs a start: set "
            "option('startingVersion', v) or option('startingTimestamp', ts)."
        )
    end = latest
    if "endingversion" in opts:
        end = min(_as_version(opts["endingversion"], "endingVersion", latest), latest)
    elif "endingtimestamp" in opts:
        end = _last_at_or_before(dlog, parse_timestamp(opts["endingtimestamp"]), latest)
    if start > latest:
        raise DeltaError(
            f"[DELTA_INVALID_CDC_RANGE] Start version {start} is after the latest version "
            f"{latest} of {dlog.root}."
        )
    if end < start:
        raise DeltaError(
            f"[DELTA_INVALID_CDC_RANGE] CDC range from start {start} to end {end} is invalid: "
            "the end is before the start."
        )
    return start, end


def _as_version(value: str, name: str, latest: int) -> int:
    if str(value).lower() == "latest":
        return latest
    try:
        version = int(value)
    except ValueError:
        raise OptionError(f"Option {name} must be a version number, not {value!r}.") from None
    if version < 0:
        raise OptionError(f"Option {name} must be >= 0, not {version}.")
    return version


def first_version_at_or_after(dlog: DeltaLog, timestamp: str) -> int:
    """The first commit at or after ``timestamp`` (the latest version + 1 when every commit
    is older): where a stream with ``startingTimestamp`` starts, as in delta-spark."""
    return _first_at_or_after(dlog, parse_timestamp(timestamp), dlog.latest_version())


def _first_at_or_after(dlog: DeltaLog, when: datetime, latest: int) -> int:
    limit = when.replace(tzinfo=when.tzinfo or timezone.utc).timestamp() * 1000
    stamps = _history_times(dlog)
    return min((v for v, ms in stamps.items() if ms >= limit and v <= latest), default=latest + 1)


def _last_at_or_before(dlog: DeltaLog, when: datetime, latest: int) -> int:
    limit = when.replace(tzinfo=when.tzinfo or timezone.utc).timestamp() * 1000
    stamps = _history_times(dlog)
    return max((v for v, ms in stamps.items() if ms <= limit and v <= latest), default=-1)


def _history_times(dlog: DeltaLog) -> dict[int, int]:
    """Each kept commit's time as time travel resolves timestamps (delta-spark resolves a
    change feed's starting and ending timestamps so too)."""
    return {int(h["version"]): int(h["timestamp"]) for h in dlog.history()}


# -- which files ---------------------------------------------------------------------------


def range_tasks(dlog: DeltaLog, start: int, end: int) -> list[FileTask]:
    """The change files of versions ``start..end``, checking the feed was recorded."""
    snapshot = dlog.snapshot(version=start)
    snapshot.check_readable()
    enabled = change_data.enabled(snapshot.configuration)
    names = mapping.logical_paths(snapshot.schema)
    times = ChangeTimes(dlog.log_dir, start)
    tasks: list[FileTask] = []
    for version in range(start, end + 1):
        actions = dlog.commit_actions(version)
        meta = next((a["metaData"] for a in actions if "metaData" in a), None)
        if meta is not None:
            enabled = change_data.enabled(meta.get("configuration") or {})
        if not enabled:
            raise DeltaError(
                f"[DELTA_MISSING_CHANGE_DATA] Error getting change data for range [{start}, "
                f"{end}] of {dlog.root}: change data was not recorded for version {version}. "
                "Enable it with the table property delta.enableChangeDataFeed = true; see "
                "DESCRIBE HISTORY for when it was enabled, and read from a later version."
            )
        tasks.extend(version_tasks(dlog, version, actions, names, times))
    return tasks


def version_tasks(
    dlog: DeltaLog,
    version: int,
    actions: list[dict],
    names: dict[str, str] | None = None,
    times: ChangeTimes | None = None,
) -> list[FileTask]:
    """The change files of one commit; ``times``: the commits' times, kept by a caller
    reading several versions (one listing of the log for all)."""
    names = names or {}
    ts = (times or ChangeTimes(dlog.log_dir, version)).of(version, actions)
    cdc = [a["cdc"] for a in actions if "cdc" in a]
    if cdc:
        return [_task(dlog, c, None, version, ts, names) for c in cdc]
    changed = [
        (kind, a[kind])
        for a in actions
        for kind in ("add", "remove")
        if kind in a and a[kind].get("dataChange", True)
    ]
    if any(action.get("deletionVector") for _, action in changed):
        return _vector_tasks(dlog, version, changed, ts, names)
    return [
        _task(dlog, action, "insert" if kind == "add" else "delete", version, ts, names)
        for kind, action in changed
    ]


def _vector_tasks(
    dlog: DeltaLog,
    version: int,
    changed: list[tuple[str, dict]],
    ts: int,
    names: dict[str, str],
) -> list[FileTask]:
    """The changes of a commit that changed rows through deletion vectors and wrote no cdc
    files, as delta-spark derives them: a file removed with one vector and added back with
    another lost the rows the new vector adds (deletes) and regained those it drops
    (inserts); a file removed or added alone deletes or inserts its live rows."""
    before = dlog.snapshot(version=version - 1).deletion_vectors if version > 0 else {}
    after = dlog.snapshot(version=version).deletion_vectors
    removed = {unquote(a["path"]): a for kind, a in changed if kind == "remove"}
    added = {unquote(a["path"]): a for kind, a in changed if kind == "add"}
    tasks: list[FileTask] = []
    for path in sorted(removed.keys() | added.keys()):
        action = added.get(path) or removed[path]
        n = _rows(dlog, path, action)
        old = _live(before.get(path), n) if path in removed else [False] * n
        new = _live(after.get(path), n) if path in added else [False] * n
        for kind, selection in (
            ("delete", [o and not w for o, w in zip(old, new, strict=True)]),
            ("insert", [w and not o for o, w in zip(old, new, strict=True)]),
        ):
            if any(selection):
                task = _task(dlog, action, kind, version, ts, names)
                tasks.append(dataclasses.replace(task, selection=tuple(selection)))
    return tasks


def _rows(dlog: DeltaLog, path: str, action: dict) -> int:
    stats = action.get("stats")
    if stats:
        records = json.loads(stats).get("numRecords")
        if records is not None:
            return int(records)
    fs, local = storage.filesystem(storage.join(dlog.root, path))
    with fs.open_input_file(local) as f:
        return pq.ParquetFile(f).metadata.num_rows


def _live(selection: tuple[bool, ...] | None, n: int) -> list[bool]:
    """A file's live rows (rows past the end of a deletion vector are live)."""
    if selection is None:
        return [True] * n
    return list(selection[:n]) + [True] * max(0, n - len(selection))


def snapshot_tasks(dlog: DeltaLog, snapshot: Snapshot) -> list[FileTask]:
    """A snapshot's rows as inserts at its version (a change-feed stream's first batch)."""
    try:
        actions = dlog.commit_actions(snapshot.version)
    except CorruptLogError:  # the commit file was cleaned up after a checkpoint
        actions = []
    ts = ChangeTimes(dlog.log_dir, snapshot.version).of(snapshot.version, actions)
    dvs = snapshot.deletion_vectors
    return [
        FileTask(
            f.absolute(snapshot.root),
            f.size,
            tuple(sorted(f.partition_values.items())),
            dvs.get(f.path),
            change=("insert", snapshot.version, ts),
        )
        for f in sorted(snapshot.files, key=lambda f: (f.modification_time, f.path))
    ]


def _task(
    dlog: DeltaLog,
    action: dict,
    kind: str | None,
    version: int,
    ts: int,
    names: dict[str, str],
) -> FileTask:
    values = action.get("partitionValues") or {}
    return FileTask(
        storage.join(dlog.root, unquote(action["path"])),
        int(action.get("size") or 0),
        tuple(sorted((names.get(k, k), v) for k, v in values.items())),
        change=(kind, version, ts),
    )


# -- reading (executors) -------------------------------------------------------------------


def read_changes(
    tasks: list[FileTask], schema: StructType, physical: StructType | None = None
) -> Iterator[pa.RecordBatch]:
    """Rows of change files in ``schema`` (the table's columns plus the CDF columns)."""
    data = data_part(schema)
    phys = data_part(physical)
    out_schema = arrow_schema(schema)
    ts_type = out_schema.field("_commit_timestamp").type
    plain = arrow_schema(data)
    plain_phys = arrow_schema(phys) if phys is not None else None
    with_type = arrow_schema(StructType([*data.fields, CDF_FIELDS[0]]))
    with_type_phys = (
        arrow_schema(StructType([*phys.fields, CDF_FIELDS[0]])) if phys is not None else None
    )
    for task in tasks:
        assert task.change is not None  # every change-feed task says what it holds
        kind, version, ts = task.change
        plain_task = dataclasses.replace(task, change=None)
        if kind is None:  # a cdc file: the change type is a column of the file
            batches = read_file(plain_task, with_type, with_type_phys)
        else:
            batches = read_file(plain_task, plain, plain_phys)
        for batch in batches:
            n = batch.num_rows
            columns = list(batch.columns)
            if kind is not None:
                columns.append(pa.repeat(pa.scalar(kind, pa.string()), n))
            columns.append(pa.repeat(pa.scalar(version, pa.int64()), n))
            columns.append(pa.repeat(pa.scalar(ts * 1000, ts_type), n))
            yield pa.RecordBatch.from_arrays(columns, schema=out_schema)
