"""Recording the change data feed: the rows a MERGE/UPDATE/DELETE changed, as ``cdc`` files.

Readers derive inserts and deletes from a commit's added and removed files, which is right
for appends and whole-file deletes but not for a rewrite (a file rewritten to change one
row would read as all of its rows deleted and re-inserted). So a rewriting DML on a table
with ``delta.enableChangeDataFeed = true`` also writes exactly the changed rows, with a
``_change_type`` column, under ``_change_data/`` and commits them as ``cdc`` actions in the
same commit.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql.types import StringType, StructField, StructType

from headwater import storage
from headwater.delta.files.data_files import write_files
from headwater.delta.log.actions import AddCDCFile
from headwater.delta.log.delta_log import Snapshot

CHANGE_TYPE = "_change_type"
CHANGE_DIR = "_change_data"
ENABLE = "delta.enableChangeDataFeed"


def enabled(configuration: dict[str, str]) -> bool:
    return str(configuration.get(ENABLE, "false")).lower() == "true"


def write_changes(changes: DataFrame, snapshot: Snapshot, schema: StructType) -> list[AddCDCFile]:
    """Write ``changes`` (the table's columns plus ``_change_type``) as change files under
    ``_change_data/``; returns their ``cdc`` actions."""
    full = StructType([*schema.fields, StructField(CHANGE_TYPE, StringType(), True)])
    ordered = changes.select(*[f"`{f.name}`" for f in full])
    written = write_files(
        ordered,
        storage.join(snapshot.root, CHANGE_DIR),
        snapshot.partition_columns,
        full,
        data_change=False,
    )
    return [
        AddCDCFile(f"{CHANGE_DIR}/{a.path}", dict(a.partition_values), a.size) for a in written.adds
    ]
