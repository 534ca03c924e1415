"""Checks the materialized-view tests share: the planning event per view, a view against
its query recomputed from scratch, a table's Delta version."""

from __future__ import annotations

from collections import Counter

from deltalake import DeltaTable


def techniques(result) -> dict[str, dict]:
    """Each view's ``planning_information`` details in an update, by its short name."""
    return {
        (e.dataset_name or "").rsplit(".", 1)[-1]: e.details
        for e in result.events
        if e.event_type == "planning_information"
    }


def same_rows(project, view: str, query: str) -> None:
    """The view equals ``query`` (``{db}``: the project's database) run now, as multisets:
    duplicates and NULLs count."""
    expected = project.spark.sql(query.format(db=project.database))
    got = project.spark.table(f"{project.database}.{view}").select(*expected.columns)
    assert Counter(map(tuple, got.collect())) == Counter(map(tuple, expected.collect())), view


def version(project, table: str) -> int:
    location = project.spark.sql(f"DESCRIBE DETAIL {project.database}.{table}").first()
    return DeltaTable(location["location"]).version()


def commit_by_turns(project, step: int) -> str:
    """The property tests' refreshes take turns at the two ways grouped changes commit:
    odd steps MERGE them into the view (every view counts as large), even steps rewrite the
    (small) view; one random sequence covers both. Returns the way, for the test to check
    that both were exercised; unset ``REWRITE_UP_TO`` when done."""
    from headwater.pipelines.runner.view_refresh import REWRITE_UP_TO

    if step % 2:
        project.spark.conf.set(REWRITE_UP_TO, "0")
        return "merge"
    project.spark.conf.unset(REWRITE_UP_TO)
    return "rewrite"
