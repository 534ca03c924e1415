"""SQL on the sessions Spark derives: foreachBatch's clone of the query's session (the upsert
of streaming aggregates as the known platform's and Delta's docs write it) and
``newSession()`` run headwater's statements as the session they come from does."""

from __future__ import annotations

import json
from collections import defaultdict

from pyspark.sql import functions as F


def land(folder, name, rows):
    (folder / name).write_text("".join(json.dumps({"key": k, "amount": a}) + "\n" for k, a in rows))


FILES = [
    [("a", 1), ("b", 2), ("a", 3)],
    [("c", 5), ("a", 1)],
    [("b", 7), ("d", 1), ("d", 2)],
    [("a", 10), ("e", 4)],
]


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
        query = (
            aggregates.writeStream.foreachBatch(upsertToDelta)
            .outputMode("update")
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        assert query.exception() is None

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
