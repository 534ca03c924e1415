"""Delta Lake's documentation: the change data feed and Delta tables in streams
(https://docs.delta.io/delta-change-data-feed/, /delta-streaming/; sources
docs/src/content/docs/delta-change-data-feed.mdx and delta-streaming/index.mdx in
github.com/delta-io/delta at tag v4.4.0, commit 88c008d55b38fb8f49a9a80982004cb5b06a2b59,
read 2026-11-29; Apache-2.0).

The snippets build streams without running them (``events.writeStream ... .start(path)``
runs until stopped); each test runs them with ``trigger(availableNow=True)`` once per batch
of generated input, so a restart is part of every stream case. Timestamps the pages print
as examples (``'2021-04-21 05:45:46'``) are replaced by the table's own commit times.
"""

from __future__ import annotations

import datetime as dt
import os

from delta_corpus import assert_table, bag, finish, rs_changes
from deltalake import DeltaTable as RsTable

STUDENT = ["id", "name", "age"]


def _student_history(spark, table: str):
    """Eleven commits on a table created with the change data feed; the changes each makes,
    computed in Python: (id, name, age, change type, version)."""
    changes = []
    rows: dict[int, tuple] = {}
    for step in range(10):
        version = step + 1  # version 0 is the CREATE TABLE
        if step % 3 == 0:  # insert two students
            new = [(step * 10 + k, f"s{step}{k}", 18 + k) for k in range(2)]
            spark.createDataFrame(new, "id INT, name STRING, age INT").write.format("delta").mode(
                "append"
            ).saveAsTable(table)
            rows.update({r[0]: r for r in new})
            changes += [(*r, "insert", version) for r in new]
        elif step % 3 == 1:  # everyone a year older
            spark.sql(f"UPDATE {table} SET age = age + 1")
            for key, r in sorted(rows.items()):
                after = (r[0], r[1], r[2] + 1)
                changes += [(*r, "update_preimage", version), (*after, "update_postimage", version)]
                rows[key] = after
        else:  # the oldest leave
            oldest = max(r[2] for r in rows.values())
            spark.sql(f"DELETE FROM {table} WHERE age = {oldest}")
            for key, r in sorted(rows.items()):
                if r[2] == oldest:
                    changes.append((*r, "delete", version))
                    del rows[key]
    return changes, list(rows.values())


def _between(path: str, before: int, after: int) -> str:
    """A time halfway between two commits, as ``yyyy-MM-dd HH:mm:ss.SSS`` (UTC, the
    session's time zone): ``after`` is the first version at or after it."""
    ms = {c["version"]: c["timestamp"] for c in RsTable(path).history()}
    mid = (ms[before] + ms[after]) / 2000
    return dt.datetime.fromtimestamp(mid, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def test_change_data_feed_batch_reads(spark, tmp_path):
    """Enable the feed on a new table (CREATE TABLE ... TBLPROPERTIES), read it with
    ``table_changes`` (versions, timestamps, start only) and the reader's options, by name
    and by path."""
    spark.sql("DROP TABLE IF EXISTS student")
    spark.sql(
        "CREATE TABLE student (id INT, name STRING, age INT) TBLPROPERTIES (delta.enableChangeDataFeed = true)"
    )
    try:
        changes, final = _student_history(spark, "student")
        path = spark.sql("DESCRIBE DETAIL student").first().location.removeprefix("file:")
        assert_table(spark, "student", STUDENT, final)
        cols = [*STUDENT, "_change_type", "_commit_version"]

        def between(first, last=None):
            return bag(c for c in changes if c[4] >= first and (last is None or c[4] <= last))

        def got(df):
            return bag(df.select(*cols).collect())

        assert got(spark.sql("SELECT * FROM table_changes('student', 0, 10)")) == between(0, 10)
        start, end = _between(path, 1, 2), _between(path, 7, 8)
        timed = spark.sql(f"SELECT * FROM table_changes('student', '{start}', '{end}')")
        assert got(timed) == between(2, 7)
        assert got(spark.sql("SELECT * FROM table_changes('student', 0)")) == between(0)

        reader = spark.read.format("delta").option("readChangeFeed", "true")
        df = reader.option("startingVersion", 0).option("endingVersion", 10).table("student")
        assert got(df) == between(0, 10)
        df = (
            spark.read.format("delta")
            .option("readChangeFeed", "true")
            .option("startingTimestamp", start)
            .option("endingTimestamp", end)
            .table("student")
        )
        assert got(df) == between(2, 7)
        df = (
            spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0)
        )
        assert got(df.table("student")) == between(0)
        df = (
            spark.read.format("delta")
            .option("readChangeFeed", "true")
            .option("startingTimestamp", start)
            .load(path)  # pathToMyDeltaTable
        )
        assert got(df) == between(2)
        assert rs_changes(path, 0, STUDENT) == between(0)
    finally:
        spark.sql("DROP TABLE IF EXISTS student")


def test_change_data_feed_enabled_later(spark):
    """``ALTER TABLE ... SET TBLPROPERTIES (delta.enableChangeDataFeed = true)`` on a table
    with history, and the session default for new tables."""
    spark.sql("DROP TABLE IF EXISTS myDeltaTable")
    spark.sql("DROP TABLE IF EXISTS student")
    spark.sql("CREATE TABLE myDeltaTable (id INT, name STRING, age INT) USING DELTA")
    spark.sql("INSERT INTO myDeltaTable VALUES (1, 'a', 20), (2, 'b', 21)")
    try:
        spark.sql("ALTER TABLE myDeltaTable SET TBLPROPERTIES (delta.enableChangeDataFeed = true)")
        spark.sql("UPDATE myDeltaTable SET age = 30 WHERE id = 2")
        feed = (
            spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 3)
        )
        want = [(2, "b", 21, "update_preimage", 3), (2, "b", 30, "update_postimage", 3)]
        cols = [*STUDENT, "_change_type", "_commit_version"]
        assert bag(feed.table("myDeltaTable").select(*cols).collect()) == bag(want)
        assert_table(spark, "myDeltaTable", STUDENT, [(1, "a", 20), (2, "b", 30)])

    finally:
        spark.sql("DROP TABLE IF EXISTS myDeltaTable")


def test_change_data_feed_for_all_new_tables(spark):
    """``set spark.databricks.delta.properties.defaults.enableChangeDataFeed = true;``:
    every new table records its changes."""
    spark.sql("DROP TABLE IF EXISTS student")
    try:
        spark.sql("set spark.databricks.delta.properties.defaults.enableChangeDataFeed = true;")
        spark.sql("CREATE TABLE student (id INT, name STRING, age INT) USING DELTA")
        properties = spark.sql("DESCRIBE DETAIL student").first().properties
        assert properties.get("delta.enableChangeDataFeed") == "true"
        spark.sql("INSERT INTO student VALUES (1, 'a', 20)")
        spark.sql("UPDATE student SET age = 21")
        feed = spark.sql("SELECT * FROM table_changes('student', 2)")
        got = feed.select(*STUDENT, "_change_type").collect()
        assert bag(got) == bag([(1, "a", 20, "update_preimage"), (1, "a", 21, "update_postimage")])
    finally:
        spark.conf.unset("spark.databricks.delta.properties.defaults.enableChangeDataFeed")
        spark.sql("DROP TABLE IF EXISTS student")


def test_change_data_feed_by_path_function(spark, tmp_path):
    """``SELECT * FROM table_changes_by_path('\\path', '2021-04-21 05:45:46')``."""
    path = str(tmp_path / "student")  # changed: path (was '\\path')
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id INT, name STRING, age INT) USING DELTA "
        "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
    )
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a', 20)")
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 1")
    start = _between(path, 1, 2)
    got = spark.sql(f"SELECT * FROM table_changes_by_path('{path}', '{start}')")
    assert bag(got.select(*STUDENT, "_change_type").collect()) == [(1, "a", 20, "delete")]


def _feed_table(spark):
    """``myDeltaTable``, made with the change data feed, after :func:`_student_history`."""
    spark.sql("DROP TABLE IF EXISTS myDeltaTable")
    spark.sql(
        "CREATE TABLE myDeltaTable (id INT, name STRING, age INT) USING DELTA "
        "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
    )
    return _student_history(spark, "myDeltaTable")


def test_change_data_feed_streaming_reads(spark, tmp_path):
    """Streaming reads of the feed: from version 0 by name, and with no start (the latest
    snapshot as inserts, then the changes after it)."""
    changes, final = _feed_table(spark)
    try:
        cols = [*STUDENT, "_change_type", "_commit_version"]
        first = (
            spark.readStream.format("delta")
            .option("readChangeFeed", "true")
            .option("startingVersion", 0)
            .table("myDeltaTable")
        )
        third = (
            spark.readStream.format("delta").option("readChangeFeed", "true").table("myDeltaTable")
        )
        outputs = {}
        for name, stream in (("first", first), ("third", third)):
            out = str(tmp_path / name)
            outputs[name] = out
            query = (
                stream.select(*cols)
                .writeStream.format("delta")
                .option("checkpointLocation", str(tmp_path / f"{name}_checkpoint"))
                .trigger(availableNow=True)
                .start(out)
            )
            finish(query)
        assert_table(spark, outputs["first"], cols, changes)
        latest = max(c[4] for c in changes)
        assert_table(spark, outputs["third"], cols, [(*r, "insert", latest) for r in final])

        row = final[0]
        spark.sql(f"UPDATE myDeltaTable SET name = upper(name) WHERE id = {row[0]}")  # a change
        again = (
            spark.readStream.format("delta").option("readChangeFeed", "true").table("myDeltaTable")
        )
        finish(
            again.select(*cols)
            .writeStream.format("delta")
            .option("checkpointLocation", str(tmp_path / "third_checkpoint"))
            .trigger(availableNow=True)
            .start(outputs["third"])
        )
        update = [
            (*row, "update_preimage", latest + 1),
            (row[0], row[1].upper(), row[2], "update_postimage", latest + 1),
        ]
        assert_table(
            spark, outputs["third"], cols, [(*r, "insert", latest) for r in final] + update
        )
    finally:
        spark.sql("DROP TABLE IF EXISTS myDeltaTable")


def test_change_data_feed_streaming_from_timestamp(spark, tmp_path):
    """The second streaming read: ``startingTimestamp`` on a path."""
    changes, _ = _feed_table(spark)
    try:
        path = spark.sql("DESCRIBE DETAIL myDeltaTable").first().location.removeprefix("file:")
        cols = [*STUDENT, "_change_type", "_commit_version"]
        stream = (
            spark.readStream.format("delta")
            .option("readChangeFeed", "true")
            .option("startingTimestamp", _between(path, 3, 4))  # the page: "2021-04-21 05:35:43"
            .load(path)  # changed: path (was /pathToMyDeltaTable)
        )
        out = str(tmp_path / "second")
        finish(
            stream.select(*cols)
            .writeStream.format("delta")
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start(out)
        )
        assert_table(spark, out, cols, [c for c in changes if c[4] >= 4])
    finally:
        spark.sql("DROP TABLE IF EXISTS myDeltaTable")


def _append(spark, path: str, rows: list[tuple]) -> None:
    spark.createDataFrame(rows, "customerId STRING, amount INT").write.format("delta").mode(
        "append"
    ).save(path)


BATCHES = [[("c1", 5), ("c2", 7), (None, 1)], [("c1", 3), ("c3", 2), (None, 4)]]


def test_streaming_sink_append_by_path_and_by_name(spark, tmp_path):
    """ "Append mode": ``events.writeStream ... .start("/delta/events")`` and
    ``.toTable("events")``, each run after every batch of input: every row once."""
    source = str(tmp_path / "source")
    target = str(tmp_path / "delta" / "events")  # changed: path (was /delta/events)
    spark.sql("DROP TABLE IF EXISTS events")
    try:
        for batch in BATCHES:
            _append(spark, source, batch)
            events = spark.readStream.format("delta").load(source)
            finish(
                events.writeStream.format("delta")  # doc typo: the page has no line continuations
                .outputMode("append")
                .option(
                    "checkpointLocation", str(tmp_path / "delta" / "_checkpoints")
                )  # changed: path
                .trigger(availableNow=True)
                .start(target)
            )
            finish(
                events.writeStream.format("delta")
                .outputMode("append")
                .option(
                    "checkpointLocation", str(tmp_path / "delta" / "events" / "_checkpoints")
                )  # changed: path
                .trigger(availableNow=True)
                .toTable("events")
            )
        everything = [r for b in BATCHES for r in b]
        assert_table(spark, target, ["customerId", "amount"], everything)
        assert_table(spark, "events", ["customerId", "amount"], everything)
    finally:
        spark.sql("DROP TABLE IF EXISTS events")


def test_streaming_sink_complete_mode(spark, tmp_path):
    """ "Complete mode": a running count per customer replaces the table every batch."""
    events = str(tmp_path / "delta" / "events")  # changed: path (was /tmp/delta/events)
    by_customer = str(tmp_path / "delta" / "eventsByCustomer")  # changed: path
    seen: list[tuple] = []
    for batch in BATCHES:
        _append(spark, events, batch)
        seen += batch
        finish(
            spark.readStream.format("delta")
            .load(events)
            .groupBy("customerId")
            .count()
            .writeStream.format("delta")
            .outputMode("complete")
            .option(
                "checkpointLocation", str(tmp_path / "delta" / "eventsByCustomer" / "_checkpoints")
            )  # changed: path
            .trigger(availableNow=True)
            .start(by_customer)
        )
        keys = {r[0] for r in seen}
        counts = [(k, sum(1 for r in seen if r[0] == k)) for k in keys]
        assert_table(spark, by_customer, ["customerId", "count"], counts)


def test_idempotent_writes_in_foreach_batch(spark, tmp_path):
    """ "Idempotent table writes in foreachBatch": one batch written to two tables with
    ``txnAppId``/``txnVersion``; the batch is run again after a crash that lost the
    stream's commit record, and both writes must be skipped."""
    source = str(tmp_path / "source")
    location1, location2 = str(tmp_path / "location1"), str(tmp_path / "location2")
    checkpoint = str(tmp_path / "checkpoint")
    _append(spark, source, BATCHES[0])
    app_id = "corpus-idempotent-writes"  # the page: a unique string used as an application ID

    def writeToDeltaLakeTableIdempotent(batch_df, batch_id):
        batch_df.write.format("delta").option("txnVersion", batch_id).option(
            "txnAppId", app_id
        ).save(location1)  # changed: format(...), save(...) filled
        batch_df.write.format("delta").option("txnVersion", batch_id).option(
            "txnAppId", app_id
        ).save(location2)  # changed: format(...), save(...) filled

    def run():
        finish(
            spark.readStream.format("delta")
            .load(source)
            .writeStream.foreachBatch(writeToDeltaLakeTableIdempotent)
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )

    run()
    for name in ("0", ".0.crc"):  # the crash: batch 0 ran but was not recorded
        if os.path.exists(os.path.join(checkpoint, "commits", name)):
            os.remove(os.path.join(checkpoint, "commits", name))
    run()  # batch 0 runs again with the same txnVersion
    for location in (location1, location2):
        assert_table(spark, location, ["customerId", "amount"], BATCHES[0])


def test_schema_tracking_location(spark, tmp_path):
    """ "Tracking non-additive schema changes": a stream from a column-mapped table with
    ``schemaTrackingLocation`` inside the checkpoint."""
    for name in ("delta_source_table", "output_table"):
        spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.sql(
        "CREATE TABLE delta_source_table (id INT, name STRING) USING DELTA TBLPROPERTIES "
        "('delta.columnMapping.mode' = 'name', 'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')"
    )
    spark.sql("INSERT INTO delta_source_table VALUES (1, 'a'), (2, NULL)")
    checkpoint_path = str(tmp_path / "checkpointLocation")  # changed: path
    try:
        query = (
            spark.readStream.option("schemaTrackingLocation", checkpoint_path)
            .table("delta_source_table")
            .writeStream.option("checkpointLocation", checkpoint_path)
            .trigger(availableNow=True)  # the page's stream runs until stopped
            .toTable("output_table")
        )
        finish(query)
        assert_table(spark, "output_table", ["id", "name"], [(1, "a"), (2, None)])
    finally:
        for name in ("delta_source_table", "output_table"):
            spark.sql(f"DROP TABLE IF EXISTS {name}")
