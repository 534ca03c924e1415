"""Creating an empty Delta table (version 0 with its protocol and metadata), or replacing
a table by an empty one with a new definition.

Properties of any name (``delta.*`` settings and free-form keys) and the description go
into the same first commit, with the protocol those properties need (:mod:`.protocol`).
A replace is one commit on the existing log (every file removed, the new metadata), so
the table keeps its history and time travel to before the replace, as in delta-spark.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping, Sequence

from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from headwater.delta.files import column_values
from headwater.delta.log import clustering, replay
from headwater.delta.log.actions import Metadata, now_ms
from headwater.delta.log.commit import Transaction
from headwater.delta.log.delta_log import DeltaLog
from headwater.delta.log.operations import Operation
from headwater.delta.schema import column_mapping
from headwater.delta.schema import table_schema as schemas
from headwater.errors import ProtocolChangedException, TableAlreadyExistsError, TableNotFoundError

SESSION_DEFAULTS = "spark.databricks.delta.properties.defaults."


def session_defaults() -> dict[str, str]:
    """The ``delta.*`` properties the session gives every new table:
    ``spark.databricks.delta.properties.defaults.<key>`` sets ``delta.<key>`` (e.g.
    ``...defaults.enableChangeDataFeed = true``), as delta-spark does; a table's own
    properties win."""
    spark = SparkSession.getActiveSession()
    if spark is None:
        return {}
    return {
        "delta." + key[len(SESSION_DEFAULTS) :]: value
        for key, value in spark.conf.getAll.items()
        if key.startswith(SESSION_DEFAULTS)
    }


def new_metadata(
    schema: StructType,
    partition_by: Sequence[str],
    properties: Mapping[str, str] | None = None,
    description: str | None = None,
) -> Metadata:
    """The metadata of a new table (a fresh table id)."""
    schemas.check_writable(schema, list(partition_by))
    column_values.check_definition(schema)
    configuration = {**session_defaults(), **dict(properties or {})}
    schema = column_mapping.assign(schema, configuration)
    return Metadata(
        id=str(uuid.uuid4()),
        schema_string=schemas.to_delta_json(schemas.with_declared_not_null(schema)),
        partition_columns=tuple(partition_by),
        configuration=configuration,
        description=description,
        created_time=now_ms(),
    )


def create_table(
    path: str,
    schema: StructType,
    partition_by: Sequence[str] = (),
    properties: Mapping[str, str] | None = None,
    description: str | None = None,
    cluster_by: Sequence[str] | None = None,
) -> int:
    """Create an empty table at ``path``; raises TableAlreadyExistsError if one is there.

    ``cluster_by``: liquid clustering columns (default: those of an enclosing
    :func:`headwater.delta.log.clustering.creating`, how a create by name reaches here)."""
    cluster_by = cluster_by if cluster_by is not None else clustering.pending()
    dlog = DeltaLog(path)
    if dlog.require_table_or_empty():
        raise TableAlreadyExistsError(f"A Delta table already exists at {dlog.root}.")
    operation = Operation.create_table(partition_by, dict(properties or {}), description)
    txn = Transaction(dlog, None, operation)
    txn.update_metadata(new_metadata(schema, partition_by, properties, description))
    if cluster_by:
        clustering.stage(txn, cluster_by)
    try:
        return txn.commit()
    except ProtocolChangedException:
        raise TableAlreadyExistsError(
            f"A Delta table was created at {dlog.root} by a concurrent writer."
        ) from None


def replace_table(
    path: str,
    schema: StructType,
    partition_by: Sequence[str] = (),
    properties: Mapping[str, str] | None = None,
    description: str | None = None,
    *,
    create_if_missing: bool,
    cluster_by: Sequence[str] | None = None,
) -> int:
    """Replace the table at ``path`` by an empty one with this definition (delta-spark's
    ``replace()``, or ``createOrReplace()`` with ``create_if_missing``); the version.
    The new definition's clustering replaces the old one's (none: the table is no longer
    clustered)."""
    cluster_by = cluster_by if cluster_by is not None else clustering.pending()
    dlog = DeltaLog(path)
    operation = Operation.create_table(
        partition_by, dict(properties or {}), description, replace=True, or_create=create_if_missing
    )
    if not dlog.require_table_or_empty():
        if not create_if_missing:
            raise TableNotFoundError(
                f"[DELTA_CANNOT_REPLACE_MISSING_TABLE] Table {dlog.root} cannot be replaced as "
                "it does not exist. Use DeltaTable.createOrReplace() (CREATE OR REPLACE TABLE) "
                "to create it."
            )
        txn = Transaction(dlog, None, operation)
        txn.update_metadata(new_metadata(schema, partition_by, properties, description))
        if cluster_by:
            clustering.stage(txn, cluster_by)
        return txn.commit()
    snapshot = dlog.snapshot()
    snapshot.check_writable(schema_change=True)
    txn = Transaction(dlog, snapshot, operation)
    txn.read_files([f.path for f in snapshot.files])
    txn.remove_files(replay.removes(snapshot, snapshot.files))
    fresh = new_metadata(schema, partition_by, properties, description)
    # The table stays the same table: its id and creation time survive the replace.
    txn.update_metadata(
        dataclasses.replace(
            fresh, id=snapshot.metadata.id, created_time=snapshot.metadata.created_time
        )
    )
    if cluster_by or clustering.columns_of(snapshot):
        clustering.stage(txn, list(cluster_by or []))
    return txn.commit()
