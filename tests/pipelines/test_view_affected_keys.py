"""Materialized views refreshed by recomputing the keys the changes touched: views whose
aggregates cannot take rows back (``min``, ``max``, ``count(DISTINCT)``, ``collect_set``,
``HAVING``), windows partitioned by a key and ``DISTINCT`` are recomputed, after updates
and deletes, only for the groups (window partitions, distinct rows) whose keys the changed
rows hold, and those rows of the view replaced in one commit with the record. After every
update each view equals its query run again; the planning event names the technique
(GROUP_AGGREGATE for groups and DISTINCT, WINDOW_FUNCTION for windows). Real pipelines,
real Delta tables."""

from __future__ import annotations

import random
from collections import Counter

import pytest
import view_checks
from deltalake import DeltaTable
from view_checks import techniques

# A whole file of pipeline updates (minutes in CI): with the crash and benchmark files, it
# runs in one of the three parts scripts/test.sh takes in turn, a part per commit.
pytestmark = pytest.mark.slow

SILVER = """
from pyspark import pipelines as dp


@dp.table
def silver():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.schemaHints", "id bigint, k string, x bigint")
        .load(spark.conf.get("source_dir") + "/orders")
    )
"""

# Each view's query, as the view defines it ({db}: read from silver) and as the test
# recomputes it; the technique its refreshes after updates and deletes use.
QUERIES = {
    "bounds": "SELECT k, id % 2 AS parity, min(x) AS lo, max(x) AS hi FROM {db}silver "
    "GROUP BY k, id % 2",
    "distinct_count": "SELECT k, count(DISTINCT x) AS dx, count(*) AS n, collect_set(x) AS xs "
    "FROM {db}silver GROUP BY k",
    "having": "SELECT k, sum(x) AS total, count(*) AS n FROM {db}silver GROUP BY k "
    "HAVING max(x) > 50",
    "ranked": "SELECT id, k, row_number() OVER (PARTITION BY k ORDER BY id) AS rn, "
    "rank() OVER (PARTITION BY k ORDER BY x) AS rk, sum(x) OVER (PARTITION BY k) AS total "
    "FROM {db}silver",
    "pairs": "SELECT DISTINCT k, x % 3 AS m FROM {db}silver",
}
TECHNIQUE = {
    "bounds": "GROUP_AGGREGATE",
    "distinct_count": "GROUP_AGGREGATE",
    "having": "GROUP_AGGREGATE",
    "ranked": "WINDOW_FUNCTION",
    "pairs": "GROUP_AGGREGATE",
}


def views() -> str:
    lines = ["from pyspark import pipelines as dp", ""]
    for name, query in QUERIES.items():
        lines += [
            "@dp.materialized_view",
            f"def {name}():",
            f"    return spark.sql({query.format(db='')!r})",
            "",
        ]
    return "\n".join(lines)


def rows(start: int, n: int, rnd: random.Random) -> list[dict]:
    return [
        {"id": i, "k": rnd.choice(["a", "b", "c", None]), "x": rnd.choice([i % 40, i % 7, None])}
        for i in range(start, start + n)
    ]


def check(project, result, step) -> dict[str, dict]:
    assert result.ok, (step, result.failed())
    for view, query in QUERIES.items():
        want = project.spark.sql(query.format(db=f"{project.database}."))
        have = project.spark.table(f"{project.database}.{view}").select(*want.columns)
        assert as_sets(have) == as_sets(want), (step, view)
    return techniques(result)


def as_sets(df) -> Counter:
    """The rows as a multiset, arrays (collect_set's, in no order) as sets."""
    return Counter(
        tuple(frozenset(v) if isinstance(v, list) else v for v in row) for row in df.collect()
    )


def last_operation(project, view: str) -> str:
    location = project.spark.sql(f"DESCRIBE DETAIL {project.database}.{view}").first()
    return DeltaTable(location["location"]).history(1)[0]["operation"]


def test_changed_keys_are_recomputed_alone(project):
    rnd = random.Random(5)
    project.source("silver.py", SILVER)
    project.source("views.py", views())
    project.land("0.json", rows(0, 80, rnd))
    check(project, project.run(), 0)
    db = project.database
    steps = {  # (two statements a refresh: each refresh is seconds of CI)
        "update, to NULL": [
            f"UPDATE {db}.silver SET x = x + 3 WHERE k = 'a' AND id % 3 = 0",
            f"UPDATE {db}.silver SET x = NULL WHERE id % 11 = 0",
        ],
        "to a NULL key, a HAVING group appears": [
            f"UPDATE {db}.silver SET k = NULL WHERE k = 'c' AND id % 2 = 0",
            f"UPDATE {db}.silver SET x = 99 WHERE id = 7",
        ],
        "it goes, NULL keys deleted": [
            f"DELETE FROM {db}.silver WHERE id = 7",
            f"DELETE FROM {db}.silver WHERE k IS NULL AND id % 4 = 1",
        ],
        "a whole group deleted": [f"DELETE FROM {db}.silver WHERE k = 'b'"],
    }
    before = view_checks.version(project, "ranked")
    try:
        for step, (kind, statements) in enumerate(steps.items(), 1):
            for sql in statements:
                project.spark.sql(sql)
            way = view_checks.commit_by_turns(project, step)
            empty = {v for v in TECHNIQUE if project.count(v) == 0}  # (no bytes: rewritten)
            plans = check(project, project.run(), kind)
            for view, want in TECHNIQUE.items():
                plan = plans[view]
                assert plan["chosen"] == want, (kind, view, plan)
                assert "recomputed from the inputs' rows with those keys" in plan["reason"], plan
                assert plan["input_rows"] >= plan.get("rows_changed", -1) > 0, plan  # (cost)
                merged = way == "merge" and view not in empty
                assert (last_operation(project, view) == "MERGE") == merged, view
            assert view_checks.version(project, "ranked") == before + step  # one commit each
            assert project.count("having") == (1 if "appears" in kind else 0), kind
    finally:
        view_checks.commit_by_turns(project, 0)
    # Appended rows: their keys recomputed too (min/max merge their groups as before).
    project.land("1.json", rows(100, 5, rnd))
    plans = check(project, project.run(), "append")
    assert {plans[v]["chosen"] for v in TECHNIQUE} <= {
        "GROUP_AGGREGATE",
        "WINDOW_FUNCTION",
    }, plans
    assert techniques(project.run())["ranked"]["chosen"] == "NO_OP"
