"""Delta Lake's documentation, "Table deletes, updates, and merges"
(https://docs.delta.io/delta-update/; source docs/src/content/docs/delta-update.mdx in
github.com/delta-io/delta at tag v4.4.0, commit 88c008d55b38fb8f49a9a80982004cb5b06a2b59,
read 2026-11-29; Apache-2.0): the MERGE examples.

The snippets name their inputs (``updatesDF = ...``); each test builds them from generated
rows that reach every clause (matched and unmatched keys, NULLs, history rows, deletes),
then makes the snippet's calls. Lines marked ``# changed:`` differ as the README allows
(import, paths); ``# doc typo:`` marks a character the page has that Python cannot run.
"""

from __future__ import annotations

import builtins
import datetime as dt

from delta_corpus import assert_table, finish
from pyspark.sql.functions import max  # the snippet's max is Spark's (from ...functions import *)

from headwater.delta.tables import DeltaTable  # changed: was from delta.tables import *

PEOPLE = "id INT, firstName STRING, middleName STRING, lastName STRING, gender STRING, birthDate TIMESTAMP, ssn STRING, salary INT"
PEOPLE_COLUMNS = [c.split()[0] for c in PEOPLE.split(", ")]
BORN = dt.datetime(1980, 5, 17, 8, 30)
PEOPLE_ROWS = [
    (1, "Ann", None, "Lee", "F", BORN, "111-11-1111", 100),
    (2, "Bo", "J", "Kim", "M", None, "222-22-2222", 200),
    (3, "Cy", None, "Ng", None, BORN, None, 300),
]
PEOPLE_UPDATES = [
    (2, "Bo", None, "Kim-Park", "M", BORN, "222-22-2222", 250),  # matched: every column set
    (3, "Cy", "Q", "Ng", "X", None, "333-33-3333", None),  # matched: NULLs replace values
    (4, "Di", None, "Oh", "F", None, None, 400),  # not matched: inserted
]


def _people_after() -> list[tuple]:
    by_id = {r[0]: r for r in PEOPLE_ROWS}
    by_id.update({r[0]: r for r in PEOPLE_UPDATES})  # UPDATE SET / INSERT every column
    return list(by_id.values())


def test_upsert_sql_people10m(spark):
    """MERGE INTO people10m USING people10mupdates: every column set by name, inserted by
    list."""
    for name in ("people10m", "people10mupdates"):
        spark.sql(f"DROP TABLE IF EXISTS {name}")
        spark.sql(f"CREATE TABLE {name} ({PEOPLE}) USING DELTA")
    spark.createDataFrame(PEOPLE_ROWS, PEOPLE).write.mode("append").saveAsTable("people10m")
    spark.createDataFrame(PEOPLE_UPDATES, PEOPLE).write.mode("append").saveAsTable(
        "people10mupdates"
    )
    try:
        spark.sql(
            """
            MERGE INTO people10m
            USING people10mupdates
            ON people10m.id = people10mupdates.id
            WHEN MATCHED THEN
              UPDATE SET
                id = people10mupdates.id,
                firstName = people10mupdates.firstName,
                middleName = people10mupdates.middleName,
                lastName = people10mupdates.lastName,
                gender = people10mupdates.gender,
                birthDate = people10mupdates.birthDate,
                ssn = people10mupdates.ssn,
                salary = people10mupdates.salary
            WHEN NOT MATCHED
              THEN INSERT (
                id,
                firstName,
                middleName,
                lastName,
                gender,
                birthDate,
                ssn,
                salary
              )
              VALUES (
                people10mupdates.id,
                people10mupdates.firstName,
                people10mupdates.middleName,
                people10mupdates.lastName,
                people10mupdates.gender,
                people10mupdates.birthDate,
                people10mupdates.ssn,
                people10mupdates.salary
              )
            """
        )
        assert_table(spark, "people10m", PEOPLE_COLUMNS, _people_after())
        assert_table(spark, "people10mupdates", PEOPLE_COLUMNS, PEOPLE_UPDATES)
    finally:
        for name in ("people10m", "people10mupdates"):
            spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_upsert_python_people10m(spark, tmp_path):
    """The same upsert with ``DeltaTable.forPath`` on both tables and
    ``whenMatchedUpdate``/``whenNotMatchedInsert`` maps of SQL strings."""
    people = str(tmp_path / "delta" / "people-10m")  # changed: path (was /tmp/delta/...)
    updates = str(tmp_path / "delta" / "people-10m-updates")  # changed: path
    spark.createDataFrame(PEOPLE_ROWS, PEOPLE).write.format("delta").save(people)
    spark.createDataFrame(PEOPLE_UPDATES, PEOPLE).write.format("delta").save(updates)

    deltaTablePeople = DeltaTable.forPath(spark, people)  # changed: path
    deltaTablePeopleUpdates = DeltaTable.forPath(spark, updates)  # changed: path
    dfUpdates = deltaTablePeopleUpdates.toDF()
    columns = {c: f"updates.{c}" for c in PEOPLE_COLUMNS}
    assert list(columns) == [
        "id",
        "firstName",
        "middleName",
        "lastName",
        "gender",
        "birthDate",
        "ssn",
        "salary",
    ]  # fmt: skip  (the snippet's two maps, key for key)
    deltaTablePeople.alias("people").merge(
        dfUpdates.alias("updates"), "people.id = updates.id"
    ).whenMatchedUpdate(set=columns).whenNotMatchedInsert(values=columns).execute()
    assert_table(spark, people, PEOPLE_COLUMNS, _people_after())
    assert_table(spark, updates, PEOPLE_COLUMNS, PEOPLE_UPDATES)


KEYED = "key INT, value STRING"


def test_merge_when_not_matched_by_source_delete(spark, tmp_path):
    """``whenNotMatchedBySourceDelete``: the target becomes the source (updated, inserted,
    and the target rows the source lacks deleted)."""
    path = str(tmp_path / "target")
    target_rows = [(1, "a"), (2, "b"), (3, None), (5, "e")]
    source_rows = [(1, "A"), (3, "c"), (4, None)]
    spark.createDataFrame(target_rows, KEYED).write.format("delta").save(path)
    targetDF = DeltaTable.forPath(spark, path).alias("target")
    sourceDF = spark.createDataFrame(source_rows, KEYED).alias("source")
    (
        targetDF.merge(sourceDF, "source.key = target.key")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .whenNotMatchedBySourceDelete()
        .execute()
    )
    assert_table(spark, path, ["key", "value"], source_rows)


TRACKED = "key INT, lastSeen TIMESTAMP, status STRING"


def _tracked_case():
    """Target rows seen recently and long ago, and a source of sightings; the expected
    target after the snippet's MERGE (status 'inactive' only for recent, unseen keys)."""
    now = dt.datetime.combine(dt.date.today(), dt.time(12))
    days = dt.timedelta(days=1)
    target = [
        (1, now - 2 * days, "active"),  # seen again: lastSeen moves
        (2, now - 1 * days, "active"),  # not in the source, seen within 5 days: inactive
        (3, now - 30 * days, "active"),  # not in the source, long ago: untouched
        (4, None, "active"),  # never seen: the condition is NULL, untouched
    ]
    source = [(1, now), (9, now - 3 * days)]  # 9: a new key
    window_start = dt.datetime.combine(dt.date.today() - 5 * days, dt.time())
    after = []
    for key, last, status in target:
        seen = [t for k, t in source if k == key]
        if seen:
            after.append((key, seen[0], status))
        elif last is not None and last >= window_start:
            after.append((key, last, "inactive"))
        else:
            after.append((key, last, status))
    after += [(k, t, "active") for k, t in source if k not in {r[0] for r in target}]
    return target, source, after


def test_merge_when_not_matched_by_source_update_python(spark, tmp_path):
    """``whenNotMatchedBySourceUpdate`` with a condition on the target's last sighting."""
    path = str(tmp_path / "target")
    target_rows, source_rows, expected = _tracked_case()
    spark.createDataFrame(target_rows, TRACKED).write.format("delta").save(path)
    targetDF = DeltaTable.forPath(spark, path).alias("target")
    sourceDF = spark.createDataFrame(source_rows, "key INT, timestamp TIMESTAMP").alias("source")
    (
        targetDF.merge(sourceDF, "source.key = target.key")
        .whenMatchedUpdate(set={"target.lastSeen": "source.timestamp"})
        .whenNotMatchedInsert(
            values={
                "target.key": "source.key",
                "target.lastSeen": "source.timestamp",
                "target.status": "'active'",
            }
        )
        .whenNotMatchedBySourceUpdate(
            condition="target.lastSeen >= (current_date() - INTERVAL '5' DAY)",
            set={"target.status": "'inactive'"},
        )
        .execute()
    )
    assert_table(spark, path, ["key", "lastSeen", "status"], expected)


def test_merge_when_not_matched_by_source_update_sql(spark):
    """The SQL form: ``WHEN NOT MATCHED BY SOURCE AND ... THEN UPDATE SET``."""
    target_rows, source_rows, expected = _tracked_case()
    for name in ("target", "source"):
        spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.createDataFrame(target_rows, TRACKED).write.format("delta").saveAsTable("target")
    spark.createDataFrame(source_rows, "key INT, timestamp TIMESTAMP").write.format(
        "delta"
    ).saveAsTable("source")
    try:
        spark.sql(
            """
            MERGE INTO target
            USING source
            ON source.key = target.key
            WHEN MATCHED THEN
              UPDATE SET target.lastSeen = source.timestamp
            WHEN NOT MATCHED THEN
              INSERT (key, lastSeen, status) VALUES (source.key,  source.timestamp, 'active')
            WHEN NOT MATCHED BY SOURCE AND target.lastSeen >= (current_date() - INTERVAL '5' DAY) THEN
              UPDATE SET target.status = 'inactive'
            """
        )
        assert_table(spark, "target", ["key", "lastSeen", "status"], expected)
    finally:
        for name in ("target", "source"):
            spark.sql(f"DROP TABLE IF EXISTS {name}")


LOGS = "uniqueId STRING, date DATE, message STRING"


def _logs_case():
    """Logs already in the table and a deduplicated batch: repeats inside and outside the
    last 7 days, new ids inside and outside them."""
    today = dt.date.today()
    old, recent = today - dt.timedelta(days=30), today - dt.timedelta(days=2)
    logs = [("a", recent, "a1"), ("b", old, "b1"), ("c", recent, "c1")]
    new = [
        ("a", recent, "a2"),  # a repeat within 7 days
        ("b", old, "b2"),  # a repeat from long ago
        ("d", recent, "d1"),  # new, recent
        ("e", old, "e1"),  # new, long ago
        ("f", None, "f1"),  # new, no date
    ]
    return logs, new, today - dt.timedelta(days=7)


def _logs_tables(spark, path: str, logs, new):
    """The table ``logs`` at ``path`` and the deduplicated batch, as the snippets name them."""
    spark.createDataFrame(logs, LOGS).write.format("delta").save(path)
    return DeltaTable.forPath(spark, path), spark.createDataFrame(new, LOGS)


def _within_7_days(logs, new, since):
    """The bounded MERGE's result: new rows of the last 7 days not already logged then."""
    recent_ids = {r[0] for r in logs if r[1] > since}
    inserted = [r for r in new if r[1] is not None and r[1] > since and r[0] not in recent_ids]
    return logs + inserted


def test_merge_dedup_insert_only(spark, tmp_path):
    """Insert-only MERGE: ``whenNotMatchedInsertAll`` adds the ids the table lacks."""
    path = str(tmp_path / "logs")
    logs, new, _ = _logs_case()
    deltaTable, newDedupedLogs = _logs_tables(spark, path, logs, new)
    deltaTable.alias("logs").merge(
        newDedupedLogs.alias("newDedupedLogs"), "logs.uniqueId = newDedupedLogs.uniqueId"
    ).whenNotMatchedInsertAll().execute()
    seen = {r[0] for r in logs}
    assert_table(
        spark, path, ["uniqueId", "date", "message"], logs + [r for r in new if r[0] not in seen]
    )


def test_merge_dedup_insert_only_last_7_days(spark, tmp_path):
    """The bounded form: matches only the last 7 days of the table and inserts only recent
    rows (a repeat from long ago is inserted again, as the page says it looks no further)."""
    path = str(tmp_path / "logs")
    logs, new, since = _logs_case()
    deltaTable, newDedupedLogs = _logs_tables(spark, path, logs, new)
    deltaTable.alias("logs").merge(
        newDedupedLogs.alias("newDedupedLogs"),
        "logs.uniqueId = newDedupedLogs.uniqueId AND logs.date > current_date() - INTERVAL 7 DAYS",
    ).whenNotMatchedInsertAll("newDedupedLogs.date > current_date() - INTERVAL 7 DAYS").execute()
    assert_table(spark, path, ["uniqueId", "date", "message"], _within_7_days(logs, new, since))


def test_merge_dedup_insert_only_sql(spark):
    """The SQL form of the bounded insert-only MERGE, on table ``logs``."""
    logs, new, since = _logs_case()
    spark.sql("DROP TABLE IF EXISTS logs")
    spark.createDataFrame(logs, LOGS).write.format("delta").saveAsTable("logs")
    spark.createDataFrame(new, LOGS).createOrReplaceTempView("newDedupedLogs")
    try:
        spark.sql(
            """
            MERGE INTO logs
            USING newDedupedLogs
            ON logs.uniqueId = newDedupedLogs.uniqueId AND logs.date > current_date() - INTERVAL 7 DAYS
            WHEN NOT MATCHED AND newDedupedLogs.date > current_date() - INTERVAL 7 DAYS
              THEN INSERT *
            """
        )
        expected = _within_7_days(logs, new, since)
        assert_table(spark, "logs", ["uniqueId", "date", "message"], expected)
    finally:
        spark.sql("DROP TABLE IF EXISTS logs")


CUSTOMERS = "customerId INT, address STRING, current BOOLEAN, effectiveDate DATE, endDate DATE"


def test_merge_scd_type_2(spark, tmp_path):
    """SCD Type 2: a changed address closes the current row and adds a new current one;
    an unchanged address does nothing; a new customer is inserted."""
    d = dt.date
    customers = [
        (1, "old street", False, d(2020, 1, 1), d(2021, 1, 1)),  # history: untouched
        (1, "first street", True, d(2021, 1, 1), None),  # moves
        (2, "same street", True, d(2020, 6, 1), None),  # same address again
        (3, "third street", True, d(2022, 1, 1), None),  # not in the updates
    ]
    updates = [
        (1, "new street", d(2024, 3, 1)),
        (2, "same street", d(2024, 3, 1)),
        (4, "fourth", d(2024, 3, 2)),
    ]
    path = str(tmp_path / "customers")
    spark.createDataFrame(customers, CUSTOMERS).write.format("delta").save(path)

    customersTable = DeltaTable.forPath(spark, path)  # the page: DeltaTable (customerId, ...)
    spark.createDataFrame(
        updates, "customerId INT, address STRING, effectiveDate DATE"
    ).createOrReplaceTempView("updates")
    updatesDF = spark.table(
        "updates"
    )  # the page: (customerId, address, effectiveDate), as "updates"

    newAddressesToInsert = (
        updatesDF.alias("updates")
        .join(customersTable.toDF().alias("customers"), "customerid")
        .where("customers.current = true AND updates.address <> customers.address")
    )
    stagedUpdates = newAddressesToInsert.selectExpr("NULL as mergeKey", "updates.*").union(
        updatesDF.selectExpr("updates.customerId as mergeKey", "*")
    )
    customersTable.alias("customers").merge(
        stagedUpdates.alias("staged_updates"), "customers.customerId = mergeKey"
    ).whenMatchedUpdate(
        condition="customers.current = true AND customers.address <> staged_updates.address",
        set={"current": "false", "endDate": "staged_updates.effectiveDate"},
    ).whenNotMatchedInsert(
        values={
            "customerid": "staged_updates.customerId",
            "address": "staged_updates.address",
            "current": "true",
            "effectiveDate": "staged_updates.effectiveDate",
            "endDate": "null",
        }
    ).execute()

    current = {r[0]: r for r in customers if r[2]}
    expected = [r for r in customers if not r[2]]
    for cid, address, since in updates:
        row = current.pop(cid, None)
        if row is None:
            expected.append((cid, address, True, since, None))
        elif row[1] != address:
            expected += [(cid, row[1], False, row[3], since), (cid, address, True, since, None)]
        else:
            expected.append(row)
    expected += current.values()
    assert_table(
        spark, path, ["customerId", "address", "current", "effectiveDate", "endDate"], expected
    )


def test_merge_change_data(spark, tmp_path):
    """Change data from another database: the latest change per key (max of a struct led by
    the time) deletes, updates or inserts."""
    path = str(tmp_path / "target")
    spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "key INT, value STRING").write.format(
        "delta"
    ).save(path)
    changes = [  # key, time, newValue, deleted
        (1, 1, "a1", False), (1, 2, "a2", False),  # updated twice: the later wins
        (2, 5, None, True),  # deleted
        (3, 1, "x", True), (3, 4, "c4", False),  # deleted, then written again
        (4, 1, "d1", False),  # new
        (5, 1, "e1", False), (5, 3, None, True),  # new, then deleted: never inserted
    ]  # fmt: skip
    spark.sql("DROP TABLE IF EXISTS changes")
    spark.createDataFrame(
        changes, "key INT, time INT, newValue STRING, deleted BOOLEAN"
    ).write.format("delta").saveAsTable("changes")
    try:
        deltaTable = DeltaTable.forPath(spark, path)  # the page: DeltaTable (key, value)
        changesDF = spark.table("changes")
        latestChangeForEachKey = (
            changesDF.selectExpr("key", "struct(time, newValue, deleted) as otherCols")
            .groupBy("key")
            .agg(max("otherCols").alias("latest"))
            .select("key", "latest.*")
        )
        deltaTable.alias("t").merge(
            latestChangeForEachKey.alias("s"), "s.key = t.key"
        ).whenMatchedDelete(condition="s.deleted = true").whenMatchedUpdate(
            set={"key": "s.key", "value": "s.newValue"}
        ).whenNotMatchedInsert(
            condition="s.deleted = false", values={"key": "s.key", "value": "s.newValue"}
        ).execute()
    finally:
        spark.sql("DROP TABLE IF EXISTS changes")

    table = {1: "a", 2: "b", 3: "c"}
    for key in sorted({c[0] for c in changes}):
        _, value, deleted = builtins.max(c[1:] for c in changes if c[0] == key)
        if deleted:
            table.pop(key, None)
        else:
            table[key] = value
    assert_table(spark, path, ["key", "value"], table.items())


def test_upsert_streaming_aggregates_foreach_batch(spark, tmp_path):
    """Streaming aggregates written in update mode by ``DeltaTable.merge`` in
    ``foreachBatch``; two runs over two appends, so keys are both inserted and updated."""
    events = str(tmp_path / "events")
    aggregates = str(tmp_path / "data" / "aggregates")  # changed: path (was /data/aggregates)
    spark.createDataFrame([], "key STRING, count BIGINT").write.format("delta").save(aggregates)
    batches = [["a", "b", "a", None], ["b", "c", None]]
    spark.createDataFrame([(k,) for k in batches[0]], "key STRING").write.format("delta").save(
        events
    )

    deltaTable = DeltaTable.forPath(spark, aggregates)  # changed: path

    def upsertToDelta(microBatchOutputDF, batchId):
        deltaTable.alias("t").merge(
            microBatchOutputDF.alias("s"), "s.key = t.key"
        ).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()

    # doc typo: the page closes this function with a stray "}" here

    for batch in batches:
        if batch is not batches[0]:
            spark.createDataFrame([(k,) for k in batch], "key STRING").write.format("delta").mode(
                "append"
            ).save(events)
        streamingAggregatesDF = spark.readStream.format("delta").load(events).groupBy("key").count()
        query = (
            streamingAggregatesDF.writeStream.format("delta")
            .foreachBatch(upsertToDelta)
            .outputMode("update")
            .option("checkpointLocation", str(tmp_path / "checkpoint"))  # the page has none
            .trigger(availableNow=True)  # the page runs continuously: one run per append
            .start()
        )
        finish(query)
    table: dict = {}
    nulls: list[tuple] = []
    totals: dict = {}
    for batch in batches:  # update mode: each run emits the running count of its keys
        for key in batch:
            totals[key] = totals.get(key, 0) + 1
        for key in set(batch):
            if key is None:  # s.key = t.key is NULL for a NULL key: inserted every time
                nulls.append((None, totals[None]))
            else:
                table[key] = totals[key]
    assert_table(spark, aggregates, ["key", "count"], [*table.items(), *nulls])
