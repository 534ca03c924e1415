"""Materialized views refreshed by the *partition overwrite* technique: a view partitioned
by its input's partition column, carried through the query unchanged, has just the
partitions its input's changes touched (read from the Delta log: appends, UPDATE, DELETE,
MERGE, rows moved between partitions) recomputed and replaced, in one commit with the
refresh's record — for group aggregates without a change feed, windows partitioned by the
column, DISTINCT, a join whose other side did not change. Shapes whose partitions do not
follow the input's (not partitioned, a computed or non-partition column, both join sides
changed) are recomputed, with the reason. After every refresh each view equals its query
recomputed from scratch. Real pipelines, real Delta tables."""

from __future__ import annotations

import random

import pytest
import view_checks
from view_checks import techniques

SILVER = """
from pyspark import pipelines as dp


# No change feed (the runner would turn it on): updates are taken back from the files
# their commits removed and added, or the changed partitions recomputed.
@dp.table(partition_cols=["day"], table_properties={"delta.enableChangeDataFeed": "false"})
def silver():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.schemaHints", "id bigint, day int, k string, x bigint")
        .load(spark.conf.get("source_dir") + "/orders")
    )


@dp.table
def dims():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.schemaHints", "k string, label string")
        .load(spark.conf.get("source_dir") + "/dims")
    )
"""

VIEWS = """
from pyspark import pipelines as dp


@dp.materialized_view(partition_cols=["day"])
def daily():  # no change feed: partitions recomputed (cheaper than the files read back)
    return spark.sql(
        "SELECT day, k, sum(x) AS total, count(*) AS n, count(x) AS xs FROM silver "
        "WHERE id % 7 != 3 GROUP BY day, k"
    )


@dp.materialized_view(partition_cols=["day"])
def ranked():  # windows partitioned by the partition column
    return spark.sql(
        "SELECT id, day AS day, k, rank() OVER (PARTITION BY day ORDER BY id) AS r, "
        "avg(x) OVER (PARTITION BY day, k) AS mean FROM silver"
    )


@dp.materialized_view(partition_cols=["day"])
def pairs():  # DISTINCT
    return spark.sql("SELECT DISTINCT day, k FROM silver")


@dp.materialized_view(partition_cols=["day"])
def labelled():  # a join: partitions recomputed while 'dims' does not change
    return spark.sql("SELECT s.day, s.id, d.label FROM silver s JOIN dims d ON s.k <=> d.k")


@dp.materialized_view
def unpartitioned():
    return spark.sql("SELECT day, max(x) OVER (PARTITION BY day) AS top FROM silver")


@dp.materialized_view(partition_cols=["bucket"])
def computed():  # partitioned by a computed column
    return spark.sql("SELECT id % 3 AS bucket, count(*) AS n FROM silver GROUP BY id % 3")


@dp.materialized_view(partition_cols=["k"])
def by_k():  # partitioned by a column that is not the input's partition column
    return spark.sql("SELECT DISTINCT k, day FROM silver")
"""

QUERIES = {
    "daily": "SELECT day, k, sum(x) AS total, count(*) AS n, count(x) AS xs FROM {db}.silver "
    "WHERE id % 7 != 3 GROUP BY day, k",
    "ranked": "SELECT id, day, k, rank() OVER (PARTITION BY day ORDER BY id) AS r, "
    "avg(x) OVER (PARTITION BY day, k) AS mean FROM {db}.silver",
    "pairs": "SELECT DISTINCT day, k FROM {db}.silver",
    "labelled": "SELECT s.day, s.id, d.label FROM {db}.silver s JOIN {db}.dims d ON s.k <=> d.k",
    "unpartitioned": "SELECT day, max(x) OVER (PARTITION BY day) AS top FROM {db}.silver",
    "computed": "SELECT id % 3 AS bucket, count(*) AS n FROM {db}.silver GROUP BY id % 3",
    "by_k": "SELECT DISTINCT k, day FROM {db}.silver",
}
PARTITIONED = ("daily", "ranked", "pairs", "labelled")
# Not partitioned as their input: the keys the changes touched recomputed instead.
FALLBACKS = {"unpartitioned": "WINDOW_FUNCTION", "by_k": "GROUP_AGGREGATE"}


def rows(start: int, n: int, days: list[int | None], rnd: random.Random) -> list[dict]:
    """``n`` rows from id ``start`` in ``days`` (NULL days, keys and values among them)."""
    return [
        {
            "id": i,
            "day": rnd.choice(days),
            "k": rnd.choice(["a", "b", None]),
            "x": rnd.choice([i, 2 * i, None]),
        }
        for i in range(start, start + n)
    ]


def check(project, result, step) -> dict[str, dict]:
    assert result.ok, (step, result.failed())
    for view, query in QUERIES.items():
        view_checks.same_rows(project, view, query)
    return techniques(result)


def test_updates_in_one_partition_recompute_just_it(project):
    rnd = random.Random(3)
    project.source("silver.py", SILVER)
    project.source("views.py", VIEWS)
    project.land("1.json", rows(0, 40, [1, 2, 3, None], rnd))
    project.land("1.json", [{"k": "a", "label": "A"}, {"k": None, "label": "none"}], "dims")
    check(project, project.run(), 0)
    before = view_checks.version(project, "daily")
    project.spark.sql(f"UPDATE {project.database}.silver SET x = x + 1 WHERE day = 3")
    plans = check(project, project.run(), 1)
    chosen = {view: (plans[view]["chosen"], plans[view]["reason"]) for view in PARTITIONED}
    assert all(c == "PARTITION_OVERWRITE" for c, _ in chosen.values()), chosen
    assert all("only in partitions day = 3 " in why for _, why in chosen.values()), chosen
    for view, technique in FALLBACKS.items():
        assert plans[view]["chosen"] == technique, (view, plans[view])
        assert "with those keys" in plans[view]["reason"], (view, plans[view])
    # Partitioned by a computed column, but a group aggregate: the update is taken back
    # from day 3's files, removed and rewritten.
    computed = plans["computed"]
    assert computed["chosen"] == "GROUP_AGGREGATE", computed
    assert "the files its commits removed and added have them" in computed["reason"], computed
    # One commit: the partitions and the record together; only day 3's files replaced.
    assert view_checks.version(project, "daily") == before + 1
    history = project.spark.sql(f"DESCRIBE HISTORY {project.database}.daily").first()
    assert "day" in str(history["operationParameters"]), history
    assert techniques(project.run())["daily"]["chosen"] == "NO_OP"


@pytest.mark.slow
def test_random_changes_by_partition_equal_their_recompute(project):
    """Property-style: seeded random appends (to old and new days, NULL days, keys and
    values, duplicates), updates of one day's rows, of many days', and moves of rows to
    another day, deletes, a MERGE, and a change of the join's other side; after each
    refresh every view equals a recompute, by the technique expected."""
    rnd = random.Random(17)
    project.source("silver.py", SILVER)
    project.source("views.py", VIEWS)
    project.land("0.json", rows(0, 60, [1, 2, 3, 4, None], rnd))
    project.land("0.json", [{"k": "a", "label": "A"}, {"k": "b", "label": "B"}], "dims")
    check(project, project.run(), 0)
    db, next_id = project.database, 1000
    statements = {
        "update_day": "UPDATE {db}.silver SET x = x * 3 WHERE day = {d}",
        "update_many": "UPDATE {db}.silver SET x = NULL WHERE id % 5 = {r}",
        "move": "UPDATE {db}.silver SET day = {d2} WHERE day <=> {d} AND id % 2 = {r}",
        "to_null_day": "UPDATE {db}.silver SET day = NULL WHERE day = {d} AND id % 3 = {r}",
        "delete_day": "DELETE FROM {db}.silver WHERE day <=> {d}",
        "delete_some": "DELETE FROM {db}.silver WHERE day = {d} AND id % 4 = {r}",
        "merge": "MERGE INTO {db}.silver t USING (SELECT {d} AS day, 'a' AS k) s "
        "ON t.day = s.day AND t.k = s.k WHEN MATCHED THEN UPDATE SET x = t.x + 100",
    }
    kinds = [*statements, "append_old", "append_new", "dims"]  # every kind once, shuffled
    rnd.shuffle(kinds)
    assert len(set(kinds)) == len(kinds) == len(statements) + 3, kinds
    exercised = set()  # the kinds that changed a view at least once
    for step, kind in enumerate(kinds, 1):
        day = rnd.choice([1, 2, 3, 4])
        if kind == "append_old":
            new = rows(next_id, rnd.randint(1, 5), [day], rnd)
            project.land(f"{step}.json", new + [dict(new[0])])  # a duplicate
        elif kind == "append_new":
            project.land(f"{step}.json", rows(next_id, 4, [10 + step], rnd))
        elif kind == "dims":
            project.land(f"{step}.json", [{"k": "b", "label": f"B{step}"}], "dims")
            project.land(f"{step}.json", rows(next_id, 3, [day], rnd))
        else:
            sql = statements[kind].format(
                db=db, d=rnd.choice([day, "NULL"]) if kind == "move" else day,
                d2=rnd.choice([1, 2, 3, 4, 20]), r=rnd.randint(0, 2),
            )  # fmt: skip
            project.spark.sql(sql)
        next_id += 10
        plans = check(project, project.run(), (step, kind))
        exercised |= {kind} if any(plans[v]["chosen"] != "NO_OP" for v in QUERIES) else set()
        for view in PARTITIONED:
            chosen = plans[view]["chosen"]
            if chosen == "NO_OP":  # a statement matched no row
                assert kind in statements, (step, kind, view, plans[view])
                continue
            want = {"PARTITION_OVERWRITE"}
            if view == "daily":  # the cost model may merge appended rows' groups
                want.add("GROUP_AGGREGATE")
            if view == "labelled" and kind.startswith("append"):  # row by row: appended
                want = {"APPEND"}
            if kind == "dims" and view == "labelled":
                want = {"FULL_RECOMPUTE"}
            if kind == "update_many":  # touched every partition (or not: a random key)
                want.add("FULL_RECOMPUTE")
            assert chosen in want, (step, kind, view, plans[view])
        for view in FALLBACKS:  # (appends may still be merged as groups or appended)
            assert plans[view]["chosen"] != "PARTITION_OVERWRITE", (step, view, plans[view])
    assert exercised == set(kinds), exercised  # no statement matched no row
