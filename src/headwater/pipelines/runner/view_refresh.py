"""A materialized view's refresh, planned: the facts from the logs and the query's plan
(:mod:`headwater.pipelines.refresh.inputs`), the technique (:mod:`..refresh.plan`), and
the record the refresh leaves in the view's commit for the next one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from headwater import api
from headwater.delta.write.batch import WriteResult
from headwater.pipelines.define.elements import Dataset
from headwater.pipelines.graph.analysis import AnalysedFlow, Graph
from headwater.pipelines.refresh import inputs as view_inputs
from headwater.pipelines.refresh.plan import (
    Aggregation,
    Change,
    Combine,
    Facts,
    RefreshPlan,
    Technique,
    plan_refresh,
)

# Session setting: the largest view (bytes) the group aggregate technique rewrites whole
# rather than MERGEs into (see :func:`headwater.pipelines.refresh.plan.plan_refresh`).
REWRITE_UP_TO = "headwater.pipelines.groupAggregate.rewriteUpToBytes"


def input_versions(spark: SparkSession, graph: Graph, af: AnalysedFlow) -> dict[str, int | None]:
    """Each stored input's latest version, read before the query is: a commit that lands
    after this and is read anyway only makes the next refresh recompute (never miss it)."""
    found: dict[str, int | None] = {}
    for key in sorted(graph.upstream(af)):
        table = api.table(spark, key)
        found[key] = view_inputs.latest_version(table.location) if table.exists() else None
    return found


def plan_view(
    spark: SparkSession,
    af: AnalysedFlow,
    dataset: Dataset,
    df: DataFrame,
    versions: Mapping[str, int | None],
    frames: Mapping[str, Sequence[DataFrame]],
    *,
    quarantines: bool = False,
) -> tuple[RefreshPlan, str, dict[str, DataFrame]]:
    """The plan of this refresh, what its commit records, and (for the *append* and
    *group aggregate* techniques) the new rows of each appended input."""
    definition = view_inputs.definition_digest(af.flow, af.schema.json())
    view = api.table(spark, af.target)
    recorded, view_version = (
        view_inputs.last_recorded(view.location) if view.exists() else (None, None)
    )
    changes = {}
    if recorded is not None:
        for key, now in versions.items():
            if now is not None and key in recorded.inputs:
                location = api.table(spark, key).location
                changes[key] = view_inputs.change_between(location, recorded.inputs[key], now)
    all_frames = [d for reads in frames.values() for d in reads]
    deterministic, unversioned = view_inputs.query_facts(df, all_frames)
    unversioned += tuple(k for k, v in versions.items() if v is None)
    facts = Facts(
        policy=dataset.refresh_policy,
        definition=definition,
        recorded=recorded,
        view_version=view_version,
        inputs=dict(versions),
        changes=changes,
        deterministic=deterministic,
        unversioned=unversioned,
        shape=view_inputs.query_shape(df, frames),
        quarantines=quarantines,
        expectations=bool(dataset.expectations),
        view_bytes=view_inputs.data_bytes(view.location) if view_version is not None else None,
    )
    grown = sorted(k for k, c in changes.items() if c == Change.APPENDS)
    if grown and recorded is not None:
        added, total = _row_counts(spark, grown, recorded.inputs, versions)
        facts = replace(facts, rows_appended=added, rows_in_inputs=total)
    rewrite_up_to = spark.conf.get(REWRITE_UP_TO, None)
    if rewrite_up_to:
        facts = replace(facts, rewrite_up_to=int(rewrite_up_to))
    record = view_inputs.user_metadata(
        {k: v for k, v in versions.items() if v is not None}, definition
    )
    plan = plan_refresh(af.target, facts)
    appended: dict[str, DataFrame] = {}
    if plan.technique in (Technique.APPEND, Technique.GROUP_AGGREGATE):
        assert recorded is not None
        for key, change in changes.items():
            if change != Change.APPENDS:
                continue
            now = versions[key]
            assert now is not None
            rows = api.table(spark, key).read_appended(recorded.inputs[key], now)
            if rows is None:  # compacted away since: recompute
                facts = replace(facts, appends_readable=False)
                return plan_refresh(af.target, facts), record, {}
            appended[key] = rows
    return plan, record, appended


def _row_counts(
    spark: SparkSession,
    keys: Sequence[str],
    since: Mapping[str, int],
    now: Mapping[str, int | None],
) -> tuple[int | None, int | None]:
    """The rows the appended inputs gained and hold now, from their logs' stats (what the
    cost model weighs and the planning event shows), or None where a count is unknown."""
    added: int | None = 0
    total: int | None = 0
    for key in keys:
        location, version = api.table(spark, key).location, now[key]
        assert version is not None
        n = view_inputs.rows_added(location, since[key], version)
        t = view_inputs.rows_at(location, version)
        added = None if added is None or n is None else added + n
        total = None if total is None or t is None else total + t
    return added, total


def merge_groups(
    spark: SparkSession, target: str, groups: DataFrame, aggregation: Aggregation, record: str
) -> WriteResult:
    """The *group aggregate* technique's commit on a large view: ``groups`` (the query on
    the new rows: one row per touched group) merged into the view ``target`` by its keys
    (NULL keys matching NULL keys), each aggregate combined with the view's, the refresh's
    record in the same commit."""
    keys = [f"t.`{k}` <=> s.`{k}`" for k in aggregation.keys]
    condition = " AND ".join(keys) if keys else F.lit(True)
    combined = {
        f"`{c}`": _combine(F.col(f"t.`{c}`"), F.col(f"s.`{c}`"), how)
        for c, how in aggregation.columns.items()
    }
    result = api.table(spark, target).merge(
        groups.alias("s"),
        condition,
        [api.Clause("matched", "update", None, combined), api.Clause("not_matched", "insert")],
        target_alias="t",
        user_metadata=record,
    )
    touched = result.metrics.get("numTargetRowsUpdated", 0) + result.metrics.get(
        "numTargetRowsInserted", 0
    )
    return WriteResult(result.version, num_rows=touched)


def combined_groups(
    spark: SparkSession, target: str, version: int, groups: DataFrame, aggregation: Aggregation
) -> DataFrame:
    """The view's rows at ``version`` with ``groups`` (the query on the new rows) combined
    in: both unioned and aggregated again by the keys (NULL keys group together, as in the
    query), each aggregate by its combining function — sums and counts summed, minimums and
    maximums taken again. What the *group aggregate* technique writes over a small view, in
    one overwrite: one aggregation of a view's worth of rows, no join."""
    view = api.table(spark, target).read(version=version)
    both = view.unionByName(groups.select(*view.columns))
    again = {Combine.SUM: F.sum, Combine.ADD: F.sum, Combine.LEAST: F.min, Combine.GREATEST: F.max}
    aggregates = [
        again[how](F.col(f"`{c}`")).cast(view.schema[c].dataType).alias(c)
        for c, how in aggregation.columns.items()
    ]
    keys = [F.col(f"`{k}`") for k in aggregation.keys]
    combined = both.groupBy(*keys).agg(*aggregates) if keys else both.agg(*aggregates)
    return combined.select(*[f"`{c}`" for c in view.columns])


def _combine(old: Column, new: Column, how: Combine) -> Column:
    if how == Combine.SUM:
        return F.when(old.isNull(), new).when(new.isNull(), old).otherwise(old + new)
    if how == Combine.ADD:
        return old + new
    if how == Combine.LEAST:
        return F.least(old, new)
    return F.greatest(old, new)
