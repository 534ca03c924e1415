"""The change feed of commits that changed rows through deletion vectors without writing cdc
files (Databricks' DELETE), derived from the vectors before and after."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TABLE = REPO.parent / "shared" / "compat" / "delta-tables" / "cdf-table-with-cdc-and-dvs"


def _rows(df, columns: list[str]) -> Counter:
    return Counter(tuple(r) for r in df.select(*columns).collect())


@pytest.mark.skipif(not TABLE.is_dir(), reason="compat corpus not present")
def test_each_commits_changes_are_the_difference_of_its_snapshots(spark):
    """For every commit, rows the feed removes (deletes, pre-images) less rows it adds
    (inserts, post-images) equal the previous snapshot less the new one, and the other way
    round: whatever way the commit recorded its changes."""
    path = str(TABLE)
    columns = spark.read.format("delta").load(path).columns
    feed = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", 1)
        .load(path)
        .cache()
    )
    latest = feed.agg({"_commit_version": "max"}).first()[0]
    derived = 0
    for version in range(1, latest + 1):
        before = _rows(
            spark.read.format("delta").option("versionAsOf", version - 1).load(path), columns
        )
        after = _rows(spark.read.format("delta").option("versionAsOf", version).load(path), columns)
        changes = feed.where(f"_commit_version = {version}")
        gone = _rows(changes.where("_change_type in ('delete', 'update_preimage')"), columns)
        new = _rows(changes.where("_change_type in ('insert', 'update_postimage')"), columns)
        assert gone - new == before - after, f"version {version}: removed rows differ"
        assert new - gone == after - before, f"version {version}: added rows differ"
        derived += bool(gone) and version in (2, 5, 10, 16, 24)
    assert derived == 5  # the five DELETEs that wrote deletion vectors and no cdc files
    feed.unpersist()
