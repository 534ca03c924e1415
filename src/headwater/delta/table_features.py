"""Commits that change a table's protocol to the table-features form (reader 3, writer 7).

delta-rs, asked for ``delta.enableDeletionVectors``, also lists ``variantType`` among the
table's features, which readers without variant support (and our writer) refuse. The
protocol written here names exactly what the table uses, as delta-spark's does: at
creation, and when ``SET TBLPROPERTIES`` turns deletion vectors on.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence

from deltalake.transaction import AddAction
from pyarrow import fs as pafs
from pyspark.sql.types import StructType

from headwater import storage
from headwater.delta import schema as schemas
from headwater.delta.log import DeltaLog, Snapshot
from headwater.delta.raw_commit import _add_json, _metadata, _publish
from headwater.errors import UnsupportedFeatureError


def create_with_features(
    dlog: DeltaLog,
    schema: StructType,
    partition_by: list[str],
    configuration: dict[str, str],
    adds: Sequence[AddAction],
    info: dict,
    txn: tuple[str, int] | None = None,
) -> int:
    """Create a table with deletion vectors enabled: version 0 with the protocol, the
    metadata, and the first write's files."""
    readers, writers = {"deletionVectors"}, {"deletionVectors", "appendOnly", "invariants"}
    if configuration.get("delta.enableChangeDataFeed", "false").lower() == "true":
        writers.add("changeDataFeed")
    if "timestamp_ntz" in schemas.to_delta(schema).to_json():
        readers.add("timestampNtz")
        writers.add("timestampNtz")
    now = int(time.time() * 1000)
    lines = _feature_lines("CREATE TABLE", info, readers, writers) + [
        {
            "metaData": {
                "id": str(uuid.uuid4()),
                "format": {"provider": "parquet", "options": {}},
                "schemaString": schemas.to_delta(schemas.as_nullable(schema)).to_json(),
                "partitionColumns": list(partition_by),
                "configuration": dict(configuration),
                "createdTime": now,
            }
        },
    ]
    if txn is not None:
        lines.append({"txn": {"appId": txn[0], "version": txn[1], "lastUpdated": now}})
    lines += [{"add": _add_json(a)} for a in adds]
    return _write_version(dlog, 0, lines, "Creating with deletion vectors")


# Writer features a legacy protocol implies, by minWriterVersion (readers: columnMapping
# from minReaderVersion 2); listed when a table moves to the table-features protocol.
_LEGACY_WRITER_FEATURES = {
    2: {"appendOnly", "invariants"},
    3: {"checkConstraints"},
    4: {"changeDataFeed", "generatedColumns"},
    5: {"columnMapping"},
    6: {"identityColumns"},
}


def enable_deletion_vectors(dlog: DeltaLog, snapshot: Snapshot, properties: dict[str, str]) -> int:
    """``SET TBLPROPERTIES`` that turns on ``delta.enableDeletionVectors``: one commit with
    the protocol (table features: the old protocol's, plus deletionVectors) and the new
    properties."""
    protocol = snapshot.table.protocol()
    readers = set(protocol.reader_features or [])
    writers = set(protocol.writer_features or [])
    if protocol.writer_features is None:  # legacy protocol: list what it implied
        for version, features in _LEGACY_WRITER_FEATURES.items():
            if protocol.min_writer_version >= version:
                writers |= features
    if protocol.reader_features is None and protocol.min_reader_version >= 2:
        readers.add("columnMapping")
    readers.add("deletionVectors")
    writers.add("deletionVectors")
    meta = _metadata(snapshot, snapshot.schema)
    meta["configuration"] = {**meta["configuration"], **properties}
    meta["schemaString"] = snapshot.table.schema().to_json()  # as logged (mapping metadata)
    info = {
        "operationParameters": {"properties": json.dumps(properties)},
        "readVersion": snapshot.version,
    }
    lines = _feature_lines("SET TBLPROPERTIES", info, readers, writers) + [{"metaData": meta}]
    return _write_version(dlog, snapshot.version + 1, lines, "Enabling deletion vectors on")


def add_check_constraint(dlog: DeltaLog, snapshot: Snapshot, name: str, expression: str) -> int:
    """``ADD CONSTRAINT name CHECK (expression)``: one commit with the constraint in the
    configuration and a protocol that makes writers enforce it (writer version 3, or the
    ``checkConstraints`` feature). delta-rs's own ``add_constraint`` re-prints the
    expression through DataFusion and refuses Spark SQL it cannot print (``length(x)``)."""
    protocol = snapshot.table.protocol()
    new: dict = {"minReaderVersion": protocol.min_reader_version}
    if protocol.writer_features is None:
        new["minWriterVersion"] = max(3, protocol.min_writer_version)
    else:
        new["minWriterVersion"] = 7
        if protocol.reader_features is not None:
            new["readerFeatures"] = sorted(protocol.reader_features)
        new["writerFeatures"] = sorted({*protocol.writer_features, "checkConstraints"})
    meta = _metadata(snapshot, snapshot.schema)
    meta["configuration"] = {**meta["configuration"], f"delta.constraints.{name}": expression}
    meta["schemaString"] = snapshot.table.schema().to_json()  # as logged (mapping metadata)
    info = {
        "timestamp": int(time.time() * 1000),
        "operation": "ADD CONSTRAINT",
        "operationParameters": {"name": name, "expr": expression},
        "readVersion": snapshot.version,
        "isolationLevel": "Serializable",
        "isBlindAppend": False,
        "engineInfo": "headwater",
    }
    lines = [{"commitInfo": info}, {"protocol": new}, {"metaData": meta}]
    return _write_version(dlog, snapshot.version + 1, lines, "Adding a constraint to")


def _feature_lines(operation: str, info: dict, readers: set[str], writers: set[str]) -> list[dict]:
    """The commitInfo and protocol actions of a commit that sets the table's features."""
    return [
        {
            "commitInfo": {
                "timestamp": int(time.time() * 1000),
                "operation": operation,
                "isolationLevel": "Serializable",
                "isBlindAppend": True,
                "engineInfo": "headwater",
                **info,
            }
        },
        {
            "protocol": {
                "minReaderVersion": 3,
                "minWriterVersion": 7,
                "readerFeatures": sorted(readers),
                "writerFeatures": sorted(writers),
            }
        },
    ]


def _write_version(dlog: DeltaLog, version: int, lines: list[dict], what: str) -> int:
    filesystem, log_dir = storage.filesystem(dlog.log_dir)
    if not isinstance(filesystem, pafs.LocalFileSystem):
        raise UnsupportedFeatureError(
            f"{what} {dlog.root} needs a local filesystem (an atomic put-if-absent of the "
            "commit file); nothing was changed."
        )
    storage.make_dir(log_dir)
    payload = "\n".join(json.dumps(line, separators=(",", ":")) for line in lines) + "\n"
    _publish(log_dir, version, payload.encode(), dlog.root)
    return version
