"""The log's own add actions at a version, replayed from the newest checkpoint and commits.

delta-rs gives a snapshot's files with their paths, sizes, partition values and stats, but
not their deletion-vector descriptors, tags or other fields. A commit that removes a file
with a deletion vector must name that vector in its ``remove`` (readers pair adds and
removes by path and vector), and a file re-added with a new vector repeats its add as
logged, so those come from here: the newest complete checkpoint at or before the version
(classic, multi-part, or V2 with sidecars), then the JSON commits after it.

Tables without the ``deletionVectors`` feature need none of this: their removes are built
from the snapshot's file list alone (:func:`removes`).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from headwater import storage
from headwater.delta.log import deletion_vectors
from headwater.delta.log import protocol as protocols
from headwater.delta.log import tolerant_replay as tolerant_log
from headwater.delta.log.actions import AddFile, RemoveFile, now_ms
from headwater.delta.log.delta_log import DataFile, DeltaLog, Snapshot
from headwater.errors import CorruptLogError


def has_vectors(snapshot: Snapshot) -> bool:
    return protocols.has_deletion_vectors(snapshot.protocol)


def live_adds(dlog: DeltaLog, version: int, paths: set[str] | None = None) -> dict[str, AddFile]:
    """The add action of each live file at ``version`` (of those in ``paths`` when given),
    keyed by decoded relative path, as in :class:`headwater.delta.log.delta_log.DataFile`."""
    state, _ = _replay(dlog, version)
    return {
        key: AddFile.from_json(add) for key, add in state.items() if paths is None or key in paths
    }


def removes(
    snapshot: Snapshot, files: Iterable[DataFile], data_change: bool = True
) -> list[RemoveFile]:
    """The remove actions of ``files`` (live files of ``snapshot``), each naming the
    deletion vector its add carries."""
    files = list(files)
    now = now_ms()
    if not files:
        return []
    vectors = live_vectors(snapshot, {f.path for f in files}) if has_vectors(snapshot) else {}
    out = []
    for f in files:
        logged = vectors.get(f.path)
        if logged is not None:
            out.append(logged.remove(data_change, now))
        else:
            out.append(
                RemoveFile(f.logged_path, now, data_change, dict(f.partition_values), f.size)
            )
    return out


def live_vectors(snapshot: Snapshot, paths: set[str]) -> dict[str, AddFile]:
    """The logged adds of those files in ``paths`` that carry a deletion vector."""
    wanted = paths & set(snapshot.deletion_vectors)
    if not wanted:
        return {}
    logged = live_adds(DeltaLog(snapshot.root), snapshot.version, wanted)
    missing = {p for p in wanted if logged.get(p) is None or logged[p].deletion_vector is None}
    if missing:
        raise CorruptLogError(
            f"The log of {snapshot.root} gives no deletion vector for {sorted(missing)[0]}, "
            "which delta-rs reads with one; nothing was committed."
        )
    return logged


def deleted_counts(snapshot: Snapshot) -> dict[str, int]:
    """Rows each file's deletion vector deletes (its cardinality, from the log)."""
    if not has_vectors(snapshot):
        return {}
    return {
        path: int(add.deletion_vector["cardinality"])
        for path, add in live_adds(DeltaLog(snapshot.root), snapshot.version).items()
        if add.deletion_vector is not None
    }


def deleted_positions(dlog: DeltaLog, version: int, paths: set[str]) -> dict[str, np.ndarray]:
    """The row positions (uint64) the deletion vector of each file in ``paths`` deletes
    (files without a vector are left out)."""
    cache: dict[str, bytes] = {}  # one read of a vector file many data files share
    return {
        path: deletion_vectors.read(dlog.root, add.deletion_vector, cache)
        for path, add in live_adds(dlog, version, paths).items()
        if add.deletion_vector is not None
    }


def referenced_vector_files(dlog: DeltaLog, version: int, since_ms: int) -> set[str]:
    """The deletion-vector files versions from ``since_ms`` (epoch ms) on read, which VACUUM
    must not delete: those of live files at ``version`` and those of files removed at or
    after ``since_ms`` (a remove without a timestamp counts as recent)."""
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
    """(live adds by decoded path relative to the root, the removes still in the log).
    Paths are compared decoded and relative, so an absolute ``file:`` spelling of a path
    (old writers) pairs with its relative one as delta-spark pairs them."""
    start, actions = tolerant_log.checkpoint_actions(dlog.log_dir, version, ("add", "remove"))
    state = {_key(dlog, a["add"]["path"]): a["add"] for a in actions if "add" in a}
    tombstones = [a["remove"] for a in actions if "remove" in a]
    for v in range(start + 1, version + 1):
        commit = dlog.commit_actions(v)
        # A commit that replaces a file's vector removes and re-adds the same path: removes
        # first, whatever order the writer used, so the re-added file stays live.
        for action in commit:
            if "remove" in action:
                state.pop(_key(dlog, action["remove"]["path"]), None)
                tombstones.append(action["remove"])
        for action in commit:
            if "add" in action:
                state[_key(dlog, action["add"]["path"])] = action["add"]
    return state, tombstones


def _key(dlog: DeltaLog, logged: str) -> str:
    return tolerant_log.file_key(dlog.root, logged)
