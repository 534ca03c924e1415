"""DML on tables created with ``delta.enableDeletionVectors = true``: changed rows are
marked in deletion vectors instead of their files being rewritten, and every reader (ours,
delta-rs, earlier versions) sees exactly the rows a rewrite would have left."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable as RsTable
from deltalake import QueryBuilder
from pyspark.sql.types import StructField

from headwater.delta.tables import DeltaTable
from headwater.errors import DeltaError

SCHEMA = "id long, v string, d int"


def _create(spark, path: Path, vectors: bool) -> str:
    builder = (
        DeltaTable.create(spark)
        .location(str(path))
        .addColumn("id", "bigint")
        .addColumn("v", "string")
        .addColumn("d", "int")
        .partitionedBy("d")
    )
    if vectors:
        builder = builder.property("delta.enableDeletionVectors", "true")
    builder.execute()
    rows = [(i, f"v{i}", i % 2) for i in range(40)]
    spark.createDataFrame(rows, SCHEMA).write.format("delta").mode("append").save(str(path))
    return str(path)


def _rows(spark, path: str, **options) -> list[tuple]:
    df = spark.read.format("delta").options(**options).load(path)
    return sorted(tuple(r) for r in df.collect())


def _delta_rs(path: str) -> list[tuple]:
    table = QueryBuilder().register("t", RsTable(path)).execute("select id, v, d from t").read_all()
    return sorted(tuple(r.values()) for r in pa.table(table).to_pylist())


def _last_actions(path: str) -> list[dict]:
    log = sorted(Path(path, "_delta_log").glob("*.json"))[-1]
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _merge(spark, path: str, source: list[tuple]):
    src = spark.createDataFrame(source, SCHEMA)
    return (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .whenMatchedDelete("s.v = 'gone'")
        .whenMatchedUpdate("t.id < 30", set={"v": "s.v"})
        .whenNotMatchedInsertAll()
        .execute()
    )


@pytest.fixture
def tables(spark, tmp_path) -> tuple[str, str]:
    """The same rows in a table with deletion vectors and in one without."""
    return _create(spark, tmp_path / "dv", True), _create(spark, tmp_path / "plain", False)


def test_a_table_created_with_deletion_vectors_names_only_the_features_it_uses(tables):
    dv, _ = tables
    protocol = RsTable(dv).protocol()
    assert protocol.reader_features == ["deletionVectors"]
    assert "variantType" not in protocol.writer_features  # delta-rs's own create adds it


def test_merge_marks_changed_rows_in_vectors_and_matches_a_rewriting_merge(spark, tables):
    dv, plain = tables
    source = [(3, "gone", 1), (4, "four", 0), (35, "kept", 1), (100, "new", 0)]
    before = _rows(spark, dv)
    files_before = {p.name for p in Path(dv).rglob("*.parquet")}
    _merge(spark, dv, source)
    _merge(spark, plain, source)
    expected = _rows(spark, plain)
    assert (4, "four", 0) in expected and (35, "v35", 1) in expected  # 35: no clause acted
    assert _rows(spark, dv) == expected
    assert _delta_rs(dv) == expected
    assert _rows(spark, dv, versionAsOf="1") == before  # time travel: the vectors are new

    metrics = DeltaTable.forPath(spark, dv).history(1).first().operationMetrics
    assert metrics["numTargetRowsDeleted"] == "1" and metrics["numTargetRowsUpdated"] == "1"
    assert metrics["numTargetRowsInserted"] == "1" and metrics["numTargetRowsCopied"] == "0"
    assert metrics["numTargetDeletionVectorsAdded"] == "2"  # rows 3 (d=1) and 4 (d=0)
    assert metrics["numTargetFilesRemoved"] == "0"
    actions = _last_actions(dv)
    readded = [a["add"] for a in actions if "add" in a and "deletionVector" in a["add"]]
    assert sorted(a["deletionVector"]["cardinality"] for a in readded) == [1, 1]
    assert all(json.loads(a["stats"])["tightBounds"] is False for a in readded)
    assert {a["path"].rsplit("/", 1)[-1] for a in readded} <= files_before  # not rewritten
    assert len(list(Path(dv).glob("deletion_vector_*.bin"))) == 1
    assert not list(Path(dv, "_headwater_staging").glob("*"))  # the matched rows' hand-off


def test_a_second_change_to_the_same_file_extends_its_vector(spark, tables):
    dv, plain = tables
    for source in ([(4, "four", 0)], [(6, "six", 0), (8, "gone", 0)]):
        _merge(spark, dv, source)
        _merge(spark, plain, source)
    assert _rows(spark, dv) == _rows(spark, plain) == _delta_rs(dv)
    # the version between the merges reads with the vector it had then
    middle = {"versionAsOf": str(RsTable(dv).version() - 1)}
    assert _rows(spark, dv, **middle) == _rows(spark, plain, **middle)
    metrics = DeltaTable.forPath(spark, dv).history(1).first().operationMetrics
    assert metrics["numTargetDeletionVectorsUpdated"] == "1"
    actions = _last_actions(dv)
    (remove,) = [a["remove"] for a in actions if "remove" in a]
    assert remove["deletionVector"]["cardinality"] == 1  # the remove names the old vector
    (readd,) = [a["add"] for a in actions if "add" in a and "deletionVector" in a["add"]]
    assert readd["deletionVector"]["cardinality"] == 3


def test_merge_with_a_target_row_matched_twice_fails_and_writes_nothing(spark, tables):
    dv, _ = tables
    version = RsTable(dv).version()
    files = set(Path(dv).rglob("*"))
    with pytest.raises(DeltaError, match="MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW"):
        _merge(spark, dv, [(4, "a", 0), (4, "b", 0)])
    assert RsTable(dv).version() == version
    assert set(Path(dv).rglob("*")) == files


def test_delete_and_update_write_vectors_and_a_fully_deleted_file_goes(spark, tables):
    dv, plain = tables
    for path in (dv, plain):
        table = DeltaTable.forPath(spark, path)
        table.update("id % 5 = 0", {"v": "concat(v, '!')"})
        table.delete("id > 10 AND id < 20")
    assert _rows(spark, dv) == _rows(spark, plain) == _delta_rs(dv)
    delete = DeltaTable.forPath(spark, dv).history(1).first().operationMetrics
    assert delete["numDeletedRows"] == "9" and delete["numRemovedFiles"] == "0"

    DeltaTable.forPath(spark, dv).delete("d = 1 AND id >= 0")  # every row of the d=1 files
    assert [r for r in _rows(spark, dv) if r[2] == 1] == []
    metrics = DeltaTable.forPath(spark, dv).history(1).first().operationMetrics
    assert int(metrics["numRemovedFiles"]) >= 1
    assert not any("add" in a for a in _last_actions(dv))  # removed outright, no vector


def test_vacuum_and_optimize_after_vector_writes_keep_the_rows(spark, tables):
    dv, plain = tables
    _merge(spark, dv, [(4, "four", 0), (100, "new", 0)])
    _merge(spark, plain, [(4, "four", 0), (100, "new", 0)])
    expected = _rows(spark, plain)
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        DeltaTable.forPath(spark, dv).vacuum(0)
        assert _rows(spark, dv) == expected and _delta_rs(dv) == expected
        DeltaTable.forPath(spark, dv).optimize().executeCompaction()
        assert _rows(spark, dv) == expected and _delta_rs(dv) == expected
        DeltaTable.forPath(spark, dv).vacuum(0)  # the vector is no longer needed
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    assert not list(Path(dv).glob("deletion_vector_*.bin"))
    assert _rows(spark, dv) == expected


def test_sql_create_and_alter_turn_on_deletion_vectors(spark, tmp_path):
    created, altered = str(tmp_path / "created"), str(tmp_path / "altered")
    spark.sql(
        f"CREATE TABLE delta.`{created}` (id BIGINT, v STRING, d INT) USING DELTA "
        "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
    )
    _create(spark, tmp_path / "altered", False)
    spark.sql(
        f"ALTER TABLE delta.`{altered}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
    )
    for path in (created, altered):
        protocol = RsTable(path).protocol()
        assert "deletionVectors" in protocol.writer_features, path
        assert "variantType" not in protocol.writer_features, path
    before = _rows(spark, altered)
    DeltaTable.forPath(spark, altered).delete("id = 7")
    assert _rows(spark, altered) == [r for r in before if r[0] != 7] == _delta_rs(altered)
    assert list(Path(altered).glob("deletion_vector_*.bin"))  # deleted through a vector
    assert RsTable(altered).metadata().configuration["delta.enableDeletionVectors"] == "true"


def test_replace_where_over_files_with_vectors_removes_them_with_their_vectors(spark, tables):
    dv, _ = tables
    DeltaTable.forPath(spark, dv).delete("id = 4")  # a vector on a d=0 file
    new = spark.createDataFrame([(1000, "x", 0)], SCHEMA)
    new.write.format("delta").mode("overwrite").option("replaceWhere", "d = 0").save(dv)
    expected = sorted([(1000, "x", 0)] + [(i, f"v{i}", 1) for i in range(1, 40, 2)])
    assert _rows(spark, dv) == expected == _delta_rs(dv)
    removes = [a["remove"] for a in _last_actions(dv) if "remove" in a]
    assert [r["deletionVector"]["cardinality"] for r in removes if "deletionVector" in r] == [1]


def test_merge_with_not_matched_by_source_clauses_marks_rows_instead_of_rewriting(spark, tables):
    dv, plain = tables
    metrics = {}
    for path in (dv, plain):
        DeltaTable.forPath(spark, path).delete("id IN (4, 5)")  # vectors on both partitions
        src = spark.createDataFrame([(6, "six", 0), (7, "seven", 1), (200, "new", 0)], SCHEMA)
        result = (
            DeltaTable.forPath(spark, path).alias("t").merge(src.alias("s"), "t.id = s.id")
            .whenMatchedUpdateAll().whenNotMatchedInsertAll()
            .whenNotMatchedBySourceDelete("t.id > 30")
            .whenNotMatchedBySourceUpdate("t.id < 3", set={"v": "concat(t.v, '-gone')"})
            .execute()
        )  # fmt: skip
        metrics[path] = result.first().asDict()
    rows = _rows(spark, dv)
    assert rows == _rows(spark, plain) == _delta_rs(dv)
    assert (1, "v1-gone", 1) in rows and (6, "six", 0) in rows and (200, "new", 0) in rows
    assert not [r for r in rows if r[0] > 30 and r[0] != 200]
    assert metrics[dv] == metrics[plain]  # affected, updated, deleted, inserted
    history = DeltaTable.forPath(spark, dv).history(1).first().operationMetrics
    assert history["numTargetRowsNotMatchedBySourceDeleted"] == "9"  # 31..39
    assert history["numTargetRowsNotMatchedBySourceUpdated"] == "3"  # 0, 1, 2
    assert history["numTargetFilesRemoved"] == "0"
    actions = _last_actions(dv)
    removes = [a["remove"] for a in actions if "remove" in a]
    readds = {a["add"]["path"] for a in actions if "add" in a and "deletionVector" in a["add"]}
    assert {r["path"] for r in removes} == readds  # every touched file re-added, none rewritten
    assert sum("deletionVector" in r for r in removes) == 2  # the DELETE's vectors, extended
    new_rows = sum(
        json.loads(a["add"]["stats"])["numRecords"]
        for a in actions
        if "add" in a and "deletionVector" not in a["add"]
    )
    assert new_rows == 2 + 3 + 1  # the matched updates, the by-source updates, the insert


def test_merge_clauses_reading_target_columns_see_the_target_values(spark, tables):
    dv, plain = tables
    src = spark.createDataFrame([(2, "+", 0), (3, "+", 1), (31, "+", 1), (77, "new", 1)], SCHEMA)
    for path in (dv, plain):
        (
            DeltaTable.forPath(spark, path).alias("t").merge(src.alias("s"), "t.id = s.id")
            .whenMatchedUpdate("t.v <> 'v3'", set={"v": "concat(t.v, s.v, cast(t.d AS string))"})
            .whenMatchedDelete()
            .whenNotMatchedInsert(values={"id": "s.id", "v": "s.v", "d": "s.d"})
            .execute()
        )  # fmt: skip
    rows = _rows(spark, dv)
    assert rows == _rows(spark, plain) == _delta_rs(dv)
    assert (2, "v2+0", 0) in rows and (31, "v31+1", 1) in rows and (77, "new", 1) in rows
    assert not [r for r in rows if r[0] == 3]  # v3: the update's condition failed, deleted


def test_merge_keeps_target_values_of_every_type_through_the_matched_rows(spark, tmp_path):
    """The matched rows' target columns go from the first job to the second as Parquet:
    timestamps, decimals, dates, arrays and nulls come back as they were."""
    schema = "id bigint, amount decimal(10,2), ts timestamp, day date, tags array<string>"
    rows = spark.sql(
        "SELECT id, CAST(id * 1.25 AS decimal(10,2)) AS amount, "
        "timestamp'2026-01-02 03:04:05.123456' + make_interval(0, 0, 0, 0, 0, id) AS ts, "
        "date_add(date'2026-01-01', CAST(id AS int)) AS day, "
        "IF(id % 3 = 0, NULL, array(CAST(id AS string), 'x')) AS tags FROM range(30)"
    )
    paths = []
    for name, vectors in (("dv", True), ("plain", False)):
        # Nullable columns (addColumns keeps a StructType's NOT NULL, as delta-spark does).
        columns = [StructField(f.name, f.dataType, True) for f in rows.schema]
        builder = DeltaTable.create(spark).location(str(tmp_path / name)).addColumns(columns)
        if vectors:
            builder = builder.property("delta.enableDeletionVectors", "true")
        builder.execute()
        rows.write.format("delta").mode("append").save(str(tmp_path / name))
        paths.append(str(tmp_path / name))
    src = spark.createDataFrame([(3, 1.0), (4, 2.0), (99, 5.0)], "id long, amount double")
    for path in paths:
        (
            DeltaTable.forPath(spark, path).alias("t").merge(src.alias("s"), "t.id = s.id")
            .whenMatchedUpdate(set={"amount": "t.amount + s.amount"})
            .whenNotMatchedInsert(values={"id": "s.id", "amount": "s.amount"})
            .execute()
        )  # fmt: skip
    dv, plain = (spark.read.format("delta").load(p).orderBy("id").collect() for p in paths)
    assert dv == plain
    by_id = {r.id: r for r in dv}
    assert str(by_id[4].amount) == "7.00" and by_id[4].tags == ["4", "x"]
    assert by_id[3].tags is None and by_id[3].ts.microsecond == 123456
    assert by_id[99].ts is None and len(dv) == 31
    assert spark.read.format("delta").load(paths[0]).schema.simpleString() == (
        f"struct<{schema.replace(', ', ',').replace(' ', ':')}>"
    )


def test_merge_that_mirrors_a_snapshot_deletes_every_row_it_lacks(spark, tables):
    """Only NOT MATCHED BY SOURCE DELETE and inserts: a file left without live rows is
    removed; a source key twice is an error on both plans (as in delta-spark), with nothing
    written."""
    dv, plain = tables
    twice = spark.createDataFrame([(1, "a", 1), (1, "b", 1)], SCHEMA)
    src = spark.createDataFrame([(1, "a", 1), (500, "new", 0)], SCHEMA)
    for path in (dv, plain):
        before = _rows(spark, path)
        with pytest.raises(DeltaError, match="MULTIPLE_SOURCE_ROW"):
            DeltaTable.forPath(spark, path).alias("t").merge(
                twice.alias("s"), "t.id = s.id"
            ).whenNotMatchedBySourceDelete().execute()
        assert _rows(spark, path) == before
        (
            DeltaTable.forPath(spark, path).alias("t").merge(src.alias("s"), "t.id = s.id")
            .whenNotMatchedBySourceDelete().whenNotMatchedInsertAll().execute()
        )  # fmt: skip
    expected = [(1, "v1", 1), (500, "new", 0)]
    assert _rows(spark, dv) == _rows(spark, plain) == _delta_rs(dv) == expected
    actions = _last_actions(dv)
    removed = {a["remove"]["path"] for a in actions if "remove" in a}
    readded = {a["add"]["path"] for a in actions if "add" in a and "deletionVector" in a["add"]}
    assert len(readded) == 1 and readded < removed  # the d=0 file had no live row left
