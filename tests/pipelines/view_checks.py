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
