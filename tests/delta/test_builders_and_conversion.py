"""delta-spark's replace / createOrReplace builders, NOT NULL columns, CONVERT TO DELTA and
protocol features, written as delta-spark users write them (only the import changed)."""

from __future__ import annotations

import json
import os

import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable as RsTable
from pyspark.errors import AnalysisException
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from headwater.delta.tables import DeltaTable
from headwater.errors import ConstraintViolationError, UnsupportedFeatureError


def _commit(path, version):
    with open(os.path.join(path, "_delta_log", f"{version:020d}.json")) as f:
        return [json.loads(line) for line in f if line.strip()]


def test_replace_keeps_history_and_gives_the_table_its_new_definition(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(5).selectExpr("id", "'x' as s").write.format("delta").save(path)
    table = (
        DeltaTable.replace(spark)
        .location(path)
        .addColumn("k", "INT")
        .addColumn("v", StringType(), comment="the value")
        .partitionedBy("k")
        .property("team", "data")
        .comment("replaced")
        .execute()
    )
    assert table.toDF().count() == 0
    assert table.toDF().schema.fieldNames() == ["k", "v"]
    rs = RsTable(path)
    assert rs.version() == 1
    assert rs.metadata().partition_columns == ["k"]
    assert rs.metadata().configuration == {"team": "data"}
    assert rs.metadata().description == "replaced"
    first = next(a["metaData"] for a in _commit(path, 0) if "metaData" in a)
    assert first["id"] == rs.metadata().id  # the same table
    last = table.history(1).first()
    assert last.operation == "REPLACE TABLE"
    assert json.loads(last.operationParameters["partitionBy"]) == ["k"]
    old = spark.read.format("delta").option("versionAsOf", 0).load(path)
    assert old.count() == 5  # time travel reaches before the replace
    field = table.toDF().schema["v"]
    assert field.metadata == {"comment": "the value"}


def test_replace_of_a_missing_table_fails_and_create_or_replace_creates_it(spark, tmp_path):
    path = str(tmp_path / "t")
    with pytest.raises(AnalysisException, match="DELTA_CANNOT_REPLACE_MISSING_TABLE"):
        DeltaTable.replace(spark).location(path).addColumn("a", "INT").execute()
    assert not os.path.exists(os.path.join(path, "_delta_log", "00000000000000000000.json"))
    DeltaTable.createOrReplace(spark).location(path).addColumn("a", "INT").execute()
    DeltaTable.createOrReplace(spark).location(path).addColumn("b", "BIGINT").execute()
    ops = [r.operation for r in DeltaTable.forPath(spark, path).history().collect()]
    assert ops == ["CREATE OR REPLACE TABLE", "CREATE OR REPLACE TABLE"]
    assert spark.read.format("delta").load(path).schema.fieldNames() == ["b"]


def test_create_or_replace_by_name_updates_the_catalog(spark):
    DeltaTable.createOrReplace(spark).tableName("parity_cor").addColumn("a", "INT").execute()
    spark.sql("INSERT INTO parity_cor VALUES (1)")
    DeltaTable.createOrReplace(spark).tableName("parity_cor").addColumn("a", "INT").addColumn(
        "b", "STRING"
    ).execute()
    assert spark.table("parity_cor").columns == ["a", "b"]
    assert spark.table("parity_cor").count() == 0
    with pytest.raises(AnalysisException, match="cannot be replaced"):
        DeltaTable.replace(spark).tableName("parity_missing").addColumn("a", "INT").execute()


def test_not_null_columns_from_the_builder_are_enforced_on_every_write(spark, tmp_path):
    path = str(tmp_path / "t")
    DeltaTable.create(spark).location(path).addColumn("id", "BIGINT", nullable=False).addColumn(
        "v", "STRING"
    ).execute()
    schema = json.loads(RsTable(path).schema().to_json())
    assert [(f["name"], f["nullable"]) for f in schema["fields"]] == [("id", False), ("v", True)]
    spark.createDataFrame([(1, None)], "id bigint, v string").write.format("delta").mode(
        "append"
    ).save(path)
    with pytest.raises(
        ConstraintViolationError, match="NOT NULL constraint violated for column: id"
    ):
        spark.createDataFrame([(None, "x")], "id bigint, v string").write.format("delta").mode(
            "append"
        ).save(path)
    table = DeltaTable.forPath(spark, path)
    with pytest.raises(ConstraintViolationError, match="NOT NULL"):
        table.update(set={"id": "null"})
    assert [tuple(r) for r in table.toDF().collect()] == [(1, None)]
    assert RsTable(path).version() == 1  # the refused writes committed nothing


def test_sql_not_null_column_is_enforced(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT NOT NULL, v STRING) USING DELTA")
    with pytest.raises(Exception, match="NOT NULL"):
        spark.sql(f"INSERT INTO delta.`{path}` VALUES (null, 'a')")
    assert spark.read.format("delta").load(path).count() == 0


def _parquet_dir(spark, tmp_path, partitioned):
    path = str(tmp_path / "pq")
    df = spark.range(20).selectExpr("id", "cast(id % 2 as int) as part", "concat('v', id) as v")
    writer = df.repartition(3).write
    if partitioned:
        writer = writer.partitionBy("part")
    writer.parquet(path)
    return path, df


def test_convert_to_delta_logs_the_existing_files_with_stats_and_rewrites_nothing(spark, tmp_path):
    path, df = _parquet_dir(spark, tmp_path, partitioned=False)
    files = sorted(f for f in os.listdir(path) if f.endswith(".parquet"))
    mtimes = {f: os.stat(os.path.join(path, f)).st_mtime_ns for f in files}
    table = DeltaTable.convertToDelta(spark, f"parquet.`{path}`")
    assert sorted(tuple(r) for r in table.toDF().collect()) == sorted(
        tuple(r) for r in df.collect()
    )
    rs = RsTable(path)
    assert sorted(os.path.basename(u) for u in rs.file_uris()) == files
    assert {f: os.stat(os.path.join(path, f)).st_mtime_ns for f in files} == mtimes
    adds = [a["add"] for a in _commit(path, 0) if "add" in a]
    stats = [json.loads(a["stats"]) for a in adds]
    assert sum(s["numRecords"] for s in stats) == 20
    assert all("id" in s["minValues"] and "id" in s["maxValues"] for s in stats)
    history = table.history().first()
    assert history.operation == "CONVERT"
    assert history.operationParameters["numFiles"] == str(len(files))
    # A skipping read uses the stats: a point filter reads the one file holding the id.
    assert table.toDF().where("id = 7").count() == 1
    # Converting again is a no-op.
    DeltaTable.convertToDelta(spark, f"parquet.`{path}`")
    assert RsTable(path).version() == 0


def test_convert_to_delta_sql_with_partitions_and_the_error_without_them(spark, tmp_path):
    path, df = _parquet_dir(spark, tmp_path, partitioned=True)
    with pytest.raises(Exception, match="partition"):
        spark.sql(f"CONVERT TO DELTA parquet.`{path}`")
    assert not os.path.exists(os.path.join(path, "_delta_log", "00000000000000000000.json"))
    spark.sql(f"CONVERT TO DELTA parquet.`{path}` PARTITIONED BY (part INT)")
    rs = RsTable(path)
    assert rs.metadata().partition_columns == ["part"]
    got = spark.read.format("delta").load(path)
    assert got.schema["part"].dataType == IntegerType()
    assert sorted(tuple(r) for r in got.select("id", "part", "v").collect()) == sorted(
        tuple(r) for r in df.collect()
    )
    assert got.where("part = 1").count() == 10


def test_convert_to_delta_refuses_an_empty_directory_and_a_catalog_name(spark, tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(AnalysisException, match="no data file"):
        DeltaTable.convertToDelta(spark, f"parquet.`{tmp_path / 'empty'}`")
    with pytest.raises(UnsupportedFeatureError, match="parquet.`/path`"):
        DeltaTable.convertToDelta(spark, "some_parquet_table")


def test_convert_no_statistics_keeps_only_row_counts(spark, tmp_path):
    path, _ = _parquet_dir(spark, tmp_path, partitioned=False)
    spark.sql(f"CONVERT TO DELTA parquet.`{path}` NO STATISTICS")
    stats = [json.loads(a["add"]["stats"]) for a in _commit(path, 0) if "add" in a]
    assert all(set(s) == {"numRecords"} for s in stats)
    rows = sum(
        pq.read_metadata(os.path.join(path, f)).num_rows
        for f in os.listdir(path)
        if f.endswith(".parquet")
    )
    assert sum(s["numRecords"] for s in stats) == rows == 20


def test_upgrade_protocol_add_and_drop_feature_support(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    table = DeltaTable.forPath(spark, path)
    table.upgradeTableProtocol(1, 3)
    p = RsTable(path).protocol()
    assert (p.min_reader_version, p.min_writer_version) == (1, 3)
    upgrade = table.history(1).first()  # as delta-spark logs it: the properties it sets
    assert (upgrade.operation, upgrade.operationParameters) == (
        "SET TBLPROPERTIES",
        {"properties": '{"delta.minReaderVersion":"1","delta.minWriterVersion":"3"}'},
    )
    table.upgradeTableProtocol(1, 2)  # lower than the table's: committed, nothing changes
    assert table.history(1).first().version == upgrade.version + 1
    assert table.detail().first().minWriterVersion == 3
    assert "delta.minWriterVersion" not in table.detail().first().properties
    with pytest.raises(ValueError, match="readerVersion"):
        table.upgradeTableProtocol("1", 3)
    table.addFeatureSupport("changeDataFeed")
    p = RsTable(path).protocol()
    assert p.min_writer_version == 7
    assert {"appendOnly", "invariants", "checkConstraints", "changeDataFeed"} <= set(
        p.writer_features
    )
    assert "changeDataFeed" in table.detail().first().tableFeatures
    table.dropFeatureSupport("changeDataFeed")
    p = RsTable(path).protocol()
    assert (p.min_reader_version, p.min_writer_version) == (1, 3)  # back to the legacy form
    assert table.history(1).first().operation == "DROP FEATURE"
    with pytest.raises(AnalysisException, match="DELTA_UNSUPPORTED_FEATURES_IN_CONFIG"):
        table.addFeatureSupport("noSuchFeature")
    with pytest.raises(UnsupportedFeatureError, match="rowTracking"):
        table.addFeatureSupport("rowTracking")
    assert sorted(r.id for r in table.toDF().collect()) == [0, 1, 2]


def test_drop_feature_in_use_is_refused_with_the_remedy(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(
        f"CREATE TABLE delta.`{path}` (a INT) USING DELTA "
        "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
    )
    table = DeltaTable.forPath(spark, path)
    with pytest.raises(AnalysisException, match="unset delta.enableChangeDataFeed"):
        table.dropFeatureSupport("changeDataFeed")


def test_builder_arguments_are_checked_with_delta_sparks_exception_types(spark, tmp_path):
    with pytest.raises(TypeError):
        DeltaTable.create(spark).tableName(5)
    with pytest.raises(TypeError):
        DeltaTable.create(spark).addColumn("a", 5)
    with pytest.raises(TypeError):
        DeltaTable.create(spark).addColumn("a", "INT", nullable="no")
    with pytest.raises(TypeError):
        DeltaTable.create(spark).addColumns("a INT")
    with pytest.raises(ValueError, match="tableName"):
        DeltaTable.create(spark).addColumn("a", "INT").execute()
    schema = StructType([StructField("a", IntegerType(), False)])
    table = DeltaTable.create(spark).location(str(tmp_path / "t")).addColumns(schema).execute()
    assert table.toDF().schema["a"].nullable is False


def test_feature_properties_list_features_in_the_first_commit(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(
        f"CREATE TABLE delta.`{path}` (a INT) USING DELTA "
        "TBLPROPERTIES ('delta.feature.deletionVectors' = 'supported')"
    )
    p = RsTable(path).protocol()
    assert (p.min_reader_version, p.min_writer_version) == (3, 7)
    assert "deletionVectors" in p.reader_features and "deletionVectors" in p.writer_features
    with pytest.raises(Exception, match="DELTA_UNSUPPORTED_FEATURES_IN_CONFIG"):
        spark.sql(
            f"CREATE TABLE delta.`{tmp_path / 'u'}` (a INT) USING DELTA "
            "TBLPROPERTIES ('delta.feature.noSuchThing' = 'supported')"
        )
