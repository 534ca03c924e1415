"""Creating an empty Delta table: version 0 with its protocol and metadata.

Properties of any name (``delta.*`` settings and free-form keys) and the description go
into the same first commit, with the protocol those properties need (:mod:`.protocol`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

from pyspark.sql.types import StructType

from headwater.delta import schema as schemas
from headwater.delta.actions import Metadata, now_ms
from headwater.delta.commit_info import Operation
from headwater.delta.log import DeltaLog
from headwater.delta.transaction import Transaction
from headwater.errors import ProtocolChangedException, TableAlreadyExistsError


def new_metadata(
    schema: StructType,
    partition_by: Sequence[str],
    properties: Mapping[str, str] | None = None,
    description: str | None = None,
) -> Metadata:
    """The metadata of a new table (a fresh table id)."""
    schemas.check_writable(schema, list(partition_by))
    return Metadata(
        id=str(uuid.uuid4()),
        schema_string=schemas.to_delta_json(schemas.as_nullable(schema)),
        partition_columns=tuple(partition_by),
        configuration=dict(properties or {}),
        description=description,
        created_time=now_ms(),
    )


def create_table(
    path: str,
    schema: StructType,
    partition_by: Sequence[str] = (),
    properties: Mapping[str, str] | None = None,
    description: str | None = None,
) -> int:
    """Create an empty table at ``path``; raises TableAlreadyExistsError if one is there."""
    dlog = DeltaLog(path)
    if dlog.require_table_or_empty():
        raise TableAlreadyExistsError(f"A Delta table already exists at {dlog.root}.")
    operation = Operation.create_table(partition_by, dict(properties or {}), description)
    txn = Transaction(dlog, None, operation)
    txn.update_metadata(new_metadata(schema, partition_by, properties, description))
    try:
        return txn.commit()
    except ProtocolChangedException:
        raise TableAlreadyExistsError(
            f"A Delta table was created at {dlog.root} by a concurrent writer."
        ) from None
