"""The ``delta`` Python data source (the exact path) and file skipping from log stats."""

from __future__ import annotations

import os

import pyarrow as pa
from pyspark.sql.datasource import EqualTo, GreaterThan, In, IsNull, LessThan

from headwater.delta.log.delta_log import DeltaLog
from headwater.delta.read.batch import native_eligible, python_read
from headwater.delta.read.skipping import keep_mask
from headwater.delta.read.source import DeltaBatchReader


def _write(spark, path):
    df = spark.range(0, 1000, numPartitions=4).selectExpr(
        "id", "id % 4 as k", "if(id % 10 = 0, null, concat('s', id)) as s"
    )
    df.write.format("delta").option("partitionBy", "k").save(path)
    return df


def test_python_path_returns_the_same_rows_as_native(spark, table_path):
    df = _write(spark, table_path)
    snap = DeltaLog(table_path).snapshot()
    assert native_eligible(snap)
    py = python_read(spark, snap)
    assert "BatchScan delta" in py._jdf.queryExecution().executedPlan().toString()
    assert sorted(py.collect()) == sorted(df.collect())
    assert sorted(py.where("k = 2 AND id > 500").collect()) == sorted(
        df.where("k = 2 AND id > 500").collect()
    )


def test_pushed_filters_skip_partitions_and_files_by_stats(spark, table_path):
    _write(spark, table_path)
    schema = DeltaLog(table_path).snapshot().schema
    reader = DeltaBatchReader(table_path, {}, schema)
    all_files = sum(len(p.tasks) for p in reader.partitions())
    returned = list(reader.pushFilters([EqualTo(("k",), 1)]))
    assert len(returned) == 1  # handed back: Spark still applies it
    only_k1 = [t for p in reader.partitions() for t in p.tasks]
    assert only_k1 and all(dict(t.partition_values)["k"] == "1" for t in only_k1)
    assert len(only_k1) < all_files
    list(reader.pushFilters([LessThan(("id",), 0)]))
    assert sum(len(p.tasks) for p in reader.partitions()) == 0


def test_stats_mask_is_conservative(spark, table_path):
    _write(spark, table_path)
    snap = DeltaLog(table_path).snapshot()
    actions = snap.add_actions
    n = actions.num_rows
    everything = pa.array(keep_mask(actions, [GreaterThan(("id",), -1)], ["k"])).to_pylist()
    assert everything == [True] * n
    ins = pa.array(keep_mask(actions, [In(("k",), (0, 3))], ["k"])).to_pylist()
    ks = actions.column("partition.k").to_pylist()
    assert ins == [k in (0, 3) for k in ks]
    nulls = pa.array(keep_mask(actions, [IsNull(("s",))], ["k"])).to_pylist()
    assert any(nulls)  # files holding ids divisible by 10 have null s
    unknown = pa.array(keep_mask(actions, [EqualTo(("no_such_col",), 1)], ["k"])).to_pylist()
    assert unknown == [True] * n


def test_table_with_non_hive_layout_is_read_through_the_python_path(spark, tmp_path):
    import pyarrow.parquet as pq
    from deltalake import Schema
    from deltalake.transaction import AddAction, create_table_with_add_actions

    root = tmp_path / "odd"
    os.makedirs(root / "random-prefix")
    pq.write_table(
        pa.table({"id": pa.array([1, 2], pa.int64())}), root / "random-prefix" / "f.parquet"
    )
    schema = Schema.from_arrow(pa.schema([("id", pa.int64()), ("p", pa.string())]))
    create_table_with_add_actions(
        str(root), schema,
        [AddAction("random-prefix/f.parquet", os.path.getsize(root / "random-prefix" / "f.parquet"), {"p": "x"}, 0, True, "{}")],
        partition_by=["p"],
    )  # fmt: skip
    snap = DeltaLog(str(root)).snapshot()
    assert not native_eligible(snap)
    rows = spark.read.format("delta").load(str(root)).collect()
    assert sorted((r.id, r.p) for r in rows) == [(1, "x"), (2, "x")]
