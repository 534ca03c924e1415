"""``s3://`` on a pip-only install: the Python source's scan reads only the columns a query
uses (Spark prunes no column of a Python source), with the same rows as a full read."""

from __future__ import annotations

from pyspark.sql import functions as F


def scan_columns(df) -> list[str]:
    """The columns the plan's one scan reads."""
    leaves = df._jdf.queryExecution().optimizedPlan().collectLeaves()
    assert leaves.size() == 1
    output = leaves.apply(0).output()
    return [output.apply(i).name() for i in range(output.size())]


def write_wide(spark, path: str) -> None:
    spark.range(1000).selectExpr(
        "id", "id % 7 AS k", "CAST(id * 3 AS DOUBLE) AS v", "repeat('x', 40) AS s"
    ).repartition(3).write.format("delta").save(path)


# (columns, clauses of CREATE TABLE, the rows appended as expressions over `id`)
WITH_VECTORS = (
    "id BIGINT, p BIGINT, s STRING",
    "PARTITIONED BY (p) TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')",
    ("id", "id % 3 AS p", "CAST(id AS STRING) AS s"),
)
MAPPED = (
    "id BIGINT, a STRING, b DOUBLE",
    "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
    ("id", "CAST(id AS STRING) AS a", "id / 2 AS b"),
)


def create(spark, path: str, n: int, table: tuple[str, str, tuple[str, ...]]) -> None:
    """A table made by SQL (for its properties), then ``n`` rows appended."""
    ddl, clauses, exprs = table
    spark.sql(f"CREATE TABLE delta.`{path}` ({ddl}) USING delta {clauses}")
    spark.range(n).selectExpr(*exprs).write.format("delta").mode("append").save(path)


def test_aggregate_reads_only_its_columns(s3_spark, s3_root):
    spark, path = s3_spark, f"{s3_root}/wide"
    write_wide(spark, path)
    df = spark.read.format("delta").load(path)
    assert df.columns == ["id", "k", "v", "s"]  # the loaded frame keeps every column
    total = df.selectExpr("count(*) AS n", "sum(k) AS k", "sum(v) AS v")
    assert scan_columns(total) == ["k", "v"]
    assert tuple(total.first()) == (1000, sum(i % 7 for i in range(1000)), 3.0 * 499500)
    by_k = df.groupBy("k").agg(F.max("id").alias("top"))  # groupBy: not narrowed, exact
    assert sorted(tuple(r) for r in by_k.collect())[0] == (0, 994)


def test_filter_then_select_reads_the_filter_and_selected_columns(s3_spark, s3_root):
    spark, path = s3_spark, f"{s3_root}/wide"
    write_wide(spark, path)
    df = spark.read.format("delta").load(path)
    picked = df.where("k = 5").select("id", F.col("v") * 2)
    assert scan_columns(picked) == ["id", "k", "v"]
    assert sorted(tuple(r) for r in picked.collect()) == [
        (i, i * 6.0) for i in range(1000) if i % 7 == 5
    ]
    # A column bound to the whole scan does not resolve on a narrow one: the whole scan.
    bound = df.select(df.id).where(df.id < 3)
    assert sorted(r.id for r in bound.collect()) == [0, 1, 2]


def test_deletion_vectors_and_partition_columns_keep_their_rows(s3_spark, s3_root):
    spark, path = s3_spark, f"{s3_root}/dv"
    create(spark, path, 300, WITH_VECTORS)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id % 10 = 0")
    df = spark.read.format("delta").load(path)
    counts = df.select("p").groupBy("p").count()
    assert scan_columns(df.select("p")) == ["id", "p"]  # a stored column carries the rows
    expected = {p: sum(1 for i in range(300) if i % 3 == p and i % 10) for p in range(3)}
    assert {r.p: r["count"] for r in counts.collect()} == expected
    assert df.agg(F.count(F.lit(1))).first()[0] == 270
    assert scan_columns(df.agg(F.count(F.lit(1)))) == ["id"]


def test_column_mapped_columns_are_read_under_their_physical_names(s3_spark, s3_root):
    spark, path = s3_spark, f"{s3_root}/mapped"
    create(spark, path, 20, MAPPED)
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN b TO half")
    picked = spark.read.format("delta").load(path).select("half").where("half > 8")
    assert scan_columns(picked) == ["half"]
    assert sorted(r.half for r in picked.collect()) == [8.5, 9.0, 9.5]
