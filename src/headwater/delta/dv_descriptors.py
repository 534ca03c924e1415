"""The deletion-vector descriptors of a snapshot's live files, replayed from the log.

A commit that removes a file carrying a deletion vector must name that vector in its
``remove`` action: readers pair adds and removes by (path, deletion vector), so a remove
without it leaves the file live. delta-rs reads deletion vectors but its Python API does
not expose their descriptors, so they are read here: the newest checkpoint at or before
the version (classic, multi-part, or V2 with sidecars), then the JSON commits after it.
"""

from __future__ import annotations

import json
import re
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from headwater import storage
from headwater.delta.log import DeltaLog
from headwater.errors import CorruptLogError

_CHECKPOINT = re.compile(
    r"^(\d{20})\.checkpoint(?:\.(\d{10})\.(\d{10})|\.([0-9a-fA-F-]{36}))?\.(parquet|json)$"
)


def live_descriptors(dlog: DeltaLog, version: int) -> dict[str, dict]:
    """``{path: {"path": <path as the log wrote it>, "deletionVector": {...}}}`` for every
    live file with a deletion vector at ``version``; keys are decoded relative paths, as in
    :class:`headwater.delta.log.DataFile`."""
    state, _ = _replay(dlog, version)
    return {
        key: {
            "path": add["path"],
            "deletionVector": {k: v for k, v in add["deletionVector"].items() if v is not None},
        }
        for key, add in state.items()
        if add.get("deletionVector")
    }


def removed_vectors(dlog: DeltaLog, snapshot, removes) -> dict[str, dict]:
    """The log's path and deletion vector of each removed file that has one, which its
    remove must repeat ({} on tables without the deletionVectors feature)."""
    if not removes or "deletionVectors" not in (snapshot.table.protocol().reader_features or []):
        return {}
    wanted = {r.path for r in removes} & set(snapshot.deletion_vectors)
    if not wanted:
        return {}
    descriptors = live_descriptors(dlog, snapshot.version)
    missing = wanted - set(descriptors)
    if missing:
        raise CorruptLogError(
            f"The log of {snapshot.root} gives no deletion vector for {sorted(missing)[0]}, "
            "which delta-rs reads with one; nothing was committed."
        )
    return {path: descriptors[path] for path in wanted}


def deleted_counts(snapshot) -> dict[str, int]:
    """Rows each file's deletion vector deletes (its cardinality, from the log)."""
    if "deletionVectors" not in (snapshot.table.protocol().reader_features or []):
        return {}
    descriptors = live_descriptors(DeltaLog(snapshot.root), snapshot.version)
    return {path: int(d["deletionVector"]["cardinality"]) for path, d in descriptors.items()}


def deleted_positions(dlog: DeltaLog, version: int, paths: set[str]) -> dict[str, np.ndarray]:
    """The row positions (uint64) the deletion vector of each file in ``paths`` deletes
    (files without a vector are left out)."""
    from headwater.delta import deletion_vectors

    cache: dict[str, bytes] = {}  # one read of a vector file many data files share
    return {
        path: deletion_vectors.read(dlog.root, d["deletionVector"], cache)
        for path, d in live_descriptors(dlog, version).items()
        if path in paths
    }


def live_adds(dlog: DeltaLog, version: int, paths: set[str]) -> dict[str, dict]:
    """The log's add action (as written: stats JSON, tags, vector) of each live file in
    ``paths`` (decoded relative paths), for commits that re-add a file with a new vector."""
    state, _ = _replay(dlog, version)
    return {key: add for key, add in state.items() if key in paths}


def referenced_vector_files(dlog: DeltaLog, version: int, since_ms: int) -> set[str]:
    """The deletion-vector files versions from ``since_ms`` (epoch ms) on read, which VACUUM
    must not delete: those of live files at ``version`` and those of files removed at or
    after ``since_ms`` (a remove without a timestamp counts as recent)."""
    from headwater.delta import deletion_vectors

    state, tombstones = _replay(dlog, version)
    named = [a["deletionVector"] for a in state.values() if a.get("deletionVector")]
    named += [
        r["deletionVector"]
        for r in tombstones
        if r.get("deletionVector") and (r.get("deletionTimestamp") or since_ms) >= since_ms
    ]
    files = {deletion_vectors.file_of(dlog.root, dv) for dv in named}
    return {storage.normalize(f) for f in files if f is not None}


def _replay(dlog: DeltaLog, version: int) -> tuple[dict[str, dict], list[dict]]:
    """(live adds by decoded path, the removes still in the log)."""
    start, files, tombstones = _checkpoint(dlog, version)
    state = {unquote(a["path"]): a for a in files}
    for v in range(start + 1, version + 1):
        actions = dlog.commit_actions(v)
        # A commit that replaces a file's vector removes and re-adds the same path: removes
        # first, whatever order the writer used, so the re-added file stays live.
        for action in actions:
            if "remove" in action:
                state.pop(unquote(action["remove"]["path"]), None)
                tombstones.append(action["remove"])
        for action in actions:
            if "add" in action:
                state[unquote(action["add"]["path"])] = action["add"]
    return state, tombstones


def _checkpoint(dlog: DeltaLog, version: int) -> tuple[int, list[dict], list[dict]]:
    """(checkpoint version, its adds, its removes) of the newest complete checkpoint at or
    before ``version``; (-1, [], []) when there is none."""
    found: dict[int, dict[str, list[str]]] = {}
    for info in storage.list_files(dlog.log_dir, recursive=False):
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
            adds: list[dict] = []
            removes: list[dict] = []
            for path in sorted(paths):
                more_adds, more_removes = _checkpoint_actions(dlog, path)
                adds += more_adds
                removes += more_removes
            return v, adds, removes
    return -1, [], []


def _checkpoint_actions(dlog: DeltaLog, path: str) -> tuple[list[dict], list[dict]]:
    if path.endswith(".json"):  # a V2 checkpoint written as JSON
        text = storage.read_bytes(path).decode("utf-8")
        actions = [json.loads(line) for line in text.splitlines() if line.strip()]
        adds = [a["add"] for a in actions if "add" in a]
        removes = [a["remove"] for a in actions if "remove" in a]
        sidecars = [a["sidecar"]["path"] for a in actions if "sidecar" in a]
    else:
        table = _read(path)
        adds, removes = _non_null(table, "add"), _non_null(table, "remove")
        sidecars = [s["path"] for s in _non_null(table, "sidecar")]
    for sidecar in sidecars:
        full = sidecar if "://" in sidecar else storage.join(dlog.log_dir, "_sidecars", sidecar)
        table = _read(full)
        adds += _non_null(table, "add")
        removes += _non_null(table, "remove")
    return adds, removes


def _read(path: str) -> pa.Table:
    fs, p = storage.filesystem(path)
    try:
        schema = pq.read_schema(p, filesystem=fs)
        columns = [c for c in ("add", "remove", "sidecar") if c in schema.names]
        return pq.read_table(p, columns=columns, filesystem=fs)
    except (OSError, pa.ArrowInvalid) as e:
        raise CorruptLogError(f"Checkpoint file {path} cannot be read: {e}") from e


def _non_null(table: pa.Table, column: str) -> list[dict]:
    if column not in table.column_names:
        return []
    return [a for a in table.column(column).to_pylist() if a is not None]
