"""The PySpark adapter: one table of wrapped methods, removable, and named errors where a
PySpark entry point cannot work on a Delta table."""

from __future__ import annotations

import os

import pytest
from pyspark.errors import AnalysisException

import headwater
from headwater import adapter
from headwater.adapter import PATCHES
from headwater.errors import OptionError, UnsupportedOperationError


def test_every_wrapped_pyspark_method_keeps_the_signature_it_was_written_for():
    drift = [d for d in (p.signature_drift() for p in PATCHES) if d]
    assert drift == [], "PySpark moved methods headwater wraps:\n" + "\n".join(drift)


def test_each_pyspark_method_is_wrapped_once():
    # A second patch of one method is skipped at install (the method is already
    # headwater's): its wrapper would silently never run.
    keys = [p.key for p in PATCHES]
    assert sorted(k for k in set(keys) if keys.count(k) > 1) == []


def test_uninstall_puts_pysparks_methods_back_and_install_routes_delta_again(spark, tmp_path):
    from pyspark.sql.readwriter import DataFrameWriter

    path = str(tmp_path / "t")
    assert adapter.installed()
    headwater.uninstall()
    try:
        assert not any(p.installed() for p in PATCHES)
        assert not hasattr(DataFrameWriter.save, "__headwater_patch__")
        with pytest.raises(AnalysisException):  # Spark alone has no delta writer
            spark.range(3).write.format("delta").save(path)
    finally:
        headwater.install(spark)
    assert adapter.installed()
    spark.range(3).write.format("delta").save(path)
    assert spark.read.format("delta").load(path).count() == 3


@pytest.mark.parametrize(
    ("setup", "named"),
    [
        (lambda w: w.bucketBy(4, "id"), "bucketBy"),
        (lambda w: w.bucketBy(4, "id").sortBy("id"), "bucketBy"),
    ],
)
def test_bucket_and_cluster_settings_on_a_delta_write_are_refused_by_name(
    spark, tmp_path, setup, named
):
    writer = setup(spark.range(3).write.format("delta"))
    with pytest.raises(UnsupportedOperationError, match=named):
        writer.save(str(tmp_path / "t"))
    with pytest.raises(UnsupportedOperationError, match=named):
        setup(spark.range(3).write).saveAsTable("adapter.bucketed")
    assert not os.path.exists(tmp_path / "t")


def test_query_name_and_the_session_checkpoint_location_give_the_stream_its_checkpoint(
    spark, tmp_path
):
    src, dst, base = str(tmp_path / "src"), str(tmp_path / "dst"), str(tmp_path / "chk")
    spark.range(5).write.format("delta").save(src)
    spark.conf.set("spark.sql.streaming.checkpointLocation", base)
    try:
        for _ in range(2):  # the second run finds the first's checkpoint: nothing again
            (
                spark.readStream.format("delta")
                .load(src)
                .writeStream.format("delta")
                .queryName("orders_copy")
                .trigger(availableNow=True)
                .start(dst)
                .awaitTermination()
            )
    finally:
        spark.conf.unset("spark.sql.streaming.checkpointLocation")
    assert os.path.isdir(os.path.join(base, "orders_copy", "offsets"))
    assert spark.read.format("delta").load(dst).count() == 5


def test_insert_into_a_delta_table_matches_columns_by_position(spark):
    spark.sql("CREATE TABLE adapter.ins (id BIGINT, name STRING) USING delta")
    spark.createDataFrame([("a", 1)], "x string, y long").select("y", "x").write.insertInto(
        "adapter.ins"
    )
    spark.createDataFrame([(2, "b")], "n long, s string").write.insertInto("adapter.ins")
    assert sorted(tuple(r) for r in spark.table("adapter.ins").collect()) == [(1, "a"), (2, "b")]
    spark.createDataFrame([(3, "c")], "n long, s string").write.insertInto(
        "adapter.ins", overwrite=True
    )
    assert [tuple(r) for r in spark.table("adapter.ins").collect()] == [(3, "c")]
    with pytest.raises(headwater.errors.SchemaMismatchError, match="by position"):
        spark.range(1).write.insertInto("adapter.ins")


def test_write_to_creates_appends_overwrites_and_replaces_delta_tables(spark):
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id long, day string")
    df.writeTo("adapter.v2").partitionedBy("day").tableProperty("team", "x").create()
    with pytest.raises(headwater.errors.TableAlreadyExistsError):
        df.writeTo("adapter.v2").create()
    spark.createDataFrame([(3, "a")], "id long, day string").writeTo("adapter.v2").append()
    rows = lambda: sorted(tuple(r) for r in spark.table("adapter.v2").collect())  # noqa: E731
    assert rows() == [(1, "a"), (2, "b"), (3, "a")]
    spark.createDataFrame([(4, "a")], "id long, day string").writeTo(
        "adapter.v2"
    ).overwritePartitions()
    assert rows() == [(2, "b"), (4, "a")]
    spark.createDataFrame([(5, "b")], "id long, day string").writeTo("adapter.v2").overwrite(
        "day = 'b'"
    )
    assert rows() == [(4, "a"), (5, "b")]
    detail = spark.sql("DESCRIBE DETAIL adapter.v2").first()
    assert detail.partitionColumns == ["day"] and detail.properties["team"] == "x"
    spark.createDataFrame([(9,)], "n long").writeTo("adapter.v2").createOrReplace()
    assert [tuple(r) for r in spark.table("adapter.v2").collect()] == [(9,)]


def test_spark_connect_sessions_are_refused_by_name():
    # What SparkSession.builder.remote("sc://...") builds: its class lives in
    # pyspark.sql.connect (which needs grpcio, not installed here, to import).
    connect = type("SparkSession", (), {"__module__": "pyspark.sql.connect.session"})
    with pytest.raises(UnsupportedOperationError, match="Spark Connect"):
        headwater.install(connect())


def test_a_misspelt_cloud_files_option_is_an_option_error_spelled_as_typed(spark, tmp_path):
    reader = (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.schemaLocation", str(tmp_path / "schema"))
        .option("cloudFiles.maxFilesPerTriger", 1)
    )
    with pytest.raises(OptionError, match=r"'cloudFiles\.maxFilesPerTriger'") as info:
        reader.load(str(tmp_path))
    assert "PYTHON_DATA_SOURCE_ERROR" not in str(info.value)
    assert info.value.error_class == "INVALID_OPTION"


def test_an_error_raised_inside_a_python_source_keeps_its_class_and_message(spark, tmp_path):
    from headwater.autoloader.schema import SchemaInferenceError

    (tmp_path / "empty").mkdir()
    reader = (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.schemaLocation", str(tmp_path / "schema"))
    )
    with pytest.raises(SchemaInferenceError, match="No files in") as info:
        reader.load(str(tmp_path / "empty"))
    assert "Traceback" not in str(info.value)


def test_select_expr_and_filter_take_json_paths_on_strings_variant_paths_stay_spark_s(spark):
    # The known system's docs: selectExpr("*", "tags:page.name", "tags:page.id::int") on the
    # JSON string column Auto Loader infers for nested JSON.
    from pyspark.sql.types import IntegerType, StringType, VariantType

    doc = '{"page": {"name": "home", "id": 7}, "eventType": "click"}'
    df = spark.createDataFrame([(doc,), (None,)], "tags string").selectExpr(
        "tags", "parse_json(tags) AS v"
    )
    got = df.selectExpr("tags:page.name", "tags:page.id::int", "v:eventType AS e")
    assert [(f.name, f.dataType) for f in got.schema.fields] == [
        ("name", StringType()),
        ("id", IntegerType()),
        ("e", VariantType()),  # ':' on a VARIANT column is Spark's own
    ]
    assert [(r["name"], r["id"]) for r in got.collect()] == [("home", 7), (None, None)]
    assert df.where("tags:eventType = 'click'").count() == 1
    assert df.filter("tags:page.id::int > 7").count() == 0
    with pytest.raises(AnalysisException, match="UNRESOLVED_COLUMN"):
        df.selectExpr("nope:a")
