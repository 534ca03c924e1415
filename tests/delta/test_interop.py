"""Tables headwater writes are valid Delta for other readers (delta-rs, polars, delta-spark)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import polars as pl
from deltalake import DeltaTable


def test_delta_rs_and_polars_read_back_identical_rows(spark, table_path):
    df = spark.createDataFrame(
        [
            (1, "a", Decimal("1.50"), dt.date(2024, 1, 1), dt.datetime(2024, 1, 1, 1, tzinfo=dt.timezone.utc), [1, 2], {"x": 1}, (1, "n")),
            (2, None, None, None, None, None, None, None),
            (3, "c", Decimal("-2.25"), dt.date(2023, 12, 31), dt.datetime(2020, 6, 1, tzinfo=dt.timezone.utc), [], {}, (None, None)),
        ],
        "id long, s string, amount decimal(10,2), day date, ts timestamp, arr array<int>, m map<string,int>, st struct<a:int,b:string>",
    )  # fmt: skip
    df.write.format("delta").option("partitionBy", "day").save(table_path)
    spark.range(4, 6).selectExpr("id", "'z' as s").write.format("delta").mode("append").save(
        table_path
    )
    ours = (
        spark.read.format("delta")
        .load(table_path)
        .toPandas()
        .sort_values("id")
        .reset_index(drop=True)
    )

    by_rs = (
        DeltaTable(table_path)
        .to_pyarrow_table()
        .to_pandas()
        .sort_values("id")
        .reset_index(drop=True)
    )
    assert list(by_rs["id"]) == list(ours["id"]) == [1, 2, 3, 4, 5]
    assert list(by_rs["s"].fillna("NULL")) == list(ours["s"].fillna("NULL"))
    assert [None if v is None else str(v) for v in by_rs["amount"]] == [
        None if v is None else str(v) for v in ours["amount"]
    ]
    assert list(by_rs["day"].astype(str)) == list(ours["day"].astype(str))

    by_polars = pl.read_delta(table_path).sort("id")
    assert by_polars["id"].to_list() == [1, 2, 3, 4, 5]
    assert by_polars["s"].to_list() == ["a", None, "c", "z", "z"]
    assert by_polars["ts"].to_list()[0] == dt.datetime(2024, 1, 1, 1, tzinfo=dt.timezone.utc)
    assert by_polars["arr"].to_list()[:3] == [[1, 2], None, []]
    assert by_polars["st"].to_list()[0] == {"a": 1, "b": "n"}


def test_protocol_is_one_delta_spark_accepts(spark, table_path):
    spark.range(3).selectExpr("id", "cast(id as int) as n").write.format("delta").save(table_path)
    protocol = DeltaTable(table_path).protocol()
    assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 2)
    assert not protocol.writer_features and not protocol.reader_features
    # Columns from DataFrames are nullable, as delta-spark writes them: no invariants needed.
    assert all(f.nullable for f in DeltaTable(table_path).schema().fields)
