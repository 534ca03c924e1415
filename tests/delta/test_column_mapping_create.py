"""Creating a column-mapped table: ``CREATE TABLE ... TBLPROPERTIES
('delta.columnMapping.mode' = 'name' | 'id')`` gives every column, nested ones too, an id
and a physical name, as delta-spark does, so the table is readable and its files hold the
physical names. (Without them the log named the mode over unmapped columns: the table
could not be read back, by headwater or anyone.)"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest


@pytest.mark.parametrize("mode", ["name", "id"])
def test_create_table_with_column_mapping_maps_every_column(spark, table_path, mode):
    target = f"delta.`{table_path}`"
    spark.sql(
        f"CREATE TABLE {target} (id BIGINT, person STRUCT<name: STRING, tags: ARRAY<STRING>>)"
        f" USING DELTA TBLPROPERTIES ('delta.columnMapping.mode' = '{mode}')"
    )
    spark.sql(f"INSERT INTO {target} SELECT 1, named_struct('name', 'a', 'tags', array('x'))")

    rows = spark.read.format("delta").load(table_path).collect()
    assert [(r.id, r.person.name, r.person.tags) for r in rows] == [(1, "a", ["x"])]

    log = Path(table_path, "_delta_log", "00000000000000000000.json").read_text().splitlines()
    metadata = next(json.loads(line)["metaData"] for line in log if "metaData" in line)
    fields = json.loads(metadata["schemaString"])["fields"]
    nested = fields[1]["type"]["fields"]
    ids = [f["metadata"]["delta.columnMapping.id"] for f in fields + nested]
    assert ids == [1, 2, 3, 4]  # depth first: id, person, person.name, person.tags
    assert metadata["configuration"]["delta.columnMapping.maxColumnId"] == "4"
    physical = [f["metadata"]["delta.columnMapping.physicalName"] for f in fields]
    (data_file,) = Path(table_path).glob("*.parquet")
    assert pq.read_schema(data_file).names == physical
    assert all(name.startswith("col-") for name in physical)
