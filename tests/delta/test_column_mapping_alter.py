"""Column mapping turned on by ALTER TABLE, and the schema changes it allows, as delta-spark
does them: the existing columns get ids and their own names as physical names (the names
their files hold), so the table goes on being written and read; RENAME COLUMN and DROP
COLUMN then change only the log, and ADD COLUMNS gives new columns the next ids. Without
column mapping, RENAME and DROP are refused with delta-spark's conditions. (Before, the
ALTER left the columns unmapped and the table's next INSERT failed: its log was
unreadable.)"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from headwater.errors import DeltaAnalysisError, SchemaMismatchError

MAP = (
    "ALTER TABLE {t} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name', "
    "'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')"
)


def _latest(table_path: str, action: str) -> dict:
    found = {}
    for commit in sorted(Path(table_path, "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            found = json.loads(line).get(action, found)
    return found


def _made(spark, table_path: str) -> str:
    target = f"delta.`{table_path}`"
    spark.sql(f"CREATE TABLE {target} (id BIGINT, part INT, name STRING) USING delta")
    spark.sql(f"INSERT INTO {target} VALUES (1, 0, 'a'), (2, 1, 'b')")
    return target


def _rows(spark, target: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {target}").collect())


def test_turning_column_mapping_on_maps_the_columns_to_their_own_names(spark, table_path):
    target = _made(spark, table_path)
    spark.sql(MAP.format(t=target))
    metadata = _latest(table_path, "metaData")
    fields = json.loads(metadata["schemaString"])["fields"]
    assert [
        (f["metadata"]["delta.columnMapping.id"], f["metadata"]["delta.columnMapping.physicalName"])
        for f in fields
    ] == [(1, "id"), (2, "part"), (3, "name")]
    assert metadata["configuration"] == {  # the versions asked for raise the protocol instead
        "delta.columnMapping.mode": "name",
        "delta.columnMapping.maxColumnId": "3",
    }
    assert _latest(table_path, "protocol") == {"minReaderVersion": 2, "minWriterVersion": 5}

    spark.sql(f"INSERT INTO {target} VALUES (3, 2, 'c')")  # failed before: unmapped columns
    assert _rows(spark, target) == [(1, 0, "a"), (2, 1, "b"), (3, 2, "c")]


def test_rename_drop_and_add_columns_change_only_the_log(spark, table_path):
    target = _made(spark, table_path)
    spark.sql(MAP.format(t=target))
    before = set(Path(table_path).glob("*.parquet"))
    spark.sql(f"ALTER TABLE {target} RENAME COLUMN name TO label")
    spark.sql(f"ALTER TABLE {target} DROP COLUMN part")
    spark.sql(f"ALTER TABLE {target} ADD COLUMNS (extra INT)")
    assert set(Path(table_path).glob("*.parquet")) == before  # no file rewritten
    spark.sql(f"INSERT INTO {target} VALUES (3, 'c', 7)")
    assert _rows(spark, target) == [(1, "a", None), (2, "b", None), (3, "c", 7)]

    fields = json.loads(_latest(table_path, "metaData")["schemaString"])["fields"]
    physical = {f["name"]: f["metadata"]["delta.columnMapping.physicalName"] for f in fields}
    assert physical["label"] == "name" and physical["extra"].startswith("col-")
    assert fields[-1]["metadata"]["delta.columnMapping.id"] == 4
    (new,) = set(Path(table_path).glob("*.parquet")) - before
    assert pq.read_schema(new).names == ["id", "name", physical["extra"]]
    history = spark.sql(f"DESCRIBE HISTORY {target}").orderBy("version").collect()
    assert [(h.operation, h.operationParameters) for h in history[3:6]] == [
        ("RENAME COLUMN", {"oldColumnPath": "name", "newColumnPath": "label"}),
        ("DROP COLUMNS", {"columns": '["part"]'}),
        ("ADD COLUMNS", history[5].operationParameters),
    ]


def test_without_column_mapping_rename_and_drop_are_refused_with_delta_sparks_conditions(
    spark, table_path
):
    target = _made(spark, table_path)
    for statement, condition in (
        (f"ALTER TABLE {target} RENAME COLUMN name TO label", "DELTA_UNSUPPORTED_RENAME_COLUMN"),
        (f"ALTER TABLE {target} DROP COLUMN part", "DELTA_UNSUPPORTED_DROP_COLUMN"),
    ):
        with pytest.raises(Exception, match=rf"\[{condition}\].*columnMapping") as refused:
            spark.sql(statement)
        assert isinstance(refused.value.__cause__, DeltaAnalysisError)
    assert len(list(Path(table_path, "_delta_log").glob("*.json"))) == 2  # nothing committed


def test_a_partition_column_is_not_dropped_and_names_stay_unique(spark, table_path):
    target = f"delta.`{table_path}`"
    spark.sql(
        f"CREATE TABLE {target} (id BIGINT, part INT, name STRING) USING delta "
        "PARTITIONED BY (part) TBLPROPERTIES ('delta.columnMapping.mode' = 'name')"
    )
    with pytest.raises(Exception, match="DELTA_UNSUPPORTED_DROP_PARTITION_COLUMN") as dropped:
        spark.sql(f"ALTER TABLE {target} DROP COLUMN part")
    assert isinstance(dropped.value.__cause__, SchemaMismatchError)
    with pytest.raises(Exception, match="DELTA_DUPLICATE_COLUMNS_FOUND"):
        spark.sql(f"ALTER TABLE {target} RENAME COLUMN name TO ID")
    spark.sql(f"ALTER TABLE {target} RENAME COLUMN part TO bucket")
    spark.sql(f"INSERT INTO {target} VALUES (1, 5, 'a')")
    assert _latest(table_path, "metaData")["partitionColumns"] == ["bucket"]
    assert spark.sql(f"SELECT * FROM {target} WHERE bucket = 5").collect()[0].id == 1
