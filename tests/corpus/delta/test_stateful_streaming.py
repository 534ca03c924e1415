"""Stateful streams over Delta tables, and foreachBatch upserts in SQL.

* Apache Spark's Structured Streaming guide, "API using Datasets and DataFrames"
  (https://spark.apache.org/docs/latest/streaming/apis-on-dataframes-and-datasets.html;
  docs/streaming/apis-on-dataframes-and-datasets.md in github.com/apache/spark, commit
  121ee7e9829508844ba00ff1250e0379e878dcc1, read 2026-11-29; Apache-2.0): streaming
  deduplication, with and within a watermark; stream-static joins.
* The known platform's "Apply watermarks to control data processing thresholds"
  (https://docs.databricks.com/aws/en/structured-streaming/watermarks, read 2026-11-29):
  its windowed count.
* The known platform's "Upsert from streaming queries using foreachBatch"
  (https://docs.databricks.com/aws/en/structured-streaming/delta-lake, read 2026-11-29
  from a public copy of the snippet): the SQL form of the upsert.

The snippets start from ``spark.readStream. ...`` or ``df``; here that is a Delta table
(``readStream.format("delta")``), and their results go to Delta tables. Each stream runs
with ``trigger(availableNow=True)`` once per batch of input, so watermarks move between
batches as they do between micro-batches, and late and duplicate events arrive in both.
"""

from __future__ import annotations

import datetime as dt

import pytest
from delta_corpus import assert_table, finish
from pyspark.sql.functions import window

T0 = dt.datetime(2024, 6, 1, 12, 0)


def at(minutes: float) -> dt.datetime:
    return T0 + dt.timedelta(minutes=minutes)


def _append(spark, path: str, rows: list[tuple], schema: str) -> None:
    spark.createDataFrame(rows, schema).write.format("delta").mode("append").save(path)


def _run(df, checkpoint: str, out: str) -> None:
    finish(
        df.writeStream.format("delta")
        .outputMode("append")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start(out)
    )


def _watermarked(batches, delay: float, keep_key):
    """What a watermarked stream lets through, batch by batch: a row older than the
    watermark at its batch's start is dropped (late); ``keep_key(row, state, wm)`` says
    whether any other row is new. The watermark moves to (latest event time - delay) after
    each batch."""
    kept, state = [], {}
    wm = None
    latest = None
    for rows in batches:
        for row in rows:
            if wm is not None and row[1] < wm:
                continue  # late
            if keep_key(row, state, wm):
                kept.append(row)
        times = [r[1] for r in rows]
        latest = max([latest, *times]) if latest else max(times)
        wm = latest - dt.timedelta(minutes=delay)
    return kept


EVENTS = "guid STRING, eventTime TIMESTAMP"
# Rows repeated within a batch are whole duplicates: which copy Spark keeps is not visible.
DEDUP_BATCHES = [
    [("g1", at(0)), ("g1", at(0)), ("g2", at(1)), ("g3", at(20))],
    # the watermark is now 20 min - 10 s: g1 at 0 and g2 at 1 are late; g3 at 20 repeats;
    # g1 at 19.9 is a new (guid, eventTime) within the watermark
    [
        ("g1", at(0)),
        ("g2", at(1)),
        ("g3", at(20)),
        ("g4", at(19.95)),
        ("g5", at(21)),
        ("g1", at(19.9)),
    ],
]


def test_drop_duplicates_with_and_without_watermark(spark, tmp_path):
    """ "Streaming Deduplication": ``dropDuplicates("guid")`` keeps the first row of every
    guid ever seen; with ``withWatermark("eventTime", "10 seconds")`` and
    ``dropDuplicates("guid", "eventTime")`` late rows are dropped and a guid repeats with
    another event time."""
    source = str(tmp_path / "events")
    without, with_wm = str(tmp_path / "without"), str(tmp_path / "with")
    for batch in DEDUP_BATCHES:
        _append(spark, source, batch, EVENTS)
        streamingDf = spark.readStream.format("delta").load(source)
        # doc typo: the Python snippets pass column names one by one; PySpark takes a list
        _run(streamingDf.dropDuplicates(["guid"]), str(tmp_path / "c1"), without)
        _run(
            streamingDf.withWatermark("eventTime", "10 seconds").dropDuplicates(
                ["guid", "eventTime"]
            ),
            str(tmp_path / "c2"),
            with_wm,
        )
    first = {}
    for row in (r for b in DEDUP_BATCHES for r in b):
        first.setdefault(row[0], row)
    assert_table(spark, without, ["guid", "eventTime"], first.values())

    def new_pair(row, state, wm):
        return state.setdefault(row, row) is row

    expected = _watermarked(DEDUP_BATCHES, 10 / 60, new_pair)
    assert_table(spark, with_wm, ["guid", "eventTime"], expected)


def test_drop_duplicates_within_watermark(spark, tmp_path):
    """``withWatermark("eventTime", "10 hours").dropDuplicatesWithinWatermark("guid")``:
    a guid seen again with another event time within the delay is a duplicate."""
    source, out = str(tmp_path / "events"), str(tmp_path / "deduped")
    hours = 60
    batches = [
        [("g1", at(0)), ("g2", at(5))],
        [("g1", at(30)), ("g2", at(9 * hours)), ("g3", at(25 * hours))],
        # the watermark is now 25 - 10 = 15 hours: g3 at 20 h repeats, g1 at 2 h is late
        [("g3", at(20 * hours)), ("g1", at(2 * hours)), ("g6", at(16 * hours))],
    ]
    for batch in batches:
        _append(spark, source, batch, EVENTS)
        streamingDf = spark.readStream.format("delta").load(source)
        deduped = streamingDf.withWatermark("eventTime", "10 hours").dropDuplicatesWithinWatermark(
            ["guid"]  # doc typo: the Python snippet passes "guid"; PySpark takes a list
        )
        _run(deduped, str(tmp_path / "checkpoint"), out)

    def first_of_guid(row, state, wm):
        return state.setdefault(row[0], row) is row  # no state expires in this data

    assert_table(
        spark, out, ["guid", "eventTime"], _watermarked(batches, 10 * hours, first_of_guid)
    )


def _windows(rows, delay_minutes, size_minutes):
    """Append-mode windowed counts per (window, id): the windows the final watermark
    closed, over the rows that were not late."""
    kept = _watermarked(rows, delay_minutes, lambda row, state, wm: True)
    latest = max(r[1] for b in rows for r in b)
    wm = latest - dt.timedelta(minutes=delay_minutes)
    counts: dict = {}
    for ident, when in ((r[0], r[1]) for r in kept):
        minute = (when - T0).total_seconds() // 60
        start = T0 + dt.timedelta(minutes=minute - minute % size_minutes)
        key = (start, start + dt.timedelta(minutes=size_minutes), ident)
        counts[key] = counts.get(key, 0) + 1
    return [(*k, n) for k, n in counts.items() if k[1] <= wm]


def test_windowed_count_with_watermark_append(spark, tmp_path):
    """watermarks: ``withWatermark("event_time", "10 minutes")``, a 5-minute tumbling
    ``window`` per id, ``count()``; append mode writes each window once the watermark
    passes its end, and events later than the watermark are dropped."""
    source, out = str(tmp_path / "events"), str(tmp_path / "counts")
    batches = [
        [("a", at(0.5)), ("a", at(3)), ("b", at(4)), ("a", at(7)), ("b", at(21))],
        [("a", at(6)), ("b", at(12)), (None, at(13)), ("a", at(40))],  # a at 6: late
    ]
    for batch in batches:
        _append(spark, source, batch, "id STRING, event_time TIMESTAMP")
        df = spark.readStream.format("delta").load(source)
        counted = (
            df.withWatermark("event_time", "10 minutes")
            .groupBy(window("event_time", "5 minutes"), "id")
            .count()
        )
        _run(
            counted.selectExpr("window.start", "window.end", "id", "count"),
            str(tmp_path / "c"),
            out,
        )
    assert_table(spark, out, ["start", "end", "id", "count"], _windows(batches, 10, 5))


TYPES = "type STRING, label STRING"
STREAM = "id INT, type STRING"


@pytest.mark.xfail(
    strict=True,
    reason="the static side of a stream-static join is the Delta snapshot read when the "
    "DataFrame was made; the platform joins each micro-batch with the table's latest version",
)
def test_stream_static_join(spark, tmp_path):
    """ "Stream-static Joins": ``streamingDf.join(staticDf, "type")`` and the left outer
    join; the static Delta table changes between micro-batches."""
    static, stream = str(tmp_path / "types"), str(tmp_path / "stream")
    inner, outer = str(tmp_path / "inner"), str(tmp_path / "outer")
    types = [("t1", "one"), ("t2", "two"), (None, "none")]
    batches = [[(1, "t1"), (2, "t3"), (3, None)], [(4, "t2"), (5, "t3")]]
    spark.createDataFrame(types, TYPES).write.format("delta").save(static)
    staticDf = spark.read.format("delta").load(static)
    joined_inner, joined_outer = [], []
    for i, batch in enumerate(batches):
        if i == 1:  # between micro-batches the static table gains t3
            _append(spark, static, [("t3", "three")], TYPES)
            types.append(("t3", "three"))
        _append(spark, stream, batch, STREAM)
        streamingDf = spark.readStream.format("delta").load(stream)
        _run(streamingDf.join(staticDf, "type"), str(tmp_path / "ci"), inner)
        _run(streamingDf.join(staticDf, "type", "left_outer"), str(tmp_path / "co"), outer)
        for ident, kind in batch:
            labels = [label for t, label in types if kind is not None and t == kind]
            joined_inner += [(kind, ident, label) for label in labels]
            joined_outer += [(kind, ident, label) for label in labels] or [(kind, ident, None)]
    assert_table(spark, inner, ["type", "id", "label"], joined_inner)
    assert_table(spark, outer, ["type", "id", "label"], joined_outer)


def test_upsert_foreach_batch_sql(spark, tmp_path):
    """delta-lake (streaming): the upsert in SQL: the micro-batch as view ``updates``,
    ``MERGE INTO aggregates`` through the micro-batch's own session."""
    source = str(tmp_path / "events")
    spark.sql("DROP TABLE IF EXISTS aggregates")
    spark.sql("CREATE TABLE aggregates (key STRING, count BIGINT) USING DELTA")
    batches = [["a", "b", "a"], ["b", "c"]]

    def upsertToDelta(microBatchOutputDF, batchId):
        microBatchOutputDF.createOrReplaceTempView("updates")
        microBatchOutputDF.sparkSession.sql(
            """
            MERGE INTO aggregates t
            USING updates s
            ON s.key = t.key
            WHEN MATCHED THEN UPDATE SET *
            WHEN NOT MATCHED THEN INSERT *
            """
        )

    try:
        for batch in batches:
            _append(spark, source, [(k,) for k in batch], "key STRING")
            streamingAggregatesDF = (
                spark.readStream.format("delta").load(source).groupBy("key").count()
            )
            finish(
                streamingAggregatesDF.writeStream.format("delta")
                .foreachBatch(upsertToDelta)
                .outputMode("update")
                .option("checkpointLocation", str(tmp_path / "checkpoint"))  # the page has none
                .trigger(availableNow=True)  # the page runs continuously: one run per append
                .start()
            )
        everything = [k for b in batches for k in b]
        assert_table(
            spark,
            "aggregates",
            ["key", "count"],
            [(k, everything.count(k)) for k in set(everything)],
        )
    finally:
        spark.sql("DROP TABLE IF EXISTS aggregates")
