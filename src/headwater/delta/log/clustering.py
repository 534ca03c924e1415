"""Liquid clustering: which columns a table is clustered by, kept as delta-spark keeps them.

A clustered table lists the writer features ``clustering`` and ``domainMetadata`` and holds
its clustering columns in the ``delta.clustering`` metadata domain
(``{"clusteringColumns":[["col"]]}``, physical names, one path per column) rather than in
its properties, so delta-spark and Databricks read the same layout back. Clustering and
partitioning exclude each other, and a table is clustered by at most four columns whose
types have min/max statistics (what file skipping needs).

Every way of creating a table (the create builders, ``CREATE TABLE ... CLUSTER BY``,
``df.write.clusterBy``) calls :func:`stage` on the transaction of its first commit, so the
domain and the features land with the table; :func:`alter` commits ``ALTER TABLE ...
CLUSTER BY``. Writes keep clustering rules by themselves: new files are simply unclustered
until OPTIMIZE clusters them (:mod:`.optimize`).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
from collections.abc import Iterator, Sequence
from dataclasses import replace

from pyspark.sql.types import (
    ByteType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from headwater.delta.log import domains
from headwater.delta.log import protocol as protocols
from headwater.delta.log.actions import DomainMetadata, Metadata, Protocol
from headwater.delta.log.commit import Transaction
from headwater.delta.log.delta_log import DeltaLog, Snapshot
from headwater.delta.log.operations import Operation
from headwater.delta.schema import column_mapping as mapping
from headwater.errors import DeltaAnalysisError

DOMAIN = "delta.clustering"
FEATURES = frozenset({"clustering", "domainMetadata"})
MAX_COLUMNS = 4  # delta-spark's spark.databricks.delta.clusteredTable.maxClusteringColumns
PROVIDER = "liquid"  # the add action's clusteringProvider on clustered files
_CLUSTERABLE = (
    ByteType, ShortType, IntegerType, LongType, FloatType, DoubleType, DecimalType,
    StringType, DateType, TimestampType, TimestampNTZType,
)  # fmt: skip

# Columns a create by name (through the catalog) should cluster by: the catalog's create
# calls :func:`headwater.delta.write.create.create_table`, which reads them from here.
_PENDING: contextvars.ContextVar[tuple[str, ...] | None] = contextvars.ContextVar(
    "headwater_pending_clustering", default=None
)


@contextlib.contextmanager
def creating(columns: Sequence[str] | None) -> Iterator[None]:
    """Within the block, a table created by :func:`create_table` is clustered by ``columns``."""
    token = _PENDING.set(tuple(columns) if columns else None)
    try:
        yield
    finally:
        _PENDING.reset(token)


def pending() -> tuple[str, ...] | None:
    return _PENDING.get()


def check(
    columns: Sequence[str], schema: StructType, partition_by: Sequence[str] = ()
) -> list[str]:
    """The clustering columns under the schema's spelling; a clear error for a column not in
    the schema, of a type without statistics, too many of them, or with partitioning."""
    cols = [str(c) for c in columns]
    if partition_by and cols:
        raise DeltaAnalysisError(
            f"[DELTA_CLUSTER_BY_WITH_PARTITIONED_BY] Clustering by ({', '.join(cols)}) and "
            f"partitioning by ({', '.join(partition_by)}) cannot be combined: liquid clustering "
            "replaces partitioning. Drop PARTITIONED BY / partitionBy, or CLUSTER BY."
        )
    if len(cols) > MAX_COLUMNS:
        raise DeltaAnalysisError(
            f"[DELTA_CLUSTER_BY_INVALID_NUM_COLUMNS] CLUSTER BY ({', '.join(cols)}) names "
            f"{len(cols)} columns; a table is clustered by at most {MAX_COLUMNS}. Keep the "
            "columns queries filter on most."
        )
    if len({c.lower() for c in cols}) != len(cols):
        raise DeltaAnalysisError(
            f"[DELTA_DUPLICATE_COLUMNS_FOUND] CLUSTER BY ({', '.join(cols)}) names a column "
            "twice; name each once."
        )
    by_name = {f.name.lower(): f for f in schema.fields}
    out = []
    for c in cols:
        field = by_name.get(c.lower())
        if field is None:
            raise DeltaAnalysisError(
                f"[DELTA_COLUMN_NOT_FOUND_IN_SCHEMA] Clustering column {c} is not a column of "
                f"the table (columns: {', '.join(schema.fieldNames())}). Cluster by one of them."
            )
        if not isinstance(field.dataType, _CLUSTERABLE):
            raise DeltaAnalysisError(
                f"[DELTA_CLUSTERING_COLUMNS_DATATYPE_NOT_SUPPORTED] Clustering column {c} has "
                f"type {field.dataType.simpleString()}, which has no min/max statistics to skip "
                "files by. Cluster by numeric, string, date or timestamp columns."
            )
        out.append(field.name)
    return out


def domain(columns: Sequence[str], schema: StructType) -> DomainMetadata:
    """The ``delta.clustering`` domain for ``columns`` (logical names; stored physical)."""
    physical = {
        f.name: (f.metadata or {}).get(mapping.PHYSICAL_NAME, f.name) for f in schema.fields
    }
    config = {"clusteringColumns": [[physical[c]] for c in columns]}
    return DomainMetadata(DOMAIN, json.dumps(config, separators=(",", ":")))


def with_features(metadata: Metadata, current: Protocol) -> Protocol:
    """``current`` plus the clustering writer features (and whatever ``metadata`` needs), on
    the table-features protocol delta-spark writes for clustered tables."""
    base = Protocol(
        current.min_reader_version,
        7,
        current.reader_features,
        protocols.writer_features(current) | FEATURES,
    )
    return protocols.required(metadata, base)


def stage(txn: Transaction, columns: Sequence[str]) -> list[str]:
    """Cluster the table of ``txn`` (whose metadata is staged or read) by ``columns``:
    the domain, the features and the ``clusterBy`` history parameter, in the same commit."""
    meta = txn.metadata
    schema = StructType.fromJson(json.loads(meta.schema_string))
    cols = check(columns, schema, list(meta.partition_columns))
    txn.set_domain(domain(cols, schema))
    if not protocols.writer_features(txn.protocol) >= FEATURES:
        txn.update_protocol(with_features(meta, txn.protocol))
    params = dict(txn.operation.parameters)
    if txn.operation.name != "CLUSTER BY":
        params["clusterBy"] = list(cols)
        txn.operation = replace(txn.operation, parameters=params)
    return cols


def columns_of(snapshot: Snapshot) -> list[str] | None:
    """The table's clustering columns (logical names); None when it is not clustered
    (an empty list after ``CLUSTER BY NONE``)."""
    if "clustering" not in protocols.writer_features(snapshot.protocol):
        return None
    config = _parse(domains.latest(DeltaLog(snapshot.root), snapshot.version, DOMAIN))
    if config is None:
        return []
    logical = mapping.logical_paths(snapshot.schema)
    return [logical.get(".".join(path), ".".join(path)) for path in config]


def _parse(d: dict | None) -> list[list[str]] | None:
    if d is None or d.get("removed"):
        return None
    cols = json.loads(d.get("configuration") or "{}").get("clusteringColumns") or []
    return [[c] if isinstance(c, str) else list(c) for c in cols]


def alter(path: str, columns: Sequence[str] | None) -> int:
    """``ALTER TABLE t CLUSTER BY (cols)`` (``None``: ``CLUSTER BY NONE``): one commit
    changing the domain (and adding the clustering features to a table without them).
    Files already clustered stay as they are; OPTIMIZE clusters new data by the new
    columns."""
    dlog = DeltaLog(path)
    snapshot = dlog.snapshot()
    snapshot.check_writable()
    old = columns_of(snapshot)
    txn = Transaction(dlog, snapshot, Operation("CLUSTER BY", {}))
    new = stage(txn, list(columns or []))
    txn.operation = Operation(
        "CLUSTER BY",
        {"oldClusteringColumns": ",".join(old or []), "newClusteringColumns": ",".join(new)},
    )
    return txn.commit()
