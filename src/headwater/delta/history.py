"""A table's history and detail, as ``DESCRIBE HISTORY`` / ``DESCRIBE DETAIL`` show them.

Both come from the log alone (delta-rs reads the commits' ``commitInfo`` and the current
metadata), so they cost no Spark job beyond building the one-frame result.
"""

from __future__ import annotations

import datetime as dt
import json

from deltalake import DeltaTable as RsTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from headwater.delta.log import DeltaLog

HISTORY_SCHEMA = (
    "version long, timestamp timestamp, userId string, userName string, operation string, "
    "operationParameters map<string,string>, readVersion long, isolationLevel string, "
    "isBlindAppend boolean, operationMetrics map<string,string>, userMetadata string, engineInfo string"
)
DETAIL_SCHEMA = (
    "format string, id string, name string, description string, location string, "
    "createdAt timestamp, lastModified timestamp, partitionColumns array<string>, numFiles long, "
    "sizeInBytes long, properties map<string,string>, minReaderVersion int, minWriterVersion int, "
    "tableFeatures array<string>"
)


def _utc(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc)


def history(spark: SparkSession, path: str, limit: int | None = None) -> DataFrame:
    rows = []
    for h in RsTable(DeltaLog(path).root).history(limit):
        rows.append(
            (
                int(h["version"]),
                _utc(h["timestamp"]),
                h.get("userId"),
                h.get("userName"),
                # Tables written by headwater 0.1 kept the operation in a key of its own.
                h.get("headwaterOperation") or h.get("operation"),
                {
                    k: v if isinstance(v, str) else json.dumps(v)
                    for k, v in (h.get("operationParameters") or {}).items()
                },
                h.get("readVersion"),
                h.get("isolationLevel"),
                h.get("isBlindAppend"),
                {k: str(v) for k, v in (h.get("operationMetrics") or {}).items()},
                h.get("userMetadata"),
                h.get("engineInfo"),
            )
        )
    return spark.createDataFrame(rows, HISTORY_SCHEMA).orderBy(F.col("version").desc())


def detail(spark: SparkSession, path: str) -> DataFrame:
    snap = DeltaLog(path).snapshot()
    meta, protocol = snap.metadata, snap.protocol
    features = sorted(protocol.all_reader_features | protocol.all_writer_features)
    last = RsTable(snap.root).history(1)[0]["timestamp"]
    row = (
        "delta", meta.id, meta.name, meta.description, snap.root,
        _utc(meta.created_time or last), _utc(last),
        list(meta.partition_columns), len(snap.files), sum(f.size for f in snap.files),
        dict(meta.configuration), protocol.min_reader_version, protocol.min_writer_version,
        features,
    )  # fmt: skip
    return spark.createDataFrame([row], DETAIL_SCHEMA)
