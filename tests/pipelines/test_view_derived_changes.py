"""Updates and deletes of a table without a change data feed are taken back from a view's
groups all the same: what each commit removed and added is read back from the files it
removed and added (a copy-on-write rewrite: the whole files; with deletion vectors: only
the rows whose positions the new vector adds or drops), on the Arrow path and through
Spark. The cost model weighs those rows against a recompute's. Real pipelines, real
Delta tables; after every refresh the view equals its query recomputed."""

from __future__ import annotations

import pytest
import view_checks
from pipeline_rows import RAW_TABLE, orders
from view_checks import techniques

from headwater.pipelines.refresh.arrow_refresh import UP_TO_ROWS
from headwater.pipelines.runner.view_refresh import REWRITE_UP_TO

# A whole file of pipeline updates (minutes in CI): with the crash and benchmark files, it
# runs in one of the three parts scripts/test.sh takes in turn, a part per commit.
pytestmark = pytest.mark.slow

NO_FEED = '@dp.table(table_properties={"delta.enableChangeDataFeed": "false"})\n'
VECTORS = (
    '@dp.table(table_properties={"delta.enableChangeDataFeed": "false", '
    '"delta.enableDeletionVectors": "true"})\n'
)
VIEW = """
from pyspark import pipelines as dp
from pyspark.sql import functions as F


@dp.materialized_view
def counted():
    return spark.read.table("raw").groupBy("region").agg(
        F.sum("amount").alias("total"), F.count("*").alias("n"), F.count("amount").alias("amounts")
    )
"""
QUERY = (
    "SELECT region, sum(amount) AS total, count(*) AS n, count(amount) AS amounts "
    "FROM {db}.raw GROUP BY region"
)
ROW_IDS = (
    '@dp.table(table_properties={"delta.enableChangeDataFeed": "false", '
    '"delta.enableRowTracking": "true"})\n'
)
DERIVED = "the files its commits removed and added have them"


def landed_in_files(project, table: str) -> None:
    """raw written by four updates (four appends, so at least four files), then the view."""
    project.source("raw.py", RAW_TABLE.replace("@dp.table\n", table))
    project.source("views.py", VIEW)
    for i in range(4):
        project.land(f"{i}.json", orders(i * 100, 60, region="eu" if i % 2 else "us"))
        assert project.run().ok


def changed(project, statement: str, step: int) -> dict:
    """``statement`` run on raw, then an update (merging or rewriting the view by turns):
    the view's plan, after checking the view against its recompute."""
    way = view_checks.commit_by_turns(project, step)
    try:
        project.spark.sql(statement.format(db=project.database))
        result = project.run()
    finally:
        project.spark.conf.unset(REWRITE_UP_TO)
    assert result.ok, result.failed()
    view_checks.same_rows(project, "counted", QUERY)
    plan = techniques(result)["counted"]
    return {**plan, "way": way}


def test_copy_on_write_changes_without_a_feed_are_read_from_the_files(project):
    landed_in_files(project, NO_FEED)
    statements = [
        "DELETE FROM {db}.raw WHERE id IN (3, 5, 7)",  # rows of the first update's file
        "UPDATE {db}.raw SET amount = amount + 1, region = 'eu' WHERE id = 201",
        "DELETE FROM {db}.raw WHERE id = 320",
    ]
    plans = [changed(project, s, step) for step, s in enumerate(statements)]
    for plan in plans:
        assert plan["chosen"] == "GROUP_AGGREGATE", plan
        assert DERIVED in plan["reason"], plan
        # whole files read back: more rows than changed, fewer than a recompute's 240
        assert 2 < plan["rows_changed"] < plan["input_rows"], plan
    assert {p["way"] for p in plans} == {"merge", "rewrite"}
    assert {p["executor"] for p in plans} == {"spark", "arrow"}


def test_row_ids_leave_the_copied_rows_out_of_a_rewrite(project):
    """With row tracking, the rows a rewrite only copied (same id, same values) are not
    taken back and added again (through Spark, where the ids pair them); the view stays
    equal to its recompute."""
    landed_in_files(project, ROW_IDS)
    project.spark.conf.set(UP_TO_ROWS, "0")  # refreshed through Spark
    try:
        plans = [
            changed(project, "UPDATE {db}.raw SET amount = amount + 1 WHERE id = 201", 0),
            changed(
                project,
                "MERGE INTO {db}.raw t USING (SELECT 5 AS id) s ON t.id = s.id "
                "WHEN MATCHED THEN DELETE",
                1,
            ),
        ]
    finally:
        project.spark.conf.unset(UP_TO_ROWS)
    assert [(p["chosen"], p["executor"]) for p in plans] == [("GROUP_AGGREGATE", "spark")] * 2


def test_deletion_vectors_give_back_only_the_rows_they_changed(project):
    landed_in_files(project, VECTORS)
    plans = [
        changed(project, "DELETE FROM {db}.raw WHERE id IN (101, 102)", 0),
        changed(project, "UPDATE {db}.raw SET amount = 0 WHERE id = 250", 1),
    ]
    assert [p["chosen"] for p in plans] == ["GROUP_AGGREGATE"] * 2, plans
    assert all(DERIVED in p["reason"] for p in plans), plans
    # the deleted positions of the vectors; an update also adds its new row back
    assert plans[0]["rows_changed"] == 2, plans[0]
    assert plans[1]["rows_changed"] == 2, plans[1]


def test_a_change_whose_removed_files_are_gone_is_recomputed(project):
    """VACUUM deleted the files an update removed before the view was refreshed: its
    removed rows cannot be read back, and the view is recomputed, saying why."""
    landed_in_files(project, NO_FEED)
    db = project.database
    project.spark.sql(f"DELETE FROM {db}.raw WHERE id = 1")
    project.spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        project.spark.sql(f"VACUUM {db}.raw RETAIN 0 HOURS")
    finally:
        project.spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    result = project.run()
    assert result.ok, result.failed()
    view_checks.same_rows(project, "counted", QUERY)
    plan = techniques(result)["counted"]
    assert plan["chosen"] == "FULL_RECOMPUTE", plan
    assert "cannot be read back" in plan["reason"], plan
