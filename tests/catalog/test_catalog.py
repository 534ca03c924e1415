"""Tables by name: every entry point users type, persistence across sessions, create/list/drop."""

from __future__ import annotations

import os
import textwrap

import pytest
from deltalake import DeltaTable

from headwater.catalog import Catalog, parse
from headwater.errors import OptionError, TableAlreadyExistsError, TableNotFoundError
from tests.conftest import run_python


def test_names_parse_like_spark():
    assert str(parse("T")) == "default.t"
    assert str(parse("Bronze.Orders")) == "bronze.orders"
    assert str(parse("spark_catalog.db.t")) == "db.t"
    assert str(parse("`my db`.`odd.name`")) == "my db.odd.name"
    with pytest.raises(OptionError, match="table name is required"):
        parse("")
    with pytest.raises(OptionError, match="Invalid table name"):
        parse("a.b.c.d")


def test_save_as_table_then_every_read_entry_point(spark):
    spark.range(5).selectExpr("id", "'x' as s").write.saveAsTable("cat1.people")
    assert spark.table("cat1.people").count() == 5
    assert spark.read.table("CAT1.People").count() == 5
    assert spark.sql("SELECT count(*) AS n FROM cat1.people").first().n == 5
    assert spark.sql("SELECT s, count(*) AS n FROM cat1.people GROUP BY s").collect()[0].n == 5
    with pytest.raises(TableAlreadyExistsError, match="TABLE_OR_VIEW_ALREADY_EXISTS"):
        spark.range(1).selectExpr("id", "'y' as s").write.saveAsTable("cat1.people")
    spark.range(5, 7).selectExpr("id", "'y' as s").write.mode("append").saveAsTable("cat1.people")
    spark.range(100, 101).selectExpr("id", "'y' as s").write.mode("ignore").saveAsTable(
        "cat1.people"
    )
    assert spark.table("cat1.people").count() == 7
    # Schema evolution is visible to SQL too.
    spark.range(7, 8).selectExpr("id", "'z' as s", "1 as extra").write.mode("append").option(
        "mergeSchema", "true"
    ).saveAsTable("cat1.people")
    assert spark.sql("SELECT sum(extra) AS e FROM cat1.people").first().e == 1
    spark.range(2).selectExpr("id", "'o' as s", "2 as extra").write.mode("overwrite").saveAsTable(
        "cat1.people"
    )
    assert spark.table("cat1.people").count() == 2


def test_seed_notes_stream_table_to_table_runs_as_written(spark, tmp_path):
    spark.range(10).selectExpr("id", "'a' as s").write.saveAsTable("Table_1")
    streamDF = spark.readStream.table("Table_1")
    query = (
        streamDF.writeStream.trigger(availableNow=True)
        .outputMode("append")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .table("Table_2")
    )
    query.awaitTermination()
    assert spark.table("Table_2").count() == 10
    spark.range(10, 13).selectExpr("id", "'b' as s").write.mode("append").saveAsTable("Table_1")
    (
        spark.readStream.table("Table_1")
        .writeStream.trigger(availableNow=True)
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .toTable("Table_2")
        .awaitTermination()
    )
    assert sorted(r.id for r in spark.sql("SELECT id FROM table_2").collect()) == list(range(13))


def test_table_at_explicit_location_list_and_drop(spark, tmp_path):
    catalog = Catalog.of(spark)
    location = str(tmp_path / "external_t")
    spark.range(3).write.format("delta").save(location)
    catalog.create_table("cat2.ext", location=location)
    assert spark.table("cat2.ext").count() == 3
    spark.range(4).write.option("path", str(tmp_path / "ext2")).saveAsTable("cat2.ext2")
    assert DeltaTable(str(tmp_path / "ext2")).version() == 0
    names = {str(e.name) for e in catalog.list_tables("cat2")}
    assert names == {"cat2.ext", "cat2.ext2"}
    listed = spark.catalog.listTables("cat2")  # temporary views of other tests are listed too
    assert {t.name for t in listed if not t.isTemporary} == {"ext", "ext2"}
    catalog.drop_table("cat2.ext")  # external: data kept
    assert os.path.exists(os.path.join(location, "_delta_log"))
    with pytest.raises(TableNotFoundError):
        spark.read.table("cat2.ext") if catalog.get("cat2.ext") else catalog.require("cat2.ext")
    spark.range(2).write.saveAsTable("cat2.managed")
    managed = catalog.require("cat2.managed").location
    catalog.drop_table("cat2.managed")  # managed: data removed
    assert not os.path.exists(managed)
    catalog.drop_table("cat2.ext2", purge=True)
    assert not os.path.exists(str(tmp_path / "ext2"))
    catalog.drop_table("cat2.nothing", if_exists=True)


def test_create_table_with_schema_partitioning_and_properties(spark):
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    catalog = Catalog.of(spark)
    schema = StructType([StructField("id", LongType()), StructField("day", StringType())])
    entry = catalog.create_table(
        "cat3.events", schema=schema, partition_by=["day"], properties={"delta.appendOnly": "false"}
    )
    dt = DeltaTable(entry.location)
    assert dt.metadata().partition_columns == ["day"]
    assert dt.metadata().configuration["delta.appendOnly"] == "false"
    assert spark.table("cat3.events").count() == 0
    assert (
        catalog.create_table("cat3.events", schema=schema, if_not_exists=True).location
        == entry.location
    )
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table("cat3.events", schema=schema)


@pytest.mark.slow
def test_tables_survive_a_new_session_in_another_process(spark, warehouse):
    spark.range(6).selectExpr("id", "id * 2 as twice").write.saveAsTable("persist.numbers")
    code = textwrap.dedent(
        f"""
        import headwater
        spark = headwater.session(master="local[1]", warehouse={str(warehouse)!r})
        print("COUNT", spark.sql("SELECT count(*) FROM persist.numbers").first()[0])
        print("SUM", spark.table("persist.numbers").groupBy().sum("twice").first()[0])
        spark.range(6, 8).selectExpr("id", "id * 2 as twice").write.mode("append").saveAsTable("persist.numbers")
        """
    )
    out = run_python(code).stdout
    assert "COUNT 6" in out and "SUM 30" in out
    assert spark.table("persist.numbers").count() == 8  # written by the other process


def test_reading_an_unknown_name_fails_clearly(spark):
    with pytest.raises(Exception, match="(?i)not found|cannot be found"):
        spark.table("nope.nothing").count()
