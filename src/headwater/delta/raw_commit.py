"""Commits with actions delta-rs's Python API cannot express (``cdc`` change-data files).

A DML commit on a table with the change data feed enabled must carry its ``cdc`` actions
in the same commit as its adds and removes. delta-rs only accepts adds and removes from
Python, so such commits are written here: the actions as JSON lines, published at
``read_version + 1`` with put-if-absent (a hard link, which fails if another writer took
the version), exactly as delta-rs publishes its own commits on a local filesystem.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Sequence

from deltalake import DeltaTable
from deltalake.transaction import AddAction, RemoveAction
from pyarrow import fs as pafs
from pyspark.sql.types import StructType

from headwater import storage
from headwater.delta import schema as schemas
from headwater.delta.log import DeltaLog, Snapshot
from headwater.errors import ConcurrentModificationError, UnsupportedFeatureError

CHECKPOINT_INTERVAL = 100  # delta-rs's default, so checkpoints land where it puts them


def commit_actions(
    dlog: DeltaLog,
    snapshot: Snapshot,
    *,
    adds: Sequence[AddAction],
    removes: Sequence[RemoveAction],
    cdc: Sequence[dict],
    operation: str,
    info: dict,
    schema: StructType | None = None,
    txn: tuple[str, int] | None = None,
    removed_vectors: dict[str, dict] | None = None,
    log_actions: Sequence[dict] = (),
) -> int:
    """Publish one commit on top of ``snapshot``; returns its version.

    ``schema`` (when it differs from the snapshot's) adds a metaData action, so a MERGE
    with schema evolution stays one commit. ``removed_vectors`` maps a removed file's path
    to the log's path and deletion vector of its add (see :mod:`dv_descriptors`), which its
    remove must repeat. ``log_actions`` are further actions already in the log's JSON
    shape (a file re-added with a new deletion vector, and its remove). A concurrent commit
    raises
    :class:`ConcurrentModificationError` and leaves the table untouched.
    """
    filesystem, log_dir = storage.filesystem(dlog.log_dir)
    if not isinstance(filesystem, pafs.LocalFileSystem):
        raise UnsupportedFeatureError(
            f"This commit to {dlog.root} (change data or files with deletion vectors) needs "
            "a local filesystem (an atomic put-if-absent of the commit file); run the "
            "operation with delta-spark, or disable delta.enableChangeDataFeed / purge the "
            "deletion vectors (REORG TABLE ... APPLY (PURGE)) in that engine."
        )
    check_writer_features(snapshot, bool(removes) or bool(log_actions))
    removed_vectors = removed_vectors or {}
    now = int(time.time() * 1000)
    version = snapshot.version + 1
    lines: list[dict] = [
        {
            "commitInfo": {
                "timestamp": now,
                "operation": operation,
                "readVersion": snapshot.version,
                "isolationLevel": "Serializable",
                "isBlindAppend": False,
                "engineInfo": "headwater",
                "headwaterOperation": operation,
                "headwaterCommitId": uuid.uuid4().hex,
                **info,
            }
        }
    ]
    if schema is not None and schema != snapshot.schema:
        lines.append({"metaData": _metadata(snapshot, schema)})
    if txn is not None:
        lines.append({"txn": {"appId": txn[0], "version": txn[1], "lastUpdated": now}})
    for r in removes:
        remove = {
            "path": r.path,
            "deletionTimestamp": r.deletion_timestamp,
            "dataChange": r.data_change,
            "extendedFileMetadata": True,
            "partitionValues": dict(r.partition_values or {}),
            "size": r.size,
        }
        if r.path in removed_vectors:
            remove["path"] = removed_vectors[r.path]["path"]
            remove["deletionVector"] = removed_vectors[r.path]["deletionVector"]
        lines.append({"remove": remove})
    lines.extend(log_actions)
    lines += [{"add": _add_json(a)} for a in adds]
    lines.extend({"cdc": c} for c in cdc)
    payload = "\n".join(json.dumps(line, separators=(",", ":")) for line in lines) + "\n"
    _publish(log_dir, version, payload.encode(), dlog.root)
    if version % CHECKPOINT_INTERVAL == 0:
        DeltaTable(dlog.root, storage_options=dlog.storage_options).create_checkpoint()
    return version


def _add_json(a: AddAction) -> dict:
    return {
        "path": a.path,
        "partitionValues": dict(a.partition_values or {}),
        "size": a.size,
        "modificationTime": a.modification_time,
        "dataChange": a.data_change,
        "stats": a.stats,
    }


# Writer features whose rules these commits keep (table features protocol, writer v7).
# Others (row tracking, in-commit timestamps, identity columns, ...) need fields we do not
# write, so such tables are refused by name rather than left inconsistent.
HONOURED_WRITER_FEATURES = {
    "appendOnly",
    "changeDataFeed",
    "checkConstraints",  # enforced on the rows written (write.write_files)
    "columnMapping",  # files are written under physical names (write.write_files)
    "deletionVectors",
    "domainMetadata",
    "invariants",  # as on delta-rs's commit path
    "timestampNtz",
    "vacuumProtocolCheck",
}


def check_writer_features(snapshot: Snapshot, removes: bool) -> None:
    """Refuse, before anything is written, a commit this module could not write correctly."""
    features = set(snapshot.table.protocol().writer_features or [])
    unknown = sorted(features - HONOURED_WRITER_FEATURES - _unused_features(snapshot))
    if unknown:
        raise UnsupportedFeatureError(
            f"Delta table at {snapshot.root} uses writer feature(s) {', '.join(unknown)}, "
            "which headwater cannot keep in this commit; nothing was written. Run the "
            "operation with delta-spark."
        )
    if removes and snapshot.configuration.get("delta.appendOnly", "false").lower() == "true":
        raise UnsupportedFeatureError(
            f"Delta table at {snapshot.root} is append-only (delta.appendOnly=true): rows "
            "cannot be updated or deleted."
        )


def _unused_features(snapshot: Snapshot) -> set[str]:
    """Features a table lists (as a legacy protocol upgrade does) but does not use: no
    CHECK constraint, generated or identity column, so their rules cannot be broken."""
    unused = set()
    if not any(k.startswith("delta.constraints.") for k in snapshot.configuration):
        unused.add("checkConstraints")
    schema_json = snapshot.table.schema().to_json()
    if "delta.generationExpression" not in schema_json:
        unused.add("generatedColumns")
    if "delta.identity." not in schema_json:
        unused.add("identityColumns")
    return unused


def _publish(log_dir: str, version: int, payload: bytes, root: str) -> None:
    final = os.path.join(log_dir, f"{version:020d}.json")
    temp = os.path.join(log_dir, f"_commit_{uuid.uuid4().hex}.json.tmp")
    with open(temp, "wb") as f:
        f.write(payload)
        f.flush()
        os.fsync(f.fileno())
    try:
        os.link(temp, final)
    except FileExistsError as e:
        raise ConcurrentModificationError(
            f"A concurrent commit to {root} took version {version}, which this operation read "
            "as the next version. Nothing was committed; run it again."
        ) from e
    finally:
        os.unlink(temp)


def _metadata(snapshot: Snapshot, schema: StructType) -> dict:
    meta = snapshot.table.metadata()
    return {
        "id": meta.id,
        "name": meta.name,
        "description": meta.description,
        "format": {"provider": "parquet", "options": {}},
        "schemaString": schemas.to_delta(schemas.as_nullable(schema)).to_json(),
        "partitionColumns": list(meta.partition_columns),
        "configuration": dict(meta.configuration),
        "createdTime": meta.created_time,
    }
