"""AUTO CDC straight from a Delta table's change data feed: an SCD1 silver table (itself an
AUTO CDC target) feeds a second AUTO CDC target with its inserts, updates and deletes;
after every update the gold table equals the silver one."""

from __future__ import annotations

import pytest

from tests.pipelines.auto_cdc_cases import USERS, ordered

# A whole file of pipeline updates (minutes in CI): with the crash and benchmark files, it
# runs in one of the three parts scripts/test.sh takes in turn, a part per commit.
pytestmark = pytest.mark.slow

SILVER = (
    USERS
    + """
dlt.create_streaming_table("silver", table_properties={"delta.enableChangeDataFeed": "true"})
dlt.create_auto_cdc_flow(
    target="silver", source="users", keys=["userId"], sequence_by="sequenceNum",
    apply_as_deletes="operation = 'DELETE'", except_column_list=["operation"],
)


@dlt.view
def silver_changes():
    return spark.readStream.option("readChangeFeed", "true").table("silver")
"""
)
FEED = 'spark.readStream.option("readChangeFeed", "true").table("silver")'
GOLD = {
    "python": """
dlt.create_streaming_table("gold")
dlt.create_auto_cdc_flow(
    target="gold", source="silver_changes", keys=["userId"], sequence_by="_commit_version",
)
""",
    "sql": """
CREATE OR REFRESH STREAMING TABLE gold;
CREATE FLOW gold_cdc AS AUTO CDC INTO gold FROM STREAM(silver_changes)
  KEYS (userId) SEQUENCE BY _commit_version;
""",
}


def rows(project, name: str) -> list[tuple]:
    return ordered([tuple(r) for r in project.spark.table(f"{project.database}.{name}").collect()])


def user(key, name, city, seq, op="UPSERT"):
    return {"userId": key, "name": name, "city": city, "operation": op, "sequenceNum": seq}


@pytest.mark.parametrize("form", ["python", "sql"])
def test_an_scd1_target_feeds_another_through_its_change_feed(project, form):
    # the SQL form reads the feed with Spark's change reader, changes()
    feed = 'spark.readStream.changes("silver")'
    project.source("silver.py", SILVER.replace(FEED, feed) if form == "sql" else SILVER)
    project.source(
        "gold.sql" if form == "sql" else "gold.py",
        GOLD[form] if form == "sql" else "import dlt\n" + GOLD[form],
    )
    updates = [
        [user(1, "Ana", "Lima", 1), user(2, "Bo", "Oslo", 1), user(3, "Cy", "Rome", 1)],
        [user(1, "Ana", "Cusco", 2), user(2, None, None, 2, "DELETE"), user(4, "Di", "Nice", 1)],
        [user(2, "Bo", "Bergen", 3), user(3, "Cy", "Milan", 2), user(3, "Cy", "Turin", 3)],
        [user(1, None, None, 3, "DELETE"), user(4, "Dee", "Nice", 2)],
    ]
    for i, events in enumerate(updates):
        project.land(f"{i}.json", events, folder="users")
        result = project.run()
        assert result.ok, result.failed()
        silver = rows(project, "silver")
        assert rows(project, "gold") == silver, f"after update {i}"
    assert silver == ordered([(2, "Bo", "Bergen", 3), (3, "Cy", "Turin", 3), (4, "Dee", "Nice", 2)])
    columns = project.spark.table(f"{project.database}.gold").columns
    assert columns == ["userId", "name", "city", "sequenceNum"]
