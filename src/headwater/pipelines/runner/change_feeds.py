"""The change data feed turned on for the pipeline's own tables that its materialized
views read, so that rows updated or deleted in them can be taken back from a view's
groups (the *group aggregate* technique) instead of the view being recomputed.

A feed costs writes nothing for appends (they write no change files); an UPDATE, DELETE
or MERGE into the table also writes its changed rows' images once. Where the user set
``delta.enableChangeDataFeed`` on the dataset (``true`` or ``false``) their setting
stands. Turning it on in an existing table is one metadata commit; the view's record is
from before it, so the first update or delete the view sees after it is recomputed, and
the ones after that can take rows back."""

from __future__ import annotations

from dataclasses import replace

from headwater import api
from headwater.engines.door import CHANGE_FEED as ENABLE
from headwater.engines.door import change_feed_enabled
from headwater.pipelines.graph.analysis import Graph
from headwater.pipelines.runner.context import UpdateContext

STORED = ("streaming_table", "materialized_view", "table")


def read_by_views(graph: Graph) -> set[str]:
    """The pipeline's stored datasets a materialized view reads (through temporary views),
    whose feed the user did not set."""
    found: set[str] = set()
    for af in graph.flows.values():
        if graph.datasets[af.target].kind != "materialized_view" or af.flow.auto_cdc is not None:
            continue
        for key in graph.upstream(af):
            dataset = graph.datasets.get(key)
            if dataset is None or dataset.kind not in STORED:
                continue
            if not any(k.lower() == ENABLE.lower() for k in dataset.table_properties):
                found.add(key)
    return found


def with_feeds(graph: Graph, keys: set[str]) -> Graph:
    """``graph`` with ``delta.enableChangeDataFeed = true`` among the table properties of
    the datasets ``keys`` (:func:`read_by_views`): their tables are created (or
    recomputed) with it."""
    if not keys:
        return graph
    datasets = {
        key: replace(d, table_properties={**d.table_properties, ENABLE: "true"})
        if key in keys
        else d
        for key, d in graph.datasets.items()
    }
    return replace(graph, datasets=datasets)


def turn_on(ctx: UpdateContext, keys: set[str]) -> None:
    """Turn the feed on in the existing tables of ``keys`` (those :func:`read_by_views`
    names that this update writes) that lack it (appends never set a property on an
    existing table): one commit each, logged."""
    for key in sorted(keys):
        table = api.table(ctx.spark, key)
        if not table.exists():
            continue
        if change_feed_enabled(table.log().snapshot().configuration):
            continue
        table.set_properties({ENABLE: "true"})
        ctx.log.event(
            "change_data_feed_enabled",
            f"'{key}' keeps a change data feed now: the materialized views that read it "
            "can take its updated and deleted rows back instead of recomputing.",
            {"dataset": key},
            dataset_name=key,
        )
