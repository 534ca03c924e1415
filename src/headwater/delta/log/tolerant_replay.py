"""A replay of the Delta log that tolerates what old writers left in it.

delta-rs decodes the log with a strict Arrow schema, so logs other engines wrote years ago
are refused or misread by it although delta-spark reads them:

* ``metaData`` with null fields the spec now requires (``format.options``,
  ``configuration``, ``partitionColumns``, the whole ``format``): delta-rs stops with
  "Encountered unmasked nulls in non-nullable StructArray child";
* ``add``/``remove`` paths written as absolute, percent-encoded URIs
  (``file:/t/part=a%20b/f.parquet``): delta-rs opens the log but pairs removes with adds by
  the raw string, so a remove spelled differently from its add leaves the file live, and
  it hands the absolute path on as if it were relative to the table.

delta-rs also refuses schemas with types it does not know yet: Spark's ``geometry(...)`` and
``geography(...)`` (the ``geospatial`` table feature), which delta-spark writes.

This module replays such logs itself with pyarrow, as delta-spark does: the newest complete
checkpoint at or before the version (classic, multi-part or V2 with sidecars), then the
JSON commits after it, with every file path decoded and made relative to the table root
before adds and removes are paired. It is the fallback only: :mod:`headwater.delta.log.delta_log`
keeps delta-rs as the reader wherever delta-rs reads the log correctly.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyspark.sql.types import (
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructType,
)

from headwater import storage
from headwater.delta.log.actions import encode_path
from headwater.errors import CorruptLogError, TableNotFoundError
from headwater.storage.paths import decoded_uri, relative_under

# What delta-rs says when an action holds a null where its schema allows none.
_REFUSALS = ("unmasked nulls", "Unsupported Delta table type")
_CHECKPOINT = re.compile(
    r"^(\d{20})\.checkpoint(?:\.(\d{10})\.(\d{10})|\.([0-9a-fA-F-]{36}))?\.(parquet|json)$"
)
_COMMIT = re.compile(r"^(\d{20})\.json$")
# A logged path that is absolute: a URI (``file:/...``, ``s3://...``) or a rooted path.
ABSOLUTE_PATTERN = r"^([A-Za-z][A-Za-z0-9+.-]*:|/)"
_ABSOLUTE = re.compile(ABSOLUTE_PATTERN)
# Map-typed fields of the actions, which a Parquet checkpoint gives as (key, value) pairs.
_MAPS = {"partitionValues", "tags", "configuration", "options"}


def refused(error: BaseException) -> bool:
    """True when delta-rs refused the log for a null field old writers left in it, or for
    a column type it does not know."""
    text = str(error)
    return any(r in text for r in _REFUSALS)


def is_absolute(logged: str) -> bool:
    """A path the log spells as a URI (``file:/...``, ``s3://...``) or an absolute path."""
    return bool(_ABSOLUTE.match(logged))


def file_key(root: str, logged: str) -> str:
    """The decoded path of a logged file path relative to ``root`` (a normalized table
    root), as :class:`headwater.delta.log.delta_log.DataFile` keeps it; for a file outside the
    table (shallow clones add such files), its decoded absolute location instead.

    Spark's spellings of one location compare equal: ``file:/t``, ``file:///t`` and a
    symlinked local root; ``s3a://`` and ``s3n://`` for a table opened as ``s3://``."""
    if not is_absolute(logged):
        return unquote(logged)
    absolute = decoded_uri(logged)
    inside = relative_under(absolute, root)
    return absolute if inside is None else inside


@dataclass
class LogState:
    """The table as of one version, replayed from the log."""

    version: int
    protocol: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    adds: dict[str, dict[str, Any]] = field(default_factory=dict)  # by relative decoded path
    transactions: dict[str, int] = field(default_factory=dict)  # appId -> version


def replay(root: str, log_dir: str, version: int | None = None) -> LogState:
    """The state of the table at ``version`` (the latest when None)."""
    latest = latest_version(log_dir)
    if latest < 0:
        raise TableNotFoundError(f"No Delta table at {root}: {log_dir} holds no commit.")
    target = latest if version is None else int(version)
    if not 0 <= target <= latest:
        raise TableNotFoundError(
            f"Cannot time-travel {root} to version {target}: the table's versions are "
            f"0..{latest}; see its history."
        )
    start, actions = checkpoint_actions(log_dir, target, ("add", "protocol", "metaData", "txn"))
    state = LogState(target)
    for action in actions:
        _apply(state, root, action)
    for v in range(start + 1, target + 1):
        commit = read_commit(log_dir, v)
        # A commit that removes and re-adds one path keeps it live, whatever the order.
        for action in commit:
            if "remove" in action:
                _apply(state, root, action)
        for action in commit:
            if "remove" not in action:
                _apply(state, root, action)
    if not state.metadata or not state.protocol:
        raise CorruptLogError(
            f"The Delta log of {root} has no {'metaData' if not state.metadata else 'protocol'} "
            f"action up to version {target}; it is corrupt or was partly deleted."
        )
    return state


def _apply(state: LogState, root: str, action: dict[str, Any]) -> None:
    if action.get("add") is not None:
        add = _plain(action["add"])
        state.adds[file_key(root, add["path"])] = add
    elif action.get("remove") is not None:
        state.adds.pop(file_key(root, action["remove"]["path"]), None)
    elif action.get("metaData") is not None:
        state.metadata = _plain(action["metaData"])
    elif action.get("protocol") is not None:
        state.protocol = _plain(action["protocol"])
    elif action.get("txn") is not None:
        txn = action["txn"]
        state.transactions[txn["appId"]] = int(txn["version"])


def _plain(value: Any, name: str = "") -> Any:
    """A checkpoint row as the JSON commit spells it: maps as dicts, nulls kept."""
    if isinstance(value, dict):
        return {k: _plain(v, k) for k, v in value.items()}
    if name in _MAPS and isinstance(value, list):
        return {k: v for k, v in value}
    return value


def latest_version(log_dir: str) -> int:
    """The newest version with a JSON commit or a checkpoint; -1 when there is none."""
    newest = -1
    for info in storage.list_files(log_dir, recursive=False):
        m = _COMMIT.match(info.base_name) or _CHECKPOINT.match(info.base_name)
        if m:
            newest = max(newest, int(m.group(1)))
    return newest


def version_at(root: str, log_dir: str, when: datetime) -> int:
    """The newest version committed at or before ``when`` (by the commits' timestamps)."""
    limit = when.timestamp() * 1000
    found = -1
    for info in storage.list_files(log_dir, recursive=False):
        m = _COMMIT.match(info.base_name)
        if not m:
            continue
        v = int(m.group(1))
        stamps = [
            a["commitInfo"].get("timestamp") for a in read_commit(log_dir, v) if a.get("commitInfo")
        ]
        stamp = next((s for s in stamps if s is not None), None)
        if stamp is None:
            stamp = (info.mtime_ns or 0) / 1e6
        if stamp <= limit:
            found = max(found, v)
    if found < 0:
        raise TableNotFoundError(
            f"Cannot time-travel {root} to timestamp {when.isoformat()}: it is before the "
            "first commit the log holds; see the table's history."
        )
    return found


def commit_infos(log_dir: str, limit: int | None = None) -> list[dict[str, Any]]:
    """The ``commitInfo`` of each JSON commit, newest first, with its ``version`` and a
    ``timestamp`` (the file's modification time when the commit has none), as delta-rs's
    ``history()`` gives them."""
    commits = sorted(
        (
            (int(m.group(1)), info)
            for info in storage.list_files(log_dir, recursive=False)
            if (m := _COMMIT.match(info.base_name))
        ),
        key=lambda c: -c[0],
    )
    out = []
    for v, info in commits[:limit] if limit else commits:
        found = [a["commitInfo"] for a in read_commit(log_dir, v) if a.get("commitInfo")]
        entry = dict(found[0]) if found else {}
        entry.setdefault("timestamp", int((info.mtime_ns or 0) / 1e6))
        entry["version"] = v
        out.append(entry)
    return out


def read_commit(
    log_dir: str, version: int, remedy: str = "Read a later version, or restart from one."
) -> list[dict[str, Any]]:
    """The actions of the JSON commit ``version`` (one dict per line)."""
    path = storage.join(log_dir, f"{version:020d}.json")
    try:
        text = storage.read_bytes(path).decode("utf-8")
    except FileNotFoundError as e:
        raise CorruptLogError(
            f"Commit {version} is missing from {log_dir} ({path}); it may have been removed "
            f"by log cleanup. {remedy}"
        ) from e
    try:
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as e:
        raise CorruptLogError(f"Commit file {path} is not valid JSON: {e}") from e


def checkpoint_actions(
    log_dir: str, version: int, kinds: tuple[str, ...] = ("add", "remove")
) -> tuple[int, list[dict[str, Any]]]:
    """(checkpoint version, its actions of ``kinds``, one ``{kind: action}`` dict each) of
    the newest complete checkpoint at or before ``version``; (-1, []) when there is none."""
    v, paths, _ = _listing(log_dir, version)
    actions: list[dict[str, Any]] = []
    for path in sorted(paths):
        actions += _checkpoint_file(log_dir, path, kinds)
    return v, actions


def _listing(log_dir: str, version: int) -> tuple[int, list[str], dict[int, pafs.FileInfo]]:
    """(version and files of the newest complete checkpoint at or before ``version``, or
    (-1, []); the JSON commits up to ``version`` by version)."""
    found: dict[int, dict[str, list[str]]] = {}
    commits: dict[int, pafs.FileInfo] = {}
    for info in storage.list_files(log_dir, recursive=False):
        commit = _COMMIT.match(info.base_name)
        if commit and int(commit.group(1)) <= version:
            commits[int(commit.group(1))] = info
        m = _CHECKPOINT.match(info.base_name)
        if not m or int(m.group(1)) > version:
            continue
        v, parts, uid = int(m.group(1)), m.group(3), m.group(4)
        key = uid or (f"multi-{parts}" if parts else "single")
        found.setdefault(v, {}).setdefault(key, []).append(info.path)
    for v in sorted(found, reverse=True):
        for key, paths in found[v].items():
            if key.startswith("multi-") and len(paths) != int(key.split("-", 1)[1]):
                continue  # an incomplete multi-part checkpoint is ignored, as readers do
            return v, paths, commits
    return -1, [], commits


# Per JSON commit file (path, size, mtime): the first absolute path a remove in it spells,
# or "". Commit files never change, so each is read once per process for this check.
_ABSOLUTE_REMOVES: dict[tuple[str, int, int], str] = {}


def absolute_remove(log_dir: str, version: int) -> str | None:
    """The first absolute path a ``remove`` spells in the JSON commits after the newest
    checkpoint at or before ``version`` (None: there is none).

    delta-rs pairs a remove with its add by the raw string, so a file added by a relative
    path and removed by an absolute one stays live for it although every live add it
    lists is relative; such a log must be replayed by headwater.
    """
    start, _, commits = _listing(log_dir, version)
    for v in range(start + 1, version + 1):
        info = commits.get(v)
        if info is None:
            continue  # a missing commit is delta-rs's to report
        key = (info.path, int(info.size or 0), int(info.mtime_ns or 0))
        if key not in _ABSOLUTE_REMOVES:
            if len(_ABSOLUTE_REMOVES) > 100_000:
                _ABSOLUTE_REMOVES.clear()
            _ABSOLUTE_REMOVES[key] = _first_absolute_remove(storage.read_bytes(info.path))
        if _ABSOLUTE_REMOVES[key]:
            return _ABSOLUTE_REMOVES[key]
    return None


def _first_absolute_remove(data: bytes) -> str:
    if b'"remove"' not in data:
        return ""
    for line in data.decode("utf-8").splitlines():
        if '"remove"' not in line:
            continue
        try:
            remove = json.loads(line).get("remove")
        except json.JSONDecodeError:
            continue  # delta-rs reports an unreadable commit
        if remove and is_absolute(str(remove.get("path", ""))):
            return str(remove["path"])
    return ""


def _checkpoint_file(log_dir: str, path: str, kinds: tuple[str, ...]) -> list[dict[str, Any]]:
    if path.endswith(".json"):  # a V2 checkpoint written as JSON
        text = storage.read_bytes(path).decode("utf-8")
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
        actions = [a for a in lines if any(a.get(k) is not None for k in kinds)]
        sidecars = [a["sidecar"]["path"] for a in lines if a.get("sidecar") is not None]
    else:
        table = _read_parquet(path, (*kinds, "sidecar"))
        actions = _rows(table, kinds)
        sidecars = [a["sidecar"]["path"] for a in _rows(table, ("sidecar",))]
    for sidecar in sidecars:
        full = sidecar if "://" in sidecar else storage.join(log_dir, "_sidecars", sidecar)
        actions += _rows(_read_parquet(full, kinds), kinds)
    return actions


def _read_parquet(path: str, columns: tuple[str, ...]) -> pa.Table:
    fs, p = storage.filesystem(path)
    try:
        schema = pq.read_schema(p, filesystem=fs)
        return pq.read_table(p, columns=[c for c in columns if c in schema.names], filesystem=fs)
    except (OSError, pa.ArrowInvalid) as e:
        raise CorruptLogError(f"Checkpoint file {path} cannot be read: {e}") from e


def _rows(table: pa.Table, kinds: tuple[str, ...]) -> list[dict[str, Any]]:
    out = []
    for kind in kinds:
        if kind in table.column_names:
            out += [{kind: a} for a in table.column(kind).to_pylist() if a is not None]
    return out


# Column types whose logged stats and partition values convert exactly to Arrow; columns of
# other types get no stats here, so file skipping keeps their files (never a wrong skip).
_ARROW_TYPES: dict[type[DataType], pa.DataType] = {
    LongType: pa.int64(),
    IntegerType: pa.int32(),
    ShortType: pa.int16(),
    ByteType: pa.int8(),
    DoubleType: pa.float64(),
    FloatType: pa.float32(),
    StringType: pa.string(),
    BooleanType: pa.bool_(),
    DateType: pa.date32(),
}


def add_actions(
    adds: dict[str, dict[str, Any]],
    schema: StructType,
    partitions: list[tuple[str, str, DataType]],
) -> pa.Table:
    """The live files as delta-rs's ``get_add_actions(flatten=True)`` gives them: path (as
    the log would spell it relative to the root), size_bytes, modification_time,
    num_records, null_count.*, min.*, max.* (under the names of ``schema``, the one the
    stats use) and partition.<name> for each (name, key in ``partitionValues``, type) of
    ``partitions`` (typed; omitted for types that do not convert exactly)."""
    leaves = _leaf_types(schema)
    keys = list(adds)
    stats = [_stats(adds[k].get("stats") or adds[k].get("stats_parsed")) for k in keys]
    columns: dict[str, pa.Array] = {
        "path": pa.array([encode_path(k) for k in keys], pa.string()),
        "size_bytes": pa.array([int(adds[k].get("size") or 0) for k in keys], pa.int64()),
        "modification_time": pa.array(
            [int(adds[k].get("modificationTime") or 0) for k in keys], pa.int64()
        ),
        "num_records": pa.array([s.get("numRecords") for s in stats], pa.int64()),
    }
    flat = [{kind: _flatten(s.get(key) or {}) for kind, key in _STAT_KINDS.items()} for s in stats]
    for kind in _STAT_KINDS:
        names = sorted({n for f in flat for n in f[kind]})
        for name in names:
            values = [f[kind].get(name) for f in flat]
            target = pa.int64() if kind == "null_count" else leaves.get(name)
            array = _convert(values, target)
            if array is not None:
                columns[f"{kind}.{name}"] = array
    for name, key, data_type in partitions:
        values = [(adds[k].get("partitionValues") or {}).get(key) for k in keys]
        array = _convert(values, _ARROW_TYPES.get(type(data_type)), parse=True)
        if array is not None:
            columns[f"partition.{name}"] = array
    return pa.table(columns)


_STAT_KINDS = {"null_count": "nullCount", "min": "minValues", "max": "maxValues"}


def _stats(text: Any) -> dict[str, Any]:
    if not text:
        return {}
    try:
        parsed = json.loads(text) if isinstance(text, str) else text
    except json.JSONDecodeError:
        return {}  # unreadable stats only cost file skipping, as no stats do
    return parsed if isinstance(parsed, dict) else {}


def _flatten(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in values.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _leaf_types(schema: StructType, prefix: str = "") -> dict[str, pa.DataType]:
    out: dict[str, pa.DataType] = {}
    for f in schema.fields:
        if isinstance(f.dataType, StructType):
            out.update(_leaf_types(f.dataType, f"{prefix}{f.name}."))
        elif type(f.dataType) in _ARROW_TYPES:
            out[f"{prefix}{f.name}"] = _ARROW_TYPES[type(f.dataType)]
    return out


def _convert(values: list[Any], target: pa.DataType | None, parse: bool = False) -> pa.Array | None:
    """``values`` as an Arrow array of ``target`` (None when they do not convert exactly);
    ``parse``: the values are the log's partition strings."""
    if target is None:
        return None
    try:
        if parse or target == pa.date32():
            text = [None if v is None else str(v) for v in values]
            if target == pa.bool_():
                text = [None if v is None else v.lower() for v in text]
            return pa.array(text, pa.string()).cast(target)
        return pa.array(values, target)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError):
        return None
