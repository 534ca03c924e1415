"""Parity of stream reads and writes: the ``delta`` source's options into the ``delta``
sink (by path and by name), output modes, and a ``foreachBatch`` upsert, each run with
``availableNow`` (tests/engines/parity/matrix.py says how they are compared)."""

from __future__ import annotations

import pytest

from tests.engines.parity import matrix
from tests.engines.parity.matrix import (
    delta_table_class,
    location,
    raised,
    ran,
    row,
    table_rows,
)

SAMPLE = "SELECT id, CAST(id % 3 AS INT) AS part, concat('n', id) AS name FROM range({}, {})"


def append(spark, path: str, start: int, stop: int) -> None:
    """Rows [start, stop) in one commit of one file (a stream's batches count files)."""
    rows = spark.sql(SAMPLE.format(start, stop)).coalesce(1)
    rows.write.format("delta").mode("append").save(path)


def source(spark, root: str, change_feed: bool = False) -> str:
    """A table of three appends, versions 0-2 (with the change feed: 1-3)."""
    path = f"{root}/src"
    if change_feed:
        spark.sql(
            f"CREATE TABLE delta.`{path}` (id BIGINT, part INT, name STRING) USING delta "
            "TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')"
        )
    for start in (0, 4, 8):
        append(spark, path, start, start + 4)
    return path


def drain(df, root: str, mode: str = "append", name: str = "", *partitions: str) -> list[int]:
    """``df`` into the sink ``root``/sink (or the table ``name``) until it has nothing
    new; the rows of each batch that had any."""
    writer = df.writeStream.format("delta").outputMode(mode).trigger(availableNow=True)
    writer = writer.option("checkpointLocation", f"{root}/checkpoint").partitionBy(*partitions)
    query = writer.toTable(name) if name else writer.start(f"{root}/sink")
    query.awaitTermination()
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]


def read(spark, path: str, **options):
    return spark.readStream.format("delta").options(**options).load(path)


# -- the source's options -------------------------------------------------------------------


def stream(spark, root):
    src = source(spark, root)
    first = drain(read(spark, src), root)
    append(spark, src, 100, 103)
    return ran([first, drain(read(spark, src), root)], src=src, sink=f"{root}/sink")


def partitioned_sink(spark, root):
    src = source(spark, root)
    return ran(drain(read(spark, src), root, "append", "", "part"), sink=f"{root}/sink")


def streamed(spark, root: str, **options: str) -> dict:
    """The source's rows streamed with ``options`` into the sink: the batches' sizes."""
    src = source(spark, root)
    return ran(drain(read(spark, src, **options), root), sink=f"{root}/sink")


def starting_version(spark, root):
    return streamed(spark, root, startingVersion="1")


def starting_version_latest(spark, root):
    """Both runs read nothing: the second starts at the latest version again (a run that
    read nothing left no position). No sink compared: delta-spark's source runs no batch,
    so there is none; Spark runs a first, empty, batch of headwater's (Python) source,
    which makes an empty sink (docs/engines.md, "Behaviours that differ")."""
    src = source(spark, root)
    first = drain(read(spark, src, startingVersion="latest"), root)
    append(spark, src, 100, 103)
    return ran([first, drain(read(spark, src, startingVersion="latest"), root)])


def max_files_per_trigger(spark, root):
    return streamed(spark, root, maxFilesPerTrigger="1")


def skip_change_commits(spark, root):
    src = source(spark, root)
    first = drain(read(spark, src, skipChangeCommits="true"), root)
    spark.sql(f"UPDATE delta.`{src}` SET name = 'updated' WHERE part = 1")
    spark.sql(f"DELETE FROM delta.`{src}` WHERE id = 0")
    append(spark, src, 100, 103)
    second = drain(read(spark, src, skipChangeCommits="true"), root)
    return ran([first, second], src=src, sink=f"{root}/sink")


def a_change_commit_stops_the_stream(spark, root):
    src = source(spark, root)
    first = drain(read(spark, src), root)
    spark.sql(f"UPDATE delta.`{src}` SET name = 'updated' WHERE part = 1")
    return ran([first, raised(lambda: drain(read(spark, src), root))], sink=f"{root}/sink")


def changed(spark, root: str) -> str:
    """The change feed's table: three appends, then an UPDATE and a DELETE (versions 4, 5)."""
    src = source(spark, root, change_feed=True)
    spark.sql(f"UPDATE delta.`{src}` SET name = 'updated' WHERE part = 1")
    spark.sql(f"DELETE FROM delta.`{src}` WHERE id < 3")
    return src


def read_change_feed(spark, root):
    """The feed into a table: its commit timestamps aside, as the tables' commits happened
    at other times on each engine (the source's feed, timestamps too, is compared as each
    engine reads it: change_feed_commit_timestamps)."""
    src = changed(spark, root)
    feed = read(spark, src, readChangeFeed="true", startingVersion="2")
    return ran(drain(feed.drop("_commit_timestamp"), root), src=src, sink=f"{root}/sink")


def change_feed_commit_timestamps(spark, root):
    return ran(src=changed(spark, root))


# -- the sink --------------------------------------------------------------------------------


def to_table(spark, root):
    src = source(spark, root)
    spark.read.format("delta").load(src).write.format("delta").saveAsTable("streams_named_src")
    found = drain(spark.readStream.table("streams_named_src"), root, name="streams_to_table")
    rows = table_rows(spark, "streams_to_table")
    return ran((found, rows), sink=location(spark, "streams_to_table"))


def to_table_without_format(spark, root):
    writer = read(spark, source(spark, root)).writeStream.trigger(availableNow=True)
    query = writer.option("checkpointLocation", f"{root}/checkpoint").toTable("streams_default")
    query.awaitTermination()
    return ran(table_rows(spark, "streams_default"), sink=location(spark, "streams_default"))


def complete_mode(spark, root):
    src = source(spark, root)
    counts = read(spark, src).groupBy("part").count()
    first = drain(counts, root, mode="complete")
    append(spark, src, 100, 103)
    second = drain(read(spark, src).groupBy("part").count(), root, mode="complete")
    return ran([first, second], sink=f"{root}/sink")


def update_mode_into_delta_fails(spark, root):
    counts = read(spark, source(spark, root)).groupBy("part").count()
    return ran(raised(lambda: drain(counts, root, mode="update")))


def upsert(spark, target: str):
    """A ``foreachBatch`` function: each batch MERGEd into ``target`` by id, through the
    engine's ``DeltaTable``."""

    def each(batch, batch_id: int) -> None:
        table = delta_table_class(spark).forPath(spark, target)
        merge = table.alias("t").merge(batch.alias("s"), "t.id = s.id")
        merge.whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()

    return each


def foreach_batch_upsert(spark, root):
    src, target = source(spark, root), f"{root}/target"
    old = spark.sql(SAMPLE.format(0, 2)).selectExpr("id", "part", "'old' AS name")
    old.write.format("delta").save(target)
    for run in range(2):
        if run:  # rows of existing ids, renamed
            append(spark, src, 4, 6)
        writer = read(spark, src).writeStream.foreachBatch(upsert(spark, target))
        writer = writer.option("checkpointLocation", f"{root}/checkpoint")
        writer.trigger(availableNow=True).start().awaitTermination()
    return ran(src=src, target=target)


def foreach_batch_update_mode(spark, root):
    src, target = source(spark, root), f"{root}/target"
    spark.sql("SELECT 0 AS part, 0L AS count").write.format("delta").save(target)

    def counts():
        stream = read(spark, src).groupBy("part").count().writeStream.outputMode("update")
        stream = stream.foreachBatch(upsert_counts(spark, target))
        stream = stream.option("checkpointLocation", f"{root}/checkpoint")
        stream.trigger(availableNow=True).start().awaitTermination()

    counts()
    append(spark, src, 100, 103)
    counts()
    return ran(target=target)


def upsert_counts(spark, target: str):
    def each(batch, batch_id: int) -> None:
        table = delta_table_class(spark).forPath(spark, target)
        merge = table.alias("t").merge(batch.alias("s"), "t.part = s.part")
        merge.whenMatchedUpdate(set={"count": "s.count"}).whenNotMatchedInsertAll().execute()

    return each


OPERATIONS = [
    row(stream),
    row(partitioned_sink),
    row(starting_version),
    row(starting_version_latest),
    row(max_files_per_trigger),
    row(skip_change_commits),
    row(a_change_commit_stops_the_stream),
    row(read_change_feed, protocol_in="create_with_change_data_feed"),
    row(
        change_feed_commit_timestamps,
        change_times=True,
        protocol_in="create_with_change_data_feed",
    ),
    row(to_table),
    row(to_table_without_format),
    row(complete_mode),
    row(update_mode_into_delta_fails),
    row(foreach_batch_upsert),
    row(foreach_batch_update_mode),
]


@pytest.mark.parametrize("op", OPERATIONS)
def test_streams(parity_runs, op):
    matrix.assert_parity(parity_runs[__file__], op)
