"""Run a small headwater workload in a fresh Spark driver, so that a JVM started with
``-XX:ArchiveClassesAtExit`` archives the classes a test session loads (scripts/test-jvm-opts.sh).

Every test that starts a Spark driver (the suite's workers, and each subprocess of the
crash, CLI and benchmark tests) spends most of its start-up loading and verifying some
20,000 classes; from the archive they are mapped in ready. The workload touches what the
tests touch: Delta writes and reads, SQL, MERGE, JSON/CSV/Parquet sources and a stream.
"""

from __future__ import annotations

import sys
from pathlib import Path

import headwater


def workload(spark, root: Path) -> None:
    """What the tests touch. On a loaded machine a step can fail (the Auto Loader
    stream's Python source connecting back late); the JVM still exits cleanly and writes
    what it loaded."""
    table = str(root / "t")
    rows = spark.range(1000).selectExpr("id", "id % 7 AS k", "cast(id AS string) AS s")
    rows.write.format("delta").partitionBy("k").save(table)
    rows.limit(10).write.format("delta").mode("append").save(table)
    spark.sql(f"DELETE FROM delta.`{table}` WHERE k = 3")
    spark.sql(f"UPDATE delta.`{table}` SET s = 'x' WHERE id < 5")
    rows.limit(20).createOrReplaceTempView("changes")
    spark.sql(
        f"MERGE INTO delta.`{table}` t USING changes s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    spark.read.format("delta").load(table).groupBy("k").count().collect()
    landing = root / "landing"
    for fmt in ("json", "csv", "parquet"):
        rows.write.format(fmt).option("header", "true").save(str(landing / fmt))
        spark.read.format(fmt).option("header", "true").load(str(landing / fmt)).count()
    spark.sql("CREATE TABLE warm AS SELECT * FROM range(10)")
    spark.sql(f"SELECT k, sum(id) FROM delta.`{table}` GROUP BY k").toPandas()
    # Last: on a loaded machine the stream is the step that can fail.
    query = (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.schemaLocation", str(root / "schema"))
        .load(str(landing / "json"))
        .writeStream.format("delta")
        .option("checkpointLocation", str(root / "checkpoint"))
        .trigger(availableNow=True)
        .start(str(root / "bronze"))
    )
    query.awaitTermination()


def main(folder: str) -> None:
    root = Path(folder)
    spark = headwater.session(master="local[2]", warehouse=str(root / "warehouse"))
    try:
        workload(spark, root)
    except Exception as error:  # the classes loaded so far are archived all the same
        print(f"jvm_class_archive: the workload stopped early: {str(error)[:300]}", file=sys.stderr)
    # The archive is written when the JVM exits: close its stdin (the gateway exits on EOF)
    # and wait, rather than let this process's exit kill it mid-write.
    jvm = spark.sparkContext._gateway.proc  # type: ignore[union-attr]
    spark.stop()
    jvm.stdin.close()
    jvm.wait(timeout=300)


if __name__ == "__main__":
    main(sys.argv[1])
