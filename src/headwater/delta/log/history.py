"""A table's history and detail, as ``DESCRIBE HISTORY`` / ``DESCRIBE DETAIL`` show them.

Both come from the log alone (delta-rs reads the commits' ``commitInfo`` and the current
metadata), so they cost no Spark job beyond building the one-frame result.
"""

from __future__ import annotations

import datetime as dt
import json

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from headwater.delta import names
from headwater.delta.log import clustering, time_travel
from headwater.delta.log import protocol as protocols
from headwater.delta.log.delta_log import DeltaLog
from headwater.errors import HeadwaterError
from headwater.storage.paths import hadoop_uri

HISTORY_SCHEMA = (
    "version long, timestamp timestamp, userId string, userName string, operation string, "
    "operationParameters map<string,string>, "
    "job struct<jobId:string,jobName:string,jobRunId:string,runId:string,jobOwnerId:string,"
    "triggerType:string>, notebook struct<notebookId:string>, clusterId string, "
    "readVersion long, isolationLevel string, "
    "isBlindAppend boolean, operationMetrics map<string,string>, userMetadata string, engineInfo string"
)
DETAIL_SCHEMA = (
    "format string, id string, name string, description string, location string, "
    "createdAt timestamp, lastModified timestamp, partitionColumns array<string>, clusteringColumns array<string>, numFiles long, "
    "sizeInBytes long, properties map<string,string>, minReaderVersion int, minWriterVersion int, "
    "tableFeatures array<string>"
)


def _utc(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc)


def _parameters(found: dict[str, object] | None) -> dict[str, str | None] | None:
    """``operationParameters`` as delta-spark shows them: a map of strings, where a value the
    commit wrote as JSON ``null`` (delta-spark's CREATE TABLE ``description``) stays null,
    and a number, boolean, list or object is its JSON text; null when the commit has none."""
    if found is None:
        return None
    return {k: v if isinstance(v, str) or v is None else json.dumps(v) for k, v in found.items()}


def _metrics(found: dict[str, object] | None) -> dict[str, str] | None:
    """``operationMetrics`` as strings; null when the commit has none (a CREATE TABLE
    without rows), as delta-spark shows them, not an empty map."""
    return None if found is None else {k: str(v) for k, v in found.items()}


def history(spark: SparkSession, path: str, limit: int | None = None) -> DataFrame:
    rows = []
    for h in DeltaLog(path).history(limit):
        rows.append(
            (
                int(h["version"]),
                _utc(time_travel.commit_time(h)),
                h.get("userId"),
                h.get("userName"),
                # Tables written by headwater 0.1 kept the operation in a key of its own.
                h.get("headwaterOperation") or h.get("operation"),
                _parameters(h.get("operationParameters")),
                None,  # job, notebook, clusterId: a Databricks workspace's, never ours
                None,
                None,
                h.get("readVersion"),
                h.get("isolationLevel"),
                h.get("isBlindAppend"),
                _metrics(h.get("operationMetrics")),
                h.get("userMetadata"),
                h.get("engineInfo"),
            )
        )
    return spark.createDataFrame(rows, HISTORY_SCHEMA).orderBy(F.col("version").desc())


def _name(spark: SparkSession, root: str) -> str | None:
    """The catalog's qualified name of the table at ``root`` (delta-spark finds it by
    location for a table read by path too)."""
    try:
        return names.of(spark).name_at(root)
    except HeadwaterError:  # a session without headwater's catalog
        return None


def detail(spark: SparkSession, path: str) -> DataFrame:
    snap = DeltaLog(path).snapshot()
    meta, protocol = snap.metadata, snap.protocol
    # Legacy protocols list no features: name those their versions imply, as delta-spark.
    features = sorted(protocols.reader_features(protocol) | protocols.writer_features(protocol))
    last = time_travel.commit_time(DeltaLog(snap.root).history(1)[0])
    row = (
        "delta", meta.id, _name(spark, snap.root) or meta.name, meta.description,
        hadoop_uri(snap.root),  # qualified, as delta-spark's (file:/... for a local table)
        _utc(meta.created_time or last), _utc(last),
        list(meta.partition_columns), clustering.columns_of(snap) or [], len(snap.files), sum(f.size for f in snap.files),
        dict(meta.configuration), protocol.min_reader_version, protocol.min_writer_version,
        features,
    )  # fmt: skip
    return spark.createDataFrame([row], DETAIL_SCHEMA)
