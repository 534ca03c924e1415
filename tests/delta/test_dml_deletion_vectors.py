"""DELETE, UPDATE and MERGE on tables with deletion vectors (written by Databricks): the
rows a vector deletes stay deleted, and the commit removes the file together with its
vector, so every reader (ours, delta-rs) sees the same rows."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable as RsTable
from deltalake import QueryBuilder

from headwater.delta.tables import DeltaTable

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "compat" / "delta-tables"

pytestmark = pytest.mark.skipif(
    not (CORPUS / "table-with-dv-small").is_dir(), reason="compat corpus not present"
)


@pytest.fixture
def dv_table(tmp_path) -> str:
    """Ten rows ``value`` 0..9 in one file; a deletion vector deletes 0 and 9."""
    path = tmp_path / "dv"
    shutil.copytree(CORPUS / "table-with-dv-small", path)
    return str(path)


def _ours(spark, path: str) -> list[int]:
    return sorted(r.value for r in spark.read.format("delta").load(path).collect())


def _delta_rs_table(path: str) -> pa.Table:
    """The table as delta-rs's query engine reads it (deletion vectors applied)."""
    return pa.table(
        QueryBuilder().register("t", RsTable(path)).execute("select * from t").read_all()
    )


def _delta_rs(path: str) -> list[int]:
    return sorted(_delta_rs_table(path).column("value").to_pylist())


def _last_removes(path: str) -> list[dict]:
    log = sorted((Path(path) / "_delta_log").glob("*.json"))[-1]
    actions = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [a["remove"] for a in actions if "remove" in a]


def test_delete_keeps_rows_the_vector_deleted_and_removes_the_file_with_its_vector(spark, dv_table):
    assert _ours(spark, dv_table) == [1, 2, 3, 4, 5, 6, 7, 8]
    dt = DeltaTable.forPath(spark, dv_table)
    dt.delete("value = 3")
    assert _ours(spark, dv_table) == [1, 2, 4, 5, 6, 7, 8]
    assert _delta_rs(dv_table) == [1, 2, 4, 5, 6, 7, 8]
    metrics = dt.history(1).first().operationMetrics
    assert metrics["numDeletedRows"] == "1"  # not the two the vector had deleted already
    (remove,) = _last_removes(dv_table)
    assert remove["deletionVector"]["cardinality"] == 2


def test_update_and_merge_on_a_table_with_a_deletion_vector(spark, dv_table):
    dt = DeltaTable.forPath(spark, dv_table)
    dt.update("value = 5", {"value": "50"})
    assert _ours(spark, dv_table) == [1, 2, 3, 4, 6, 7, 8, 50]
    assert dt.history(1).first().operationMetrics["numUpdatedRows"] == "1"

    # 0 was deleted by the vector: the source's 0 matches nothing and is inserted.
    source = spark.createDataFrame([(0,), (2,), (11,)], "value int")
    dt.alias("t").merge(source.alias("s"), "t.value = s.value").whenMatchedUpdate(
        set={"value": "s.value + 100"}
    ).whenNotMatchedInsertAll().execute()
    expected = [0, 1, 3, 4, 6, 7, 8, 11, 50, 102]
    assert _ours(spark, dv_table) == expected
    assert _delta_rs(dv_table) == expected
    m = dt.history(1).first().operationMetrics
    assert (m["numTargetRowsUpdated"], m["numTargetRowsInserted"]) == ("1", "2")


def test_merge_finds_a_duplicate_match_among_the_live_rows(spark, dv_table):
    """The duplicate check compares matches with the live row count (numRecords less the
    vector's deletions); counting deleted rows as live would hide this duplicate."""
    from headwater.errors import DeltaError

    source = spark.createDataFrame([(4,), (4,)], "value int")
    with pytest.raises(DeltaError, match="MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW"):
        DeltaTable.forPath(spark, dv_table).alias("t").merge(
            source.alias("s"), "t.value = s.value"
        ).whenMatchedUpdateAll().execute()
    assert RsTable(dv_table).version() == 1


def test_delete_on_a_table_with_deletion_vectors_and_change_data_records_the_change(
    spark, tmp_path
):
    path = str(tmp_path / "cdf_dv")
    shutil.copytree(CORPUS / "cdf-table-with-cdc-and-dvs", path)
    before = spark.read.format("delta").load(path)
    n, version = before.count(), RsTable(path).version()
    victim = before.first()[0]
    column = before.columns[0]
    DeltaTable.forPath(spark, path).delete(f"{column} = {victim!r}")
    after = spark.read.format("delta").load(path)
    assert after.count() == n - before.where(f"{column} = {victim!r}").count()
    assert after.count() == _delta_rs_table(path).num_rows
    changes = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", version + 1)
        .load(path)
    )
    deleted = changes.where("_change_type = 'delete'").select(column).collect()
    assert deleted and {r[0] for r in deleted} == {victim}


def test_dml_on_a_table_with_writer_features_we_cannot_keep_is_refused_before_writing(
    spark, tmp_path
):
    """cdc_ict_table needs in-commit timestamps on every commit; DML there is refused by
    name, with nothing written."""
    from headwater.errors import UnsupportedFeatureError

    path = tmp_path / "ict"
    shutil.copytree(CORPUS / "cdc_ict_table", path)
    files_before = sorted(p.name for p in path.rglob("*.parquet"))
    version = RsTable(str(path)).version()
    column = spark.read.format("delta").load(str(path)).columns[0]
    with pytest.raises(UnsupportedFeatureError, match="inCommitTimestamp"):
        DeltaTable.forPath(spark, str(path)).delete(f"{column} IS NOT NULL")
    assert RsTable(str(path)).version() == version
    assert sorted(p.name for p in path.rglob("*.parquet")) == files_before


def test_vacuum_keeps_the_deletion_vector_files_live_files_need(spark, dv_table):
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        orphan = Path(dv_table) / "part-orphan-from-a-killed-write.parquet"
        orphan.write_bytes(b"not a committed file")
        before = {p.name for p in Path(dv_table).iterdir()}
        DeltaTable.forPath(spark, dv_table).vacuum(0)
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    deleted = before - {p.name for p in Path(dv_table).iterdir()}
    assert deleted == {orphan.name}  # delta-rs alone would also delete the vector's file
    assert list(Path(dv_table).glob("deletion_vector_*.bin"))
    assert _ours(spark, dv_table) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert _delta_rs(dv_table) == [1, 2, 3, 4, 5, 6, 7, 8]


def test_optimize_drops_the_rows_deletion_vectors_deleted(spark, dv_table):
    spark.createDataFrame([(20,)], "value int").write.format("delta").mode("append").save(dv_table)
    dt = DeltaTable.forPath(spark, dv_table)
    metrics = dt.optimize().executeCompaction().first().metrics
    assert (metrics.numFilesAdded, metrics.numFilesRemoved) == (1, 2)
    assert metrics.deletionVectorStats.numDeletionVectorsRemoved == 1
    assert _ours(spark, dv_table) == [1, 2, 3, 4, 5, 6, 7, 8, 20]  # 0 and 9 stay deleted
    assert _delta_rs(dv_table) == [1, 2, 3, 4, 5, 6, 7, 8, 20]
    (with_vector,) = [r for r in _last_removes(dv_table) if r.get("deletionVector")]
    assert with_vector["dataChange"] is False
