"""Delta Lake's documentation: the quickstart's SQL tab and the table utility commands
(https://docs.delta.io/quick-start/, /delta-utility/, /optimizations-oss/; sources
docs/src/content/docs/quick-start.mdx, delta-utility/index.mdx, optimizations-oss/index.mdx
in github.com/delta-io/delta at tag v4.4.0, commit
88c008d55b38fb8f49a9a80982004cb5b06a2b59, read 2026-11-29; Apache-2.0).

The pages list statements one under another with placeholders (``pathToTable``,
``<version>``); each test fills them with a table it made and runs the statements in the
page's order. ``# changed:`` marks a path (README), ``# doc typo:`` what the page has that
cannot run as printed.
"""

from __future__ import annotations

import os
import time

import pytest
from delta_corpus import assert_table, bag, history_operations, live_files, rs_table
from deltalake import DeltaTable as RsTable

from headwater.delta.tables import DeltaTable  # changed: was from delta.tables import *


def test_quickstart_sql_tab(spark, tmp_path):
    """quick-start.mdx, the SQL tab of every step: CTAS on a path, read, overwrite,
    UPDATE, DELETE, a MERGE from a temporary view, time travel."""
    p = str(tmp_path / "delta-table")  # changed: path (was /tmp/delta-table)
    spark.sql(f"CREATE TABLE delta.`{p}` USING DELTA AS SELECT col1 as id FROM VALUES 0,1,2,3,4;")
    assert bag(spark.sql(f"SELECT * FROM delta.`{p}`;").collect()) == bag((i,) for i in range(5))
    spark.sql(f"INSERT OVERWRITE delta.`{p}` SELECT col1 as id FROM VALUES 5,6,7,8,9;")
    ids = [5, 6, 7, 8, 9]
    assert_table(spark, p, ["id"], [(i,) for i in ids])

    spark.sql(f"UPDATE delta.`{p}` SET id = id + 100 WHERE id % 2 == 0;")
    ids = [i + 100 if i % 2 == 0 else i for i in ids]
    assert_table(spark, p, ["id"], [(i,) for i in ids])
    spark.sql(f"DELETE FROM delta.`{p}` WHERE id % 2 == 0;")
    ids = [i for i in ids if i % 2 != 0]
    assert_table(spark, p, ["id"], [(i,) for i in ids])
    spark.sql("CREATE TEMP VIEW newData AS SELECT col1 AS id FROM VALUES 1,3,5,7,9,11,13,15,17,19;")
    spark.sql(
        f"""MERGE INTO delta.`{p}` AS oldData
        USING newData
        ON oldData.id = newData.id
        WHEN MATCHED
          THEN UPDATE SET id = newData.id
        WHEN NOT MATCHED
          THEN INSERT (id) VALUES (newData.id);"""
    )
    ids = sorted(set(ids) | {1, 3, 5, 7, 9, 11, 13, 15, 17, 19})
    assert bag(spark.sql(f"SELECT * FROM delta.`{p}`;").collect()) == bag((i,) for i in ids)
    assert_table(spark, p, ["id"], [(i,) for i in ids])
    old = spark.sql(f"SELECT * FROM delta.`{p}` VERSION AS OF 0;").collect()
    assert bag(old) == bag((i,) for i in range(5))
    spark.catalog.dropTempView("newData")


def _events(spark, name: str, path: str) -> None:
    """A table partitioned by date, written in several small appends (files to compact)."""
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    for day in ("2021-11-17", "2021-11-18", "2021-11-18"):
        rows = [(day, t, i) for i, t in enumerate(("click", "view", "buy", None))]
        spark.createDataFrame(rows, "date STRING, eventType STRING, n INT").write.format(
            "delta"
        ).mode("append").partitionBy("date").option("path", path).saveAsTable(name)


EVENT_ROWS = [
    (day, t, i)
    for day in ("2021-11-17", "2021-11-18", "2021-11-18")
    for i, t in enumerate(("click", "view", "buy", None))
]


def _files_by_partition(path: str) -> dict[str, int]:
    """Live files per ``date`` partition, as delta-rs lists them."""
    counts: dict[str, int] = {}
    for action in live_files(path):
        day = action["partition.date"]
        counts[day] = counts.get(day, 0) + 1
    return counts


def test_vacuum(spark, tmp_path):
    """delta-utility: VACUUM by name, by quoted path and by ``delta.`path```, DRY RUN, a
    retention below 7 days refused, ``vacuum()`` and ``vacuum(100)``."""
    path = str(tmp_path / "events")  # changed: path (was /data/events)
    _events(spark, "eventsTable", path)
    stray = os.path.join(path, "date=2021-11-17", "part-stray.snappy.parquet")
    with open(stray, "wb") as f:
        f.write(b"not referenced by any version")  # a file no commit names: a killed writer's
    month_ago = time.time() - 30 * 86400
    os.utime(stray, (month_ago, month_ago))
    live = sorted(a["path"] for a in live_files(path))
    try:
        dry = spark.sql("VACUUM eventsTable DRY RUN").collect()
        assert [r[0].removeprefix("file:") for r in dry] == [stray]
        assert os.path.exists(stray)
        spark.sql("VACUUM eventsTable")
        assert not os.path.exists(stray)
        spark.sql(f"VACUUM '{path}'")  # changed: path
        spark.sql(f"VACUUM delta.`{path}/`")  # changed: path
        with pytest.raises(Exception, match="DELTA_VACUUM_RETENTION_PERIOD_TOO_SHORT"):
            spark.sql(f"VACUUM delta.`{path}/` RETAIN 100 HOURS")  # changed: path

        deltaTable = DeltaTable.forPath(spark, path)  # changed: path (pathToTable)
        deltaTable = DeltaTable.forName(spark, "eventsTable")
        deltaTable.vacuum()
        with pytest.raises(Exception, match="DELTA_VACUUM_RETENTION_PERIOD_TOO_SHORT"):
            deltaTable.vacuum(100)
        assert sorted(a["path"] for a in live_files(path)) == live
        assert_table(spark, "eventsTable", ["date", "eventType", "n"], EVENT_ROWS)
    finally:
        spark.sql("DROP TABLE IF EXISTS eventsTable")


def test_vacuum_lite(spark, tmp_path):
    """delta-utility: ``VACUUM eventsTable LITE`` (Delta 3.3 and above)."""
    _events(spark, "eventsTable", str(tmp_path / "events"))
    try:
        spark.sql("VACUUM eventsTable LITE")
        assert_table(spark, "eventsTable", ["date", "eventType", "n"], EVENT_ROWS)
    finally:
        spark.sql("DROP TABLE IF EXISTS eventsTable")


def test_history_and_detail(spark, tmp_path):
    """delta-utility: DESCRIBE HISTORY (quoted path, ``delta.`path```, LIMIT 1, name),
    ``history()``/``history(1)``, DESCRIBE DETAIL and ``detail()``."""
    path = str(tmp_path / "events")  # changed: path (was /data/events/)
    _events(spark, "eventsTable", path)
    spark.sql("DELETE FROM eventsTable WHERE eventType IS NULL")
    try:
        logged = history_operations(path)  # oldest first, from delta-rs
        forms = [
            f"DESCRIBE HISTORY '{path}/'",  # changed: path
            f"DESCRIBE HISTORY delta.`{path}/`",  # changed: path
            "DESCRIBE HISTORY eventsTable",
        ]
        for statement in forms:
            rows = spark.sql(statement).collect()
            assert [r.operation for r in rows] == logged[::-1], statement  # newest first
            assert [r.version for r in rows] == list(range(len(logged)))[::-1]
        last = spark.sql(f"DESCRIBE HISTORY '{path}/' LIMIT 1").collect()  # changed: path
        assert [(r.version, r.operation) for r in last] == [(len(logged) - 1, "DELETE")]

        deltaTable = DeltaTable.forPath(spark, path)  # changed: path (pathToTable)
        fullHistoryDF = deltaTable.history()
        lastOperationDF = deltaTable.history(1)
        assert [r.operation for r in fullHistoryDF.collect()] == logged[::-1]
        assert [r.operation for r in lastOperationDF.collect()] == ["DELETE"]
        metrics = lastOperationDF.collect()[0].operationMetrics
        assert int(metrics["numDeletedRows"]) == sum(1 for r in EVENT_ROWS if r[1] is None)

        files = live_files(path)
        for statement in (f"DESCRIBE DETAIL '{path}/'", "DESCRIBE DETAIL eventsTable"):
            detail = spark.sql(statement).collect()[0]  # changed: path
            assert (detail.format, detail.partitionColumns) == ("delta", ["date"]), statement
            assert detail.numFiles == len(files)
            assert detail.sizeInBytes == sum(f["size_bytes"] for f in files)
        detailDF = deltaTable.detail()
        assert detailDF.collect()[0].location.removeprefix("file:").rstrip("/") == path
        rows = [r for r in EVENT_ROWS if r[1] is not None]
        assert_table(spark, "eventsTable", ["date", "eventType", "n"], rows)
    finally:
        spark.sql("DROP TABLE IF EXISTS eventsTable")


def test_show_partitions(spark, tmp_path):
    """delta-utility: SHOW PARTITIONS by name, with a PARTITION filter, and by path: one
    typed column per partition key."""
    path = str(tmp_path / "events")  # changed: path (was /data/events/)
    _events(spark, "eventsTable", path)
    try:
        days = sorted({r[0] for r in EVENT_ROWS})
        assert bag(spark.sql("SHOW PARTITIONS eventsTable;").collect()) == bag((d,) for d in days)
        one = spark.sql("SHOW PARTITIONS eventsTable PARTITION (date = '2021-11-18');").collect()
        assert bag(one) == [("2021-11-18",)]
        by_path = spark.sql(f"SHOW PARTITIONS delta.`{path}/`;")  # changed: path
        assert by_path.columns == ["date"]
        assert bag(by_path.collect()) == bag((d,) for d in days)
    finally:
        spark.sql("DROP TABLE IF EXISTS eventsTable")


def test_restore(spark, tmp_path):
    """delta-utility: RESTORE TABLE ... TO VERSION AS OF by name and TO TIMESTAMP AS OF on a
    path, ``restoreToVersion(0)``, and ``restoreToTimestamp('2019-02-14')`` (before the
    table existed: refused as delta-spark refuses it)."""
    spark.sql("CREATE DATABASE IF NOT EXISTS db")
    spark.sql("DROP TABLE IF EXISTS db.target_table")
    path = str(tmp_path / "target")  # changed: path (was /data/target/)
    rows = {0: [(1, "a"), (2, "b")]}
    spark.createDataFrame(rows[0], "id INT, v STRING").write.format("delta").option(
        "path", path
    ).saveAsTable("db.target_table")
    spark.createDataFrame([(3, "c")], "id INT, v STRING").write.format("delta").mode("append").save(
        path
    )
    rows[1] = rows[0] + [(3, "c")]
    time.sleep(1.1)  # commit timestamps a whole second apart
    spark.sql("DELETE FROM db.target_table WHERE id = 1")
    rows[2] = [r for r in rows[1] if r[0] != 1]
    commit_1 = spark.sql("DESCRIBE HISTORY db.target_table").where("version = 1").first().timestamp
    try:
        spark.sql("RESTORE TABLE db.target_table TO VERSION AS OF 1")  # <version>
        assert_table(spark, path, ["id", "v"], rows[1])
        spark.sql("DELETE FROM db.target_table WHERE id = 3")
        spark.sql(f"RESTORE TABLE delta.`{path}/` TO TIMESTAMP AS OF '{commit_1}'")  # <timestamp>
        assert_table(spark, path, ["id", "v"], rows[1])

        deltaTable = DeltaTable.forPath(spark, path)  # changed: path (<path-to-table>)
        deltaTable = DeltaTable.forName(spark, "db.target_table")  # <table-name>
        deltaTable.restoreToVersion(0)
        assert_table(spark, path, ["id", "v"], rows[0])
        with pytest.raises(Exception, match="before the earliest version available"):
            deltaTable.restoreToTimestamp("2019-02-14")
        assert history_operations(path)[-4:] == ["RESTORE", "DELETE", "RESTORE", "RESTORE"]
    finally:
        spark.sql("DROP TABLE IF EXISTS db.target_table")


def test_optimize_compaction(spark, tmp_path):
    """optimizations-oss: OPTIMIZE on a quoted path, a name, ``delta.`path``` and with a
    partition WHERE; ``optimize().executeCompaction()`` and with ``where``."""
    path = str(tmp_path / "delta_table")  # changed: path (was /path/to/delta/table)
    _events(spark, "delta_table_name", path)
    try:
        before = _files_by_partition(path)
        assert before["2021-11-17"] > 1 and before["2021-11-18"] > 1  # small files to compact
        spark.sql("OPTIMIZE delta_table_name WHERE date >= '2021-11-18'")
        assert _files_by_partition(path) == {"2021-11-17": before["2021-11-17"], "2021-11-18": 1}
        spark.sql(f"OPTIMIZE '{path}'")  # changed: path
        assert _files_by_partition(path) == {"2021-11-17": 1, "2021-11-18": 1}
        spark.sql("OPTIMIZE delta_table_name;")
        spark.sql(f"OPTIMIZE delta.`{path}`;")  # changed: path
        assert_table(spark, path, ["date", "eventType", "n"], EVENT_ROWS)

        more = [("2021-11-18", "view", 9), ("2021-11-19", "buy", 10)]
        spark.createDataFrame(more, "date STRING, eventType STRING, n INT").write.format(
            "delta"
        ).mode("append").save(path)
        spark.createDataFrame(more, "date STRING, eventType STRING, n INT").write.format(
            "delta"
        ).mode("append").save(path)
        deltaTable = DeltaTable.forPath(spark, path)  # changed: path (pathToTable)
        appended = _files_by_partition(path)
        assert appended["2021-11-18"] > 1 and appended["2021-11-19"] > 1
        deltaTable.optimize().where("date='2021-11-18'").executeCompaction()
        compacted = {**appended, "2021-11-18": 1}
        assert _files_by_partition(path) == compacted
        deltaTable.optimize().executeCompaction()
        assert _files_by_partition(path) == {"2021-11-17": 1, "2021-11-18": 1, "2021-11-19": 1}
        assert_table(spark, path, ["date", "eventType", "n"], EVENT_ROWS + more + more)
        assert rs_table(path).num_rows == len(EVENT_ROWS) + 2 * len(more)
    finally:
        spark.sql("DROP TABLE IF EXISTS delta_table_name")


def test_optimize_zorder(spark, tmp_path):
    """optimizations-oss: ``OPTIMIZE events ZORDER BY (eventType)``, with a WHERE, and the
    Python ``executeZOrderBy``."""
    path = str(tmp_path / "events")  # changed: path (pathToTable)
    _events(spark, "events", path)
    try:
        spark.sql("OPTIMIZE events ZORDER BY (eventType)")
        assert _files_by_partition(path) == {"2021-11-17": 1, "2021-11-18": 1}
        spark.sql("OPTIMIZE events WHERE date = '2021-11-18' ZORDER BY (eventType)")
        deltaTable = DeltaTable.forPath(spark, path)  # changed: path
        deltaTable.optimize().executeZOrderBy(
            "eventType"
        )  # doc typo: the page has eventType unquoted
        deltaTable.optimize().where("date='2021-11-18'").executeZOrderBy(
            "eventType"
        )  # doc typo: same
        assert_table(spark, "events", ["date", "eventType", "n"], EVENT_ROWS)
        ops = history_operations(path)
        assert ops[-4:] == ["OPTIMIZE"] * 4
        commits = sorted(RsTable(path).history(), key=lambda c: c["version"])[-4:]
        params = [c["operationParameters"] for c in commits]
        assert all("eventType" in str(p.get("zOrderBy")) for p in params), params
    finally:
        spark.sql("DROP TABLE IF EXISTS events")
