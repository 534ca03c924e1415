"""Parity of batch reads and writes: the ``delta`` writer's modes and options, tables by
name, and reads back in time, on both engines (tests/engines/parity/matrix.py says how
they are compared)."""

from __future__ import annotations

import pytest

from tests.engines.parity import matrix
from tests.engines.parity.matrix import collected, location, ran, refused, row, table_rows

SAMPLE = (
    "SELECT id, CAST(id % 3 AS INT) AS part, concat('n', id) AS name, id * 1.5 AS amount "
    "FROM range({}, {})"
)


def sample(spark, start: int, stop: int):
    return spark.sql(SAMPLE.format(start, stop))


def saved(spark, root: str, start: int = 0, stop: int = 10, *partitions: str) -> str:
    path = f"{root}/t"
    sample(spark, start, stop).write.format("delta").partitionBy(*partitions).save(path)
    return path


# -- the writer's modes -------------------------------------------------------------------


def save(spark, root):
    return ran(t=saved(spark, root))


def save_onto_a_table_fails(spark, root):
    path = saved(spark, root, 0, 5)
    return ran(refused(path, lambda: sample(spark, 5, 10).write.format("delta").save(path)))


def append(spark, root):
    path = saved(spark, root, 0, 5)
    sample(spark, 5, 10).write.format("delta").mode("append").save(path)
    return ran(t=path)


def overwrite(spark, root):
    path = saved(spark, root, 0, 5)
    sample(spark, 20, 23).write.format("delta").mode("overwrite").save(path)
    return ran(t=path)


def ignore(spark, root):
    path = saved(spark, root, 0, 5)
    sample(spark, 20, 23).write.format("delta").mode("ignore").save(path)
    return ran(t=path)


def partition_by(spark, root):
    path = saved(spark, root, 0, 6, "part")
    sample(spark, 6, 9).write.format("delta").mode("append").partitionBy("part").save(path)
    return ran(t=path)


def partition_by_other_columns_fails(spark, root):
    path = saved(spark, root, 0, 6, "part")
    writer = sample(spark, 6, 9).write.format("delta").mode("append").partitionBy("name")
    return ran(refused(path, lambda: writer.save(path)))


def replace_where_partition(spark, root):
    path = saved(spark, root, 0, 9, "part")
    new = sample(spark, 100, 106).where("part = 1")
    new.write.format("delta").mode("overwrite").option("replaceWhere", "part = 1").save(path)
    return ran(t=path)


def replace_where_data_column(spark, root):
    path = saved(spark, root, 0, 10)
    new = sample(spark, 5, 8).selectExpr("id", "part", "'new' AS name", "amount")
    new.write.format("delta").mode("overwrite").option("replaceWhere", "id >= 5").save(path)
    return ran(t=path)


def replace_where_rows_outside_fail(spark, root):
    path = saved(spark, root, 0, 9, "part")
    writer = sample(spark, 100, 106).write.format("delta").mode("overwrite")
    return ran(refused(path, lambda: writer.option("replaceWhere", "part = 1").save(path)))


def merge_schema(spark, root):
    path = saved(spark, root, 0, 5)
    wider = sample(spark, 5, 8).selectExpr("*", "id * 2 AS extra")
    wider.write.format("delta").mode("append").option("mergeSchema", "true").save(path)
    return ran(t=path)


def new_column_without_merge_schema_fails(spark, root):
    path = saved(spark, root, 0, 5)
    wider = sample(spark, 5, 8).selectExpr("*", "id * 2 AS extra")
    return ran(refused(path, lambda: wider.write.format("delta").mode("append").save(path)))


def overwrite_schema(spark, root):
    path = saved(spark, root, 0, 5, "part")
    other = spark.sql("SELECT CAST(id AS STRING) AS id, id % 2 = 0 AS even FROM range(3)")
    writer = other.write.format("delta").mode("overwrite").option("overwriteSchema", "true")
    writer.save(path)
    return ran(t=path)


def overwrite_with_another_schema_fails(spark, root):
    path = saved(spark, root, 0, 5)
    other = spark.sql("SELECT CAST(id AS STRING) AS id, id % 2 = 0 AS even FROM range(3)")
    return ran(refused(path, lambda: other.write.format("delta").mode("overwrite").save(path)))


# -- tables by name ---------------------------------------------------------------------------


def save_as_table(spark, root):
    name = "batch_save_as_table"
    sample(spark, 0, 4).write.format("delta").partitionBy("part").saveAsTable(name)
    sample(spark, 4, 6).write.format("delta").mode("append").saveAsTable(name)
    return ran(table_rows(spark, name), t=location(spark, name))


def save_as_table_overwrite(spark, root):
    name = "batch_save_as_table_overwrite"
    sample(spark, 0, 4).write.format("delta").saveAsTable(name)
    sample(spark, 10, 12).write.format("delta").mode("overwrite").saveAsTable(name)
    return ran(table_rows(spark, name), t=location(spark, name))


def save_as_table_at_a_location(spark, root):
    name, path = "batch_save_as_table_at", f"{root}/external"
    sample(spark, 0, 4).write.format("delta").option("path", path).saveAsTable(name)
    return ran((table_rows(spark, name), location(spark, name)), t=path)


def save_as_table_without_format(spark, root):
    name = "batch_save_as_table_default"
    sample(spark, 0, 4).write.saveAsTable(name)
    return ran(table_rows(spark, name), t=location(spark, name))


def insert_into(spark, root):
    name = "batch_insert_into"
    sample(spark, 0, 4).write.format("delta").saveAsTable(name)
    sample(spark, 4, 6).write.insertInto(name)
    sample(spark, 10, 12).write.insertInto(name, overwrite=True)
    return ran(table_rows(spark, name), t=location(spark, name))


def write_to(spark, root):
    name = "batch_write_to"
    sample(spark, 0, 4).writeTo(name).using("delta").partitionedBy("part").create()
    sample(spark, 4, 6).writeTo(name).append()
    return ran(table_rows(spark, name), t=location(spark, name))


def spark_table(spark, root):
    name = "batch_spark_table"
    sample(spark, 0, 6).write.format("delta").saveAsTable(name)
    by_name = collected(spark.table(name).where("part = 1").select("id", "name"))
    read = collected(spark.read.table(name).groupBy("part").count())
    return ran((by_name, read, spark.catalog.tableExists(name)), t=location(spark, name))


# -- reads back in time -----------------------------------------------------------------------


def three_versions(spark, root: str) -> str:
    path = saved(spark, root, 0, 4)
    sample(spark, 4, 6).write.format("delta").mode("append").save(path)
    sample(spark, 10, 12).write.format("delta").mode("overwrite").save(path)
    return path


def version_as_of(spark, root):
    path = three_versions(spark, root)
    reader = spark.read.format("delta")
    found = [collected(reader.option("versionAsOf", v).load(path)) for v in range(3)]
    return ran(found, t=path)


def timestamp_as_of(spark, root):
    from pyspark.sql import functions as F

    path = three_versions(spark, root)
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`")
    stamps = history.select("version", F.date_format("timestamp", "yyyy-MM-dd HH:mm:ss.SSS"))
    reader = spark.read.format("delta")
    found = {
        version: collected(reader.option("timestampAsOf", stamp).load(path))
        for version, stamp in stamps.collect()
    }
    return ran(found, t=path)


def version_after_the_latest_fails(spark, root):
    path = three_versions(spark, root)
    reader = spark.read.format("delta").option("versionAsOf", 7)
    return ran(refused(path, lambda: reader.load(path).collect()))


def version_as_of_by_name(spark, root):
    name = "batch_version_as_of"
    sample(spark, 0, 3).write.format("delta").saveAsTable(name)
    sample(spark, 3, 5).write.format("delta").mode("append").saveAsTable(name)
    found = collected(spark.read.option("versionAsOf", 0).table(name))
    return ran(found, t=location(spark, name))


OPERATIONS = [
    row(save),
    row(save_onto_a_table_fails),
    row(append),
    row(overwrite),
    row(ignore),
    row(partition_by),
    row(partition_by_other_columns_fails),
    row(replace_where_partition),
    row(replace_where_data_column),
    row(replace_where_rows_outside_fail),
    row(merge_schema),
    row(new_column_without_merge_schema_fails),
    row(overwrite_schema),
    row(overwrite_with_another_schema_fails),
    row(save_as_table),
    row(save_as_table_overwrite),
    row(save_as_table_at_a_location),
    row(save_as_table_without_format),
    row(insert_into),
    row(write_to),
    row(spark_table),
    row(version_as_of),
    row(timestamp_as_of),
    row(version_after_the_latest_fails),
    row(version_as_of_by_name),
]


@pytest.mark.parametrize("op", OPERATIONS)
def test_batch(parity_runs, op):
    matrix.assert_parity(parity_runs[__file__], op)
