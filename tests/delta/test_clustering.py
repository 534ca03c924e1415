"""Liquid clustering and Z-order, written as delta-spark users write them: the clustering
domain and features in the log (read back with delta-rs and the JSON commits), detail(),
OPTIMIZE's metrics and incremental behaviour, and file skipping paying off."""

from __future__ import annotations

import glob
import json
import os

import pytest
from deltalake import DeltaTable as RsTable
from pyspark.errors import AnalysisException
from pyspark.sql import functions as F

from headwater.delta.log.delta_log import DeltaLog
from headwater.delta.read.pruning import keep_files, predicate_filters
from headwater.delta.tables import DeltaTable


def _commit(path: str, version: int | None = None) -> list[dict]:
    logs = sorted(glob.glob(os.path.join(path, "_delta_log", "*.json")))
    chosen = (
        logs[-1] if version is None else os.path.join(path, "_delta_log", f"{version:020d}.json")
    )
    with open(chosen) as f:
        return [json.loads(line) for line in f if line.strip()]


def _info(commit: list[dict]) -> dict:
    return next(a["commitInfo"] for a in commit if "commitInfo" in a)


def _domains(commit: list[dict]) -> list[dict]:
    return [a["domainMetadata"] for a in commit if "domainMetadata" in a]


def _files_read(path: str, predicate: str) -> int:
    """Files a reader skipping by the log's min/max stats reads for ``predicate``."""
    snap = DeltaLog(path).snapshot()
    return len(keep_files(snap, predicate_filters(predicate, snap.schema)))


def _data(spark, n: int = 4000):
    # Values of k spread over every input file (the unclustered layout).
    return spark.range(n).selectExpr(
        "id", "cast((id * 7919) % 1000 as int) as k", "concat('s', id % 97) as s"
    )


def _clustered_table(spark, path: str, n: int = 4000, files: int = 8):
    DeltaTable.create(spark).location(path).addColumn("id", "bigint").addColumn(
        "k", "int"
    ).addColumn("s", "string").clusterBy("k").execute()
    _data(spark, n).repartition(files).write.format("delta").mode("append").save(path)
    return DeltaTable.forPath(spark, path)


def test_builder_cluster_by_writes_domain_and_features(spark, tmp_path):
    path = str(tmp_path / "t")
    dt = (
        DeltaTable.create(spark)
        .location(path)
        .addColumn("a", "int")
        .addColumn("b", "string")
        .clusterBy("a", "b")
        .execute()
    )
    first = _commit(path, 0)
    assert _domains(first) == [
        {
            "domain": "delta.clustering",
            "configuration": '{"clusteringColumns":[["a"],["b"]]}',
            "removed": False,
        }
    ]
    params = _info(first)["operationParameters"]
    assert _info(first)["operation"] == "CREATE TABLE"
    assert json.loads(params["clusterBy"]) == ["a", "b"]
    assert json.loads(params["partitionBy"]) == []
    protocol = RsTable(path).protocol()
    assert protocol.min_writer_version == 7
    assert {"clustering", "domainMetadata"} <= set(protocol.writer_features)
    detail = dt.detail().first()
    assert detail.clusteringColumns == ["a", "b"]
    assert detail.partitionColumns == []
    # delta-rs reads what is written afterwards.
    spark.createDataFrame([(1, "x")], "a int, b string").write.format("delta").mode("append").save(
        path
    )
    assert RsTable(path).to_pyarrow_table().to_pylist() == [{"a": 1, "b": "x"}]


def test_sql_create_table_cluster_by_and_alter(spark, tmp_path):
    path = str(tmp_path / "sql")
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id BIGINT, k INT, s STRING) USING delta CLUSTER BY (k)"
    )
    assert DeltaTable.forPath(spark, path).detail().first().clusteringColumns == ["k"]
    spark.sql(f"ALTER TABLE delta.`{path}` CLUSTER BY (s, id)")
    last = _commit(path)
    assert _info(last)["operation"] == "CLUSTER BY"
    assert _info(last)["operationParameters"] == {
        "oldClusteringColumns": "k",
        "newClusteringColumns": "s,id",
    }
    assert json.loads(_domains(last)[0]["configuration"]) == {"clusteringColumns": [["s"], ["id"]]}
    spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first()
    assert spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first().clusteringColumns == ["s", "id"]
    spark.sql(f"ALTER TABLE delta.`{path}` CLUSTER BY NONE")
    assert json.loads(_domains(_commit(path))[0]["configuration"]) == {"clusteringColumns": []}
    assert DeltaTable.forPath(spark, path).detail().first().clusteringColumns == []


def test_sql_ctas_and_named_table_cluster_by(spark, tmp_path):
    path = str(tmp_path / "ctas")
    spark.sql(f"CREATE TABLE delta.`{path}` USING delta CLUSTER BY (k) AS SELECT 1 AS k, 'a' AS v")
    first = _commit(path, 0)
    assert _domains(first)[0]["domain"] == "delta.clustering"
    assert json.loads(_info(first)["operationParameters"]["clusterBy"]) == ["k"]
    assert [tuple(r) for r in spark.read.format("delta").load(path).collect()] == [(1, "a")]
    spark.sql("CREATE TABLE clustered_named (a INT, b STRING) USING delta CLUSTER BY (b)")
    try:
        assert DeltaTable.forName(spark, "clustered_named").detail().first().clusteringColumns == [
            "b"
        ]
    finally:
        spark.sql("DROP TABLE IF EXISTS clustered_named")


def test_dataframe_writer_cluster_by(spark, tmp_path):
    path = str(tmp_path / "w")
    _data(spark, 100).write.format("delta").clusterBy("k").save(path)
    first = _commit(path, 0)
    assert json.loads(_domains(first)[0]["configuration"]) == {"clusteringColumns": [["k"]]}
    assert json.loads(_info(first)["operationParameters"]["clusterBy"]) == ["k"]
    assert spark.read.format("delta").load(path).count() == 100
    # Appending with the same columns is fine; with others it is refused before writing.
    _data(spark, 10).write.format("delta").mode("append").clusterBy("k").save(path)
    with pytest.raises(AnalysisException, match="DELTA_CLUSTERING_COLUMNS_MISMATCH"):
        _data(spark, 10).write.format("delta").mode("append").clusterBy("s").save(path)
    assert spark.read.format("delta").load(path).count() == 110
    _data(spark, 10).writeTo("clustered_v2").clusterBy("k", "id").create()
    try:
        detail = DeltaTable.forName(spark, "clustered_v2").detail().first()
        assert detail.clusteringColumns == ["k", "id"]
    finally:
        spark.sql("DROP TABLE IF EXISTS clustered_v2")


def test_errors_name_the_column_and_the_fix(spark, tmp_path):
    builder = DeltaTable.create(spark).location(str(tmp_path / "e")).addColumn("a", "int")
    with pytest.raises(AnalysisException, match="Clustering column nope is not a column"):
        builder.clusterBy("nope").execute()
    with pytest.raises(AnalysisException, match="DELTA_CLUSTER_BY_WITH_PARTITIONED_BY"):
        builder.addColumn("b", "int").clusterBy("a").partitionedBy("b").execute()
    many = DeltaTable.create(spark).location(str(tmp_path / "m"))
    for c in "abcde":
        many = many.addColumn(c, "int")
    with pytest.raises(AnalysisException, match="at most 4"):
        many.clusterBy("a", "b", "c", "d", "e").execute()
    with pytest.raises(AnalysisException, match="type map<string,int>"):
        DeltaTable.create(spark).location(str(tmp_path / "t")).addColumn(
            "m", "map<string,int>"
        ).clusterBy("m").execute()
    assert not os.path.exists(str(tmp_path / "e" / "_delta_log" / "00000000000000000000.json"))


def test_optimize_clusters_incrementally_and_full(spark, tmp_path):
    path = str(tmp_path / "c")
    dt = _clustered_table(spark, path)
    before = sorted(tuple(r) for r in dt.toDF().collect())
    assert _files_read(path, "k = 500") == 8  # every file holds every range of k
    spark.conf.set("spark.databricks.delta.optimize.maxFileSize", "8k")
    try:
        out = dt.optimize().executeCompaction().first()
        m = out.metrics
        assert out.path == "file:" + DeltaLog(path).root  # qualified, as delta-spark gives it
        assert m.numFilesRemoved == 8 and m.numFilesAdded > 1
        assert m.filesRemoved.totalFiles == 8 and m.filesAdded.totalFiles == m.numFilesAdded
        assert m.totalConsideredFiles == 8 and m.totalFilesSkipped == 0
        assert m.clusteringStats.mergedFiles.numFiles == 8 and m.zOrderStats is None
        assert _files_read(path, "k = 500") <= 2
        assert sorted(tuple(r) for r in dt.toDF().collect()) == before
        commit = _commit(path)
        info = _info(commit)
        assert info["operation"] == "OPTIMIZE"
        params = info["operationParameters"]
        assert json.loads(params["clusterBy"]) == ["k"] and json.loads(params["zOrderBy"]) == []
        assert info["operationMetrics"]["numRemovedFiles"] == "8"
        adds = [a["add"] for a in commit if "add" in a]
        assert all(a["clusteringProvider"] == "liquid" and not a["dataChange"] for a in adds)
        assert all(a["tags"]["ZCUBE_ZORDER_BY"] == '["k"]' for a in adds)
        assert len({a["tags"]["ZCUBE_ID"] for a in adds}) == 1
        version = DeltaLog(path).latest_version()

        # Already clustered: a second OPTIMIZE touches nothing and commits nothing.
        again = dt.optimize().executeCompaction().first().metrics
        assert again.numFilesAdded == 0 and again.numFilesRemoved == 0
        assert again.totalFilesSkipped == again.totalConsideredFiles
        assert DeltaLog(path).latest_version() == version

        # New data: only the new (unclustered) files are clustered.
        _data(spark, 500).repartition(2).write.format("delta").mode("append").save(path)
        inc = dt.optimize().executeCompaction().first().metrics
        assert inc.numFilesRemoved == 2
        assert inc.clusteringStats.inputZCubeFiles.numFiles == m.numFilesAdded

        # FULL rewrites every file.
        total = len(DeltaLog(path).snapshot().files)
        full = spark.sql(f"OPTIMIZE delta.`{path}` FULL").first().metrics
        assert full.numFilesRemoved == total
        assert _info(_commit(path))["operationParameters"]["isFull"] == "true"
        assert sorted(tuple(r) for r in dt.toDF().collect()) == sorted(
            before + [tuple(r) for r in _data(spark, 500).collect()]
        )
        assert RsTable(path).to_pyarrow_table().num_rows == 4500
    finally:
        spark.conf.unset("spark.databricks.delta.optimize.maxFileSize")


def test_optimize_clustered_refuses_zorder_and_where(spark, tmp_path):
    path = str(tmp_path / "r")
    dt = _clustered_table(spark, path, n=100, files=2)
    with pytest.raises(AnalysisException, match="DELTA_CLUSTERING_WITH_ZORDER_BY"):
        dt.optimize().executeZOrderBy("id")
    with pytest.raises(AnalysisException, match="DELTA_CLUSTERING_WITH_PARTITION_PREDICATE"):
        dt.optimize().where("k = 1").executeCompaction()


def test_zorder_by_two_columns(spark, tmp_path):
    path = str(tmp_path / "z")
    df = spark.range(4000).selectExpr(
        "id", "cast((id * 7919) % 1000 as int) as x", "cast((id * 104729) % 997 as int) as y"
    )
    df.repartition(8).write.format("delta").save(path)
    dt = DeltaTable.forPath(spark, path)
    assert _files_read(path, "x = 500") == 8 and _files_read(path, "y = 500") == 8
    spark.conf.set("spark.databricks.delta.optimize.maxFileSize", "4k")
    try:
        out = dt.optimize().executeZOrderBy("x", "y").first().metrics
    finally:
        spark.conf.unset("spark.databricks.delta.optimize.maxFileSize")
    assert out.numFilesRemoved == 8 and out.numFilesAdded > 4
    assert out.zOrderStats.strategyName == "all" and out.clusteringStats is None
    n = out.numFilesAdded
    assert _files_read(path, "x = 500") < n and _files_read(path, "y = 500") < n
    info = _info(_commit(path))
    assert json.loads(info["operationParameters"]["zOrderBy"]) == ["x", "y"]
    assert sorted(r.id for r in dt.toDF().select("id").collect()) == list(range(4000))


def test_sql_zorder_by_with_partition_predicate(spark, tmp_path):
    path = str(tmp_path / "zp")
    spark.range(400).selectExpr(
        "id", "cast(id % 2 as int) as p", "cast(id % 37 as int) as x"
    ).repartition(4).write.format("delta").partitionBy("p").save(path)
    out = spark.sql(f"OPTIMIZE delta.`{path}` WHERE p = 0 ZORDER BY (x)").first().metrics
    assert out.partitionsOptimized == 1 and out.numFilesRemoved == 4
    info = _info(_commit(path))
    # delta-spark logs the predicate as Spark prints it unresolved
    assert json.loads(info["operationParameters"]["predicate"]) == ["('p = 0)"]
    assert json.loads(info["operationParameters"]["zOrderBy"]) == ["x"]
    with pytest.raises(AnalysisException, match="DELTA_ZORDERING_ON_PARTITION_COLUMN"):
        DeltaTable.forPath(spark, path).optimize().executeZOrderBy("p")
    with pytest.raises(Exception, match="DELTA_OPTIMIZE_FULL_NOT_SUPPORTED"):
        spark.sql(f"OPTIMIZE delta.`{path}` FULL")
    assert spark.read.format("delta").load(path).where(F.col("p") == 0).count() == 200


def test_compaction_result_is_delta_spark_metrics_struct(spark, tmp_path):
    path = str(tmp_path / "cmp")
    spark.range(30).repartition(3).write.format("delta").save(path)
    out = DeltaTable.forPath(spark, path).optimize().executeCompaction()
    assert out.schema.simpleString().startswith(
        "struct<path:string,metrics:struct<numFilesAdded:bigint,numFilesRemoved:bigint,"
        "filesAdded:struct<min:bigint,max:bigint,avg:double,totalFiles:bigint,totalSize:bigint>"
    )
    m = out.first().metrics
    assert (m.numFilesAdded, m.numFilesRemoved, m.numBatches) == (1, 3, 1)
    assert m["numFilesAdded"] == 1  # map-style access, as older callers read it
