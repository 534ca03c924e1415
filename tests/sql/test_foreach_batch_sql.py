"""SQL on the sessions Spark derives: foreachBatch's clone of the query's session (the upsert
of streaming aggregates as the known platform's and Delta's docs write it) and
``newSession()`` run headwater's statements as the session they come from does."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import functions as F


def land(folder, name, rows):
    (folder / name).write_text("".join(json.dumps({"key": k, "amount": a}) + "\n" for k, a in rows))


FILES = [
    [("a", 1), ("b", 2), ("a", 3)],
    [("c", 5), ("a", 1)],
    [("b", 7), ("d", 1), ("d", 2)],
    [("a", 10), ("e", 4)],
]


def upsert(aggregates, function, checkpoint) -> None:
    """Every batch the aggregates have now, handed to ``function`` in update mode."""
    query = (
        aggregates.writeStream.foreachBatch(function)
        .outputMode("update")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    assert query.exception() is None


def test_foreach_batch_upserts_streaming_aggregates_with_sql_merge(spark, tmp_path):
    landing = tmp_path / "landing"
    landing.mkdir()
    spark.sql("CREATE TABLE fbsql.aggregates (key STRING, n BIGINT, total BIGINT) USING DELTA")
    spark.sql("CREATE TABLE fbsql.batches (batch_id BIGINT, keys BIGINT, seen BOOLEAN) USING DELTA")
    history: list[tuple[int, str]] = []

    def upsertToDelta(microBatchOutputDF, batchId):
        microBatchOutputDF.createOrReplaceTempView("updates")
        microBatchOutputDF.sparkSession.sql("""
          MERGE INTO fbsql.aggregates t USING updates s ON s.key = t.key
          WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *
        """)
        session = microBatchOutputDF.sparkSession
        if batchId == 1:  # the MERGE run again with Delta's idempotent-write settings: once
            session.conf.set("spark.databricks.delta.write.txnAppId", "upserts")
            session.conf.set("spark.databricks.delta.write.txnVersion", str(batchId))
            for _ in range(2):
                session.sql("MERGE INTO fbsql.aggregates t USING updates s ON s.key = t.key "
                            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")  # fmt: skip
            session.conf.unset("spark.databricks.delta.write.txnAppId")
            session.conf.unset("spark.databricks.delta.write.txnVersion")
        session.sql(f"INSERT INTO fbsql.batches SELECT {batchId}, count(*), false FROM updates")
        session.sql(f"UPDATE fbsql.batches SET seen = true WHERE batch_id = {batchId}")
        session.sql("DELETE FROM fbsql.batches WHERE keys = 0")
        last = session.sql("DESCRIBE HISTORY fbsql.aggregates LIMIT 1").first()
        history.append((batchId, last.operation))

    def run() -> None:
        source = (
            spark.readStream.schema("key STRING, amount BIGINT")
            .option("maxFilesPerTrigger", 1)
            .json(str(landing))
        )
        aggregates = source.groupBy("key").agg(
            F.count("*").alias("n"), F.sum("amount").alias("total")
        )
        upsert(aggregates, upsertToDelta, tmp_path / "checkpoint")

    for i in (0, 1):
        land(landing, f"{i}.json", FILES[i])
    run()
    for i in (2, 3):  # a restart from the checkpoint: the aggregation state carries on
        land(landing, f"{i}.json", FILES[i])
    run()

    oracle: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for rows in FILES:
        for key, amount in rows:
            oracle[key][0] += 1
            oracle[key][1] += amount
    got = spark.sql("SELECT key, n, total FROM fbsql.aggregates").collect()
    assert sorted(tuple(r) for r in got) == sorted((k, n, t) for k, (n, t) in oracle.items())
    assert history == [(b, "MERGE") for b in range(len(FILES))]  # one batch a file, once
    batches = spark.sql("SELECT batch_id, keys, seen FROM fbsql.batches ORDER BY batch_id")
    assert [tuple(r) for r in batches.collect()] == [(0, 2, True), (1, 2, True), (2, 2, True),
                                                     (3, 2, True)]  # fmt: skip
    merges = spark.sql("DESCRIBE HISTORY fbsql.aggregates").where("operation = 'MERGE'")
    assert merges.count() == len(FILES) + 1  # batch 1's second run under its txn: skipped


def test_a_new_session_of_the_context_has_the_tables_and_the_statements(spark):
    spark.sql("CREATE TABLE fbsql.other (id BIGINT) USING DELTA")
    spark.sql("INSERT INTO fbsql.other VALUES (1), (2)")
    other = spark.newSession()  # a session state of its own: no data sources, no views
    assert other.sql("SELECT count(*) FROM fbsql.other").first()[0] == 2
    other.sql("UPDATE fbsql.other SET id = 3 WHERE id = 2")
    assert other.sql("DESCRIBE HISTORY fbsql.other LIMIT 1").first().operation == "UPDATE"
    other.range(4, 5).write.format("delta").mode("append").saveAsTable("fbsql.other")
    assert sorted(r.id for r in spark.table("fbsql.other").collect()) == [1, 3, 4]


def test_the_outer_session_s_sql_sees_the_batch_s_view(spark, tmp_path):
    """The same upsert written with the notebook's ``spark.sql``: the view is the batch's
    (Spark keeps it in the batch's session), the statement runs there; outside a batch a
    missing view is still Spark's error."""
    landing = tmp_path / "landing"
    landing.mkdir()
    spark.sql("CREATE TABLE fbsql.outer_aggregates (key STRING, n BIGINT) USING DELTA")
    sizes: list[int] = []

    def upsertToDelta(microBatchOutputDF, batchId):
        microBatchOutputDF.createOrReplaceTempView("outer_updates")
        sizes.append(spark.sql("SELECT count(*) FROM outer_updates").first()[0])
        spark.sql("""
          MERGE INTO fbsql.outer_aggregates t USING outer_updates s ON s.key = t.key
          WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *
        """)

    for i in (0, 1):
        land(landing, f"{i}.json", FILES[i])
    source = spark.readStream.schema("key STRING, amount BIGINT").json(str(landing))
    upsert(source.groupBy("key").agg(F.count("*").alias("n")), upsertToDelta,
           tmp_path / "checkpoint")  # fmt: skip
    assert sizes == [3]
    got = spark.sql("SELECT key, n FROM fbsql.outer_aggregates").collect()
    assert sorted(tuple(r) for r in got) == [("a", 3), ("b", 1), ("c", 1)]
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql("SELECT * FROM outer_updates")
