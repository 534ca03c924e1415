"""The runner turns the change data feed on in the pipeline's own tables that its
materialized views read, so rows updated or deleted there are taken back from the views'
groups (*group aggregate*) rather than the views recomputed, without the user setting
``delta.enableChangeDataFeed``; a setting the user made stands (``false`` stays off), and
a table that has no feed yet gets it in one commit when the user's setting goes. Real
pipelines, real Delta tables; after every refresh the view equals its query recomputed."""

from __future__ import annotations

import view_checks
from deltalake import DeltaTable
from pipeline_rows import RAW_TABLE, orders
from view_checks import techniques

from headwater.delta.files.change_data import ENABLE

VIEW = """
from pyspark import pipelines as dp
from pyspark.sql import functions as F


@dp.materialized_view
def counted():
    return spark.read.table("raw").groupBy("region").agg(
        F.sum("amount").alias("total"), F.count("*").alias("n"), F.count("amount").alias("amounts")
    )


@dp.table
def unread():  # no view reads it: left as the user defined it
    return spark.readStream.option("skipChangeCommits", "true").table("raw")
"""
QUERY = (
    "SELECT region, sum(amount) AS total, count(*) AS n, count(amount) AS amounts "
    "FROM {db}.raw GROUP BY region"
)
NO_FEED = '@dp.table(table_properties={"delta.enableChangeDataFeed": "false"})\n'


def feed_setting(project, table: str) -> str | None:
    detail = project.spark.sql(f"DESCRIBE DETAIL {project.database}.{table}").first()
    return DeltaTable(detail["location"]).metadata().configuration.get(ENABLE)


def changed_and_refreshed(project) -> dict:
    """Rows of raw deleted and updated, then an update: the view's plan."""
    db = project.database
    project.spark.sql(f"DELETE FROM {db}.raw WHERE id % 10 = 0")  # 3 of 26 rows at first
    project.spark.sql(f"UPDATE {db}.raw SET amount = amount + 3, region = 'asia' WHERE id % 7 = 1")
    result = project.run()
    assert result.ok, result.failed()
    view_checks.same_rows(project, "counted", QUERY)
    return techniques(result)["counted"]


def test_the_tables_views_read_keep_a_change_feed_and_updates_are_taken_back(project):
    project.source("raw.py", RAW_TABLE)
    project.source("views.py", VIEW)
    project.land("1.json", orders(0, 20) + orders(40, 6, region="us"))
    assert project.run().ok
    assert feed_setting(project, "raw") == "true"
    assert feed_setting(project, "unread") is None
    plan = changed_and_refreshed(project)
    assert plan["chosen"] == "GROUP_AGGREGATE", plan
    assert "taken back" in plan["reason"], plan


def test_the_users_setting_stands_and_the_feed_is_turned_on_when_it_goes(project):
    project.source("raw.py", RAW_TABLE.replace("@dp.table\n", NO_FEED))
    project.source("views.py", VIEW)
    project.land("1.json", orders(0, 20) + orders(40, 6, region="us"))
    assert project.run().ok
    assert feed_setting(project, "raw") == "false"
    # Without the feed the changes are read back from the files the commits removed and
    # added: here the table's one file each time, more rows than a recompute reads.
    plan = changed_and_refreshed(project)
    assert plan["chosen"] == "FULL_RECOMPUTE", plan
    assert "more than the 23 a recompute reads" in plan["reason"], plan

    project.source("raw.py", RAW_TABLE)  # the setting removed: the runner's turn
    result = project.run()
    assert result.ok, result.failed()
    turned = [e for e in result.events if e.event_type == "change_data_feed_enabled"]
    assert [e.details["dataset"].rsplit(".", 1)[-1] for e in turned] == ["raw"]
    assert feed_setting(project, "raw") == "true"
    assert techniques(result)["counted"]["chosen"] == "NO_OP"  # (a commit without data)
    # The view's record is from before the feed began: its next change is read from the
    # commits' files (their change files now hold the changed rows), the ones after that
    # from the feed; both are taken back.
    plan = changed_and_refreshed(project)
    assert plan["chosen"] == "GROUP_AGGREGATE", plan
    assert "the files its commits removed and added have them" in plan["reason"], plan
    plan = changed_and_refreshed(project)
    assert plan["chosen"] == "GROUP_AGGREGATE" and "change data feed has them" in plan["reason"]
    assert techniques(project.run())["counted"]["chosen"] == "NO_OP"


def test_an_update_of_most_rows_is_recomputed_and_a_small_one_taken_back(project):
    """The cost model for updates, from the commits' metrics and the files' stats: all 26
    rows updated are 52 images to read against 26 rows to recompute from; one row
    updated is 2 images."""
    project.source("raw.py", RAW_TABLE)
    project.source("views.py", VIEW)
    project.land("1.json", orders(0, 20) + orders(40, 6, region="us"))
    assert project.run().ok
    db = project.database
    plans = []
    for where in ("true", "id = 1"):
        project.spark.sql(f"UPDATE {db}.raw SET amount = amount + 1 WHERE {where}")
        result = project.run()
        assert result.ok, result.failed()
        view_checks.same_rows(project, "counted", QUERY)
        plans.append(techniques(result)["counted"])
    everything, one = plans
    assert everything["chosen"] == "FULL_RECOMPUTE", everything
    assert "reads 52 changed rows" in everything["reason"], everything
    assert (everything["rows_changed"], everything["input_rows"]) == (52, 26)
    assert one["chosen"] == "GROUP_AGGREGATE", one
    assert (one["rows_changed"], one["input_rows"]) == (2, 26)
