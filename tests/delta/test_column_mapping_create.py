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


def _mapped_source(spark, path):
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id INT, name STRING) USING DELTA "
        "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')"
    )
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a'), (2, NULL)")
    return spark.read.format("delta").load(path)


def _logged_fields(path):
    log = Path(path, "_delta_log").glob("*.json")
    metadata = [
        json.loads(line)["metaData"]
        for f in sorted(log)
        for line in f.read_text().splitlines()
        if "metaData" in line
    ][-1]
    return json.loads(metadata["schemaString"])["fields"]


def test_writes_from_a_mapped_table_drop_its_mapping(spark, tmp_path):
    """A DataFrame read from a column-mapped table carries the source's ids and physical
    names in its fields' metadata. A table written from it (path write, saveAsTable, CTAS,
    INSERT into an unmapped table, a stream) must not take them over without the mapping
    mode: its readers would look every column up under the source's physical names and
    read NULLs. delta-spark drops them on write, as here."""
    source = _mapped_source(spark, str(tmp_path / "src"))
    expected = [(1, "a"), (2, None)]
    out = str(tmp_path / "out")
    source.write.format("delta").save(out)
    spark.sql("DROP TABLE IF EXISTS cm_saved")
    spark.sql("DROP TABLE IF EXISTS cm_ctas")
    spark.sql("DROP TABLE IF EXISTS cm_streamed")
    try:
        source.write.format("delta").saveAsTable("cm_saved")
        spark.sql(f"CREATE TABLE cm_ctas USING DELTA AS SELECT * FROM delta.`{tmp_path / 'src'}`")
        plain = str(tmp_path / "plain")
        spark.sql(f"CREATE TABLE delta.`{plain}` (id INT, name STRING) USING DELTA")
        spark.sql(f"INSERT INTO delta.`{plain}` SELECT * FROM delta.`{tmp_path / 'src'}`")
        query = (
            spark.readStream.format("delta")
            .load(str(tmp_path / "src"))
            .writeStream.option("checkpointLocation", str(tmp_path / "ckpt"))
            .trigger(availableNow=True)
            .toTable("cm_streamed")
        )
        query.awaitTermination()
        for name in (f"delta.`{out}`", "cm_saved", "cm_ctas", f"delta.`{plain}`", "cm_streamed"):
            rows = spark.table(name).orderBy("id").collect()
            assert [tuple(r) for r in rows] == expected, name
        for path in (out, plain):
            assert all(not f["metadata"] for f in _logged_fields(path)), path
    finally:
        for name in ("cm_saved", "cm_ctas", "cm_streamed"):
            spark.sql(f"DROP TABLE IF EXISTS {name}")
