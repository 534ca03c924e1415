"""Results and errors shaped as delta-spark gives them, so code reading them ports with
only the import changed: MERGE's result row, history, DESCRIBE DETAIL / TABLE, VACUUM,
the AnalysisException family and argument checks."""

from __future__ import annotations

import json

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import functions as F

from headwater.delta import exceptions
from headwater.delta.tables import DeltaTable
from headwater.errors import (
    DeltaError,
    HeadwaterError,
    NotADeltaTableError,
    TableAlreadyExistsError,
    TableNotFoundError,
)


@pytest.fixture
def table(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(10).withColumn("g", F.col("id") % 2).write.format("delta").save(path)
    return DeltaTable.forPath(spark, path)


def test_merge_result_row_has_delta_sparks_columns_in_order(spark, table):
    source = spark.range(5, 15).withColumn("g", F.lit(9))
    result = (
        table.alias("t")
        .merge(source.alias("s"), "t.id = s.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    assert result.columns == [
        "num_affected_rows",
        "num_updated_rows",
        "num_deleted_rows",
        "num_inserted_rows",
    ]
    assert [f.dataType.simpleString() for f in result.schema] == ["bigint"] * 4
    assert tuple(result.first()) == (10, 5, 0, 5)


def test_history_has_delta_sparks_columns_and_first_write_names(spark, tmp_path, table):
    assert table.history().columns == [
        "version", "timestamp", "userId", "userName", "operation", "operationParameters",
        "job", "notebook", "clusterId", "readVersion", "isolationLevel", "isBlindAppend",
        "operationMetrics", "userMetadata", "engineInfo",
    ]  # fmt: skip
    first = table.history().first()
    assert (first.operation, first.operationParameters["mode"]) == ("WRITE", "ErrorIfExists")
    spark.range(3).write.format("delta").saveAsTable("shapes_sat")
    spark.range(4).write.format("delta").mode("append").saveAsTable("shapes_sat")
    spark.range(2).write.format("delta").mode("overwrite").saveAsTable("shapes_sat")
    ops = [r.operation for r in DeltaTable.forName(spark, "shapes_sat").history().collect()]
    assert ops == ["CREATE OR REPLACE TABLE AS SELECT", "WRITE", "CREATE TABLE AS SELECT"]
    # delta-spark's names for the commits creating a table, each a blind append.
    spark.range(3).writeTo("shapes_write_to").using("delta").create()
    spark.sql("CREATE TABLE shapes_created (id BIGINT) USING delta")
    for name in ("shapes_write_to", "shapes_created"):
        (created,) = DeltaTable.forName(spark, name).history().collect()
        assert created.isBlindAppend is True and created.operationParameters["clusterBy"] == "[]"
        assert created.operation == {"shapes_write_to": "CREATE TABLE AS SELECT"}.get(
            name, "CREATE TABLE"
        )
    assert first.isBlindAppend is True


# What delta-spark 4.4 logs for DELETE and UPDATE (and MERGE, named numTarget...) besides
# their row counts: bytes, change files, deletion vectors and times.
FILE_METRICS = {
    "numAddedFiles", "numRemovedFiles", "numCopiedRows", "numAddedChangeFiles",
    "numAddedBytes", "numRemovedBytes", "numDeletionVectorsAdded",
    "numDeletionVectorsRemoved", "numDeletionVectorsUpdated", "executionTimeMs",
    "scanTimeMs", "rewriteTimeMs",
}  # fmt: skip
MERGE_METRICS = {
    "numSourceRows", "numOutputRows", "numTargetRowsInserted", "numTargetRowsUpdated",
    "numTargetRowsMatchedUpdated", "numTargetRowsNotMatchedBySourceUpdated",
    "numTargetRowsDeleted", "numTargetRowsMatchedDeleted",
    "numTargetRowsNotMatchedBySourceDeleted", "numTargetRowsCopied", "numTargetFilesAdded",
    "numTargetFilesRemoved", "numTargetChangeFilesAdded", "numTargetBytesAdded",
    "numTargetBytesRemoved", "numTargetDeletionVectorsAdded",
    "numTargetDeletionVectorsRemoved", "numTargetDeletionVectorsUpdated", "executionTimeMs",
    "scanTimeMs", "rewriteTimeMs", "materializeSourceTimeMs",
}  # fmt: skip


@pytest.mark.parametrize("vectors", [False, True])
def test_dml_history_has_delta_sparks_metrics(spark, tmp_path, vectors):
    path = str(tmp_path / "t")
    spark.range(10).withColumn("g", F.col("id") % 2).coalesce(1).write.format("delta").save(path)
    if vectors:
        spark.sql(
            f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = true)"
        )
    table = DeltaTable.forPath(spark, path)
    table.delete("id = 1")
    table.update("id = 2", {"g": F.lit(7)})
    source = spark.range(8, 12).withColumn("g", F.lit(9))
    merge = table.alias("t").merge(source.alias("s"), "t.id = s.id")
    merge.whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    found = {h.operation: h.operationMetrics for h in table.history().collect()}
    delete, update, merged = found["DELETE"], found["UPDATE"], found["MERGE"]
    assert set(delete) == FILE_METRICS | {"numDeletedRows"}
    assert set(update) == FILE_METRICS | {"numUpdatedRows"}
    assert set(merged) == MERGE_METRICS
    for metrics in (delete, update, merged):
        times = [int(metrics[k]) for k in ("executionTimeMs", "scanTimeMs", "rewriteTimeMs")]
        assert times[0] > 0 and times[0] >= max(times[1:])
    if vectors:  # rows marked in a vector: no bytes removed; the updated row is a new file
        assert (delete["numDeletionVectorsAdded"], delete["numRemovedBytes"]) == ("1", "0")
        assert (update["numDeletionVectorsUpdated"], update["numRemovedFiles"]) == ("1", "1")
        assert int(update["numAddedBytes"]) > 0
    else:  # files rewritten: their bytes and the new ones'
        assert int(delete["numRemovedBytes"]) > 0 and int(delete["numAddedBytes"]) > 0
        assert update["numRemovedBytes"] == delete["numAddedBytes"]  # the same one file
        assert int(merged["numTargetBytesRemoved"]) > 0
    assert merged["numTargetChangeFilesAdded"] == "0"


def test_detail_has_every_delta_spark_column_with_the_catalog_name(spark, table):
    spark.sql("CREATE TABLE shapes_named (a INT, b STRING) USING DELTA PARTITIONED BY (b)")
    detail = spark.sql("DESCRIBE DETAIL shapes_named")
    assert detail.columns == [
        "format", "id", "name", "description", "location", "createdAt", "lastModified",
        "partitionColumns", "clusteringColumns", "numFiles", "sizeInBytes", "properties",
        "minReaderVersion", "minWriterVersion", "tableFeatures",
    ]  # fmt: skip
    row = detail.first()
    assert row.name == "spark_catalog.default.shapes_named"
    assert row.partitionColumns == ["b"] and row.clusteringColumns == []
    assert row.tableFeatures == ["appendOnly", "invariants"]  # what protocol (1, 2) implies
    by_path = table.detail().first()
    assert by_path.name is None and by_path.numFiles >= 1
    assert by_path.location == f"file:{table.path}"  # qualified, as delta-spark gives it


def test_describe_table_shows_the_partition_section(spark):
    spark.sql(
        "CREATE TABLE shapes_parts (a INT, b STRING COMMENT 'the b') USING DELTA PARTITIONED BY (b)"
    )
    rows = [tuple(r) for r in spark.sql("DESCRIBE TABLE shapes_parts").collect()]
    assert rows == [
        ("a", "int", None),
        ("b", "string", "the b"),
        ("# Partition Information", "", ""),
        ("# col_name", "data_type", "comment"),
        ("b", "string", "the b"),
    ]
    spark.sql("CREATE TABLE shapes_flat (a INT) USING DELTA")
    assert [r[0] for r in spark.sql("DESC shapes_flat").collect()] == ["a"]
    path = spark.sql("DESCRIBE DETAIL shapes_parts").first().location.removeprefix("file:")
    assert [tuple(r) for r in spark.sql(f"DESCRIBE TABLE delta.`{path}`").collect()] == rows


def test_vacuum_returns_what_delta_spark_returns(spark, table):
    # DeltaTable.vacuum(): an empty DataFrame; SQL's VACUUM: the table's qualified path.
    vacuumed = table.vacuum()
    assert (vacuumed.columns, vacuumed.collect()) == ([], [])
    sql = spark.sql(f"VACUUM delta.`{table.path}`")
    assert sql.columns == ["path"] and [r.path for r in sql.collect()] == [f"file:{table.path}"]


def test_missing_existing_and_non_delta_tables_are_analysis_exceptions(spark, tmp_path, table):
    with pytest.raises(AnalysisException) as missing:
        DeltaTable.forPath(spark, str(tmp_path / "nope"))
    assert isinstance(missing.value, TableNotFoundError)
    assert isinstance(missing.value, HeadwaterError)
    assert missing.value.getCondition() == "DELTA_MISSING_DELTA_TABLE"
    assert missing.value.getSqlState() == "42P01"
    assert str(missing.value).startswith("[DELTA_MISSING_DELTA_TABLE]")
    with pytest.raises(AnalysisException) as exists:
        spark.range(1).write.format("delta").save(table.path)
    assert isinstance(exists.value, TableAlreadyExistsError)
    (tmp_path / "plain").mkdir()
    spark.range(2).write.parquet(str(tmp_path / "plain" / "data"))
    with pytest.raises(AnalysisException) as not_delta:
        spark.range(1).write.format("delta").save(str(tmp_path / "plain"))
    assert isinstance(not_delta.value, NotADeltaTableError)


def test_dml_arguments_fail_before_any_work_with_delta_sparks_types(spark, table):
    version = table.history(1).first().version
    with pytest.raises(TypeError, match="condition"):
        table.delete(5)
    with pytest.raises(ValueError, match="'set' cannot be None"):
        table.update(set=None)
    with pytest.raises(TypeError, match="Values of dict"):
        table.update(set={"g": 5})
    with pytest.raises(TypeError, match="DataFrame"):
        table.merge("not a frame", "a = b")
    with pytest.raises(ValueError, match="condition"):
        table.merge(spark.range(1), None)
    builder = table.alias("t").merge(spark.range(1).alias("s"), "t.id = s.id")
    with pytest.raises(ValueError, match="whenMatchedUpdate cannot be None"):
        builder.whenMatchedUpdate()
    with pytest.raises(TypeError, match="whenNotMatchedInsert"):
        builder.whenNotMatchedInsert(values=["id"])
    with pytest.raises(ValueError, match="version needs to be an int"):
        table.restoreToVersion("0")
    with pytest.raises(TypeError):
        table.history("5")
    assert table.history(1).first().version == version  # nothing was committed


def test_restore_to_an_unparseable_timestamp_names_the_accepted_formats(table):
    with pytest.raises(DeltaError, match=r"DELTA_TIMESTAMP_INVALID.*'2024-05-01 12:30:00'"):
        table.restoreToTimestamp("yesterday")


def test_for_path_takes_hadoop_conf_as_delta_spark_does(spark, table):
    again = DeltaTable.forPath(spark, table.path, {"fs.s3a.access.key": "k"})  # local: unused
    assert again.toDF().count() == 10
    with pytest.raises(TypeError):
        DeltaTable.forPath(spark, table.path, {"fs.x": 1})


def test_read_change_data_is_an_alias_of_read_change_feed(spark, tmp_path):
    path = str(tmp_path / "cdf")
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id BIGINT) USING DELTA "
        "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
    )
    spark.range(3).write.format("delta").mode("append").save(path)
    changes = (
        spark.read.format("delta")
        .option("readChangeData", "true")
        .option("startingVersion", 1)
        .load(path)
    )
    assert sorted((r.id, r._change_type) for r in changes.collect()) == [
        (0, "insert"),
        (1, "insert"),
        (2, "insert"),
    ]


def test_generate_symlink_manifest_in_sql(spark, table):
    spark.sql(f"GENERATE symlink_format_manifest FOR TABLE delta.`{table.path}`")
    manifest = f"{table.path}/_symlink_format_manifest/manifest"
    with open(manifest) as f:
        listed = [line.strip() for line in f if line.strip()]
    assert len(listed) == table.detail().first().numFiles


def test_delta_exceptions_are_importable_under_delta_sparks_names():
    for name in (
        "ConcurrentAppendException",
        "ConcurrentDeleteReadException",
        "ConcurrentDeleteDeleteException",
        "MetadataChangedException",
        "ConcurrentTransactionException",
        "ProtocolChangedException",
        "ConcurrentWriteException",
        "DeltaConcurrentModificationException",
    ):
        assert issubclass(getattr(exceptions, name), DeltaError), name
    assert json.dumps(exceptions.__all__)
