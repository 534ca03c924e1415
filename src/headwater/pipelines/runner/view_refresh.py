"""A materialized view's refresh, planned: the facts from the logs and the query's plan
(:mod:`headwater.pipelines.refresh.inputs`), the technique (:mod:`..refresh.plan`), and
the record the refresh leaves in the view's commit for the next one."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, MapType, StringType, StructField, StructType

from headwater import api
from headwater.engines.door import TableDoor, WriteResult, read_changes
from headwater.pipelines.define.elements import Dataset, RefreshPolicy
from headwater.pipelines.graph.analysis import AnalysedFlow, AnalysedQuery, Graph
from headwater.pipelines.refresh import arrow_refresh, avg_state, plan_nodes, snapshots
from headwater.pipelines.refresh import inputs as view_inputs
from headwater.pipelines.refresh.arrow_refresh import ARROW_UP_TO_ROWS
from headwater.pipelines.refresh.plan import (
    Aggregation,
    Change,
    Combine,
    Facts,
    Recorded,
    RefreshPlan,
    Technique,
    plan_refresh,
)
from headwater.pipelines.runner import affected_keys, partition_refresh, view_avg

CHANGE_TYPE = "_change_type"  # the change data feed's own columns
CDF_COLUMNS = (CHANGE_TYPE, "_commit_version", "_commit_timestamp")
# Session setting: the largest view (bytes) the group aggregate technique rewrites whole
# rather than MERGEs into (see :func:`headwater.pipelines.refresh.plan.plan_refresh`).
REWRITE_UP_TO = "headwater.pipelines.groupAggregate.rewriteUpToBytes"


def input_versions(spark: SparkSession, graph: Graph, af: AnalysedFlow) -> dict[str, int | None]:
    """Each stored input's latest version — the pipeline's datasets and the Delta tables
    outside it that the flow reads (by location) — read before the query is: a commit that
    lands after this and is read anyway only makes the next refresh recompute (never miss
    it)."""
    found: dict[str, int | None] = {}
    for key in sorted(graph.upstream(af) | graph.outside(af)):
        table = api.table(spark, key)
        found[key] = view_inputs.latest_version(table.location) if table.exists() else None
    return found


@dataclass(frozen=True)
class ChangedRows:
    """The changed inputs' rows an incremental refresh runs its query on: those added
    (appended, inserted, or an update's new image) and, when rows were also updated or
    deleted, those removed (deleted, or an update's old image; empty for inputs that only
    grew)."""

    added: dict[str, DataFrame]
    removed: dict[str, DataFrame] | None = None
    arrow: arrow_refresh.ArrowJob | None = None  # a small change: refreshed in Arrow instead


Planned = tuple[RefreshPlan, str, ChangedRows | None]


RealQuery = Callable[[], tuple[DataFrame, Mapping[str, Sequence[DataFrame]]]]


@snapshots.scope()
@plan_nodes.scope()
def plan_view(
    spark: SparkSession,
    af: AnalysedFlow,
    dataset: Dataset,
    versions: Mapping[str, int | None],
    real: RealQuery,
    *,
    quarantines: bool = False,
    state_folder: str | None = None,
) -> Planned:
    """The plan of this refresh, what its commit records, and (for the *append* and
    *group aggregate* techniques) the changed inputs' rows; each table version it reads
    loaded once and each question about the query's plan asked once (a scope per call). A
    view with ``avg`` keeps its sums and counts in a new folder under ``state_folder``
    (:mod:`.view_avg`), named in the record.

    Planned first on the query the graph's analysis kept
    (:class:`..graph.analysis.AnalysedQuery`: its reads are stand-ins of the inputs): a
    *no-op* or a *group aggregate* done in Arrow needs no query on the real tables, and
    ``real`` (the query built on them, with its reads by input) is never called — its
    reads list the inputs' files, about half of a small refresh. Any other plan, no query
    kept, or a stand-in without its input's columns at the version read (its schema
    changed since the definition was analysed): planned on ``real()``."""
    analysed = af.query
    if analysed is not None and not quarantines and _reads_now(analysed, versions):
        planned = _plan(
            spark,
            af,
            dataset,
            analysed.df,
            versions,
            analysed.reads,
            quarantines=quarantines,
            state_folder=state_folder,
        )
        plan, _, changed = planned
        if plan.technique == Technique.NO_OP:  # (nothing read: the stand-ins' columns moot)
            return planned
        arrow = changed is not None and changed.arrow is not None
        if arrow and _stands_in(spark, analysed, versions):
            return planned
    df, frames = real()
    return _plan(
        spark, af, dataset, df, versions, frames, quarantines=quarantines, state_folder=state_folder
    )


def _stands_in(
    spark: SparkSession, analysed: AnalysedQuery, versions: Mapping[str, int | None]
) -> bool:
    """Whether the analysed query reads the inputs read now, each stand-in with its
    input's columns at the version read."""
    if not _reads_now(analysed, versions):
        return False
    for key, stand_ins in analysed.reads.items():
        version = versions[key]
        if version is None:
            return False
        stored = snapshots.at(api.table(spark, key).location, version).schema
        if not all(same_columns(s.schema, stored) for s in stand_ins):
            return False
    return True


def _reads_now(analysed: AnalysedQuery, versions: Mapping[str, int | None]) -> bool:
    """Whether the analysed query reads the inputs read now, each with a version."""
    return set(analysed.reads) == set(versions) and None not in versions.values()


def same_columns(stand_in: StructType, stored: StructType) -> bool:
    """Whether a stand-in has its input's columns: names, types and nullability at every
    depth, not metadata (a column that may hold NULL where the stand-in's may not would
    change what the plan concludes, such as whether a sum can take rows back)."""
    return _columns(stand_in) == _columns(stored)


def _columns(kind: DataType) -> object:
    if isinstance(kind, StructType):
        return tuple((f.name, f.nullable, _columns(f.dataType)) for f in kind.fields)
    if isinstance(kind, ArrayType):
        return ("array", kind.containsNull, _columns(kind.elementType))
    if isinstance(kind, MapType):
        return ("map", _columns(kind.keyType), _columns(kind.valueType), kind.valueContainsNull)
    return kind.simpleString()


def _plan(
    spark: SparkSession,
    af: AnalysedFlow,
    dataset: Dataset,
    df: DataFrame,
    versions: Mapping[str, int | None],
    frames: Mapping[str, Sequence[DataFrame]],
    *,
    quarantines: bool,
    state_folder: str | None,
) -> Planned:
    definition = view_inputs.definition_digest(af.flow, af.schema.json())
    view = api.table(spark, af.target)
    recorded, view_version = (
        view_inputs.last_recorded(view.location) if view.exists() else (None, None)
    )
    found: dict[str, view_inputs.InputChange] = {}
    if recorded is not None:
        for key, now in versions.items():
            if now is not None and key in recorded.inputs:
                location = api.table(spark, key).location
                found[key] = view_inputs.change_between(location, recorded.inputs[key], now)
    changes = {k: f.change for k, f in found.items()}
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
        view_bytes=(  # (a NO_OP loads no snapshot: the view's size only when changed)
            view_inputs.data_bytes(view.location, view_version)
            if view_version is not None and any(c != Change.NONE for c in changes.values())
            else None
        ),
        change_feed=frozenset(k for k, f in found.items() if f.change_feed),
        derived=frozenset(k for k, f in found.items() if f.derived),
    )
    kept = _kept(facts.shape.aggregate, dataset, quarantines, state_folder)
    if kept is not None and state_folder is not None:
        view_avg.prune(state_folder, recorded.state if recorded is not None else None)
    if kept is not None and recorded is not None and recorded.state is not None:
        facts = replace(facts, state_readable=view_avg.readable(recorded.state))
    grown = sorted(k for k, c in changes.items() if c == Change.APPENDS)
    if grown and len(grown) == len([c for c in changes.values() if c != Change.NONE]):
        gained, held = _row_counts(spark, grown, found, versions)
        facts = replace(facts, rows_appended=gained, rows_in_inputs=held)
    if Change.UPDATES in changes.values():
        facts = _update_counts(spark, facts, found, versions)
    # A view keeping averages' sums (kept) is a group aggregate: its kept state is what a
    # partition overwrite would not write, so only the group aggregate refreshes it.
    if any(c != Change.NONE for c in changes.values()) and not quarantines and kept is None:
        assert recorded is not None
        partitioned = partition_refresh.partition_facts(
            spark, df, frames, view.location, since=recorded.inputs, now=versions, found=found
        )
        facts = replace(facts, partitioned=partitioned)
    rewrite_up_to = spark.conf.get(REWRITE_UP_TO, None)
    if rewrite_up_to:
        facts = replace(facts, rewrite_up_to=int(rewrite_up_to))
    state = view_avg.new_state(state_folder) if kept is not None and state_folder else None
    record = view_inputs.user_metadata(
        {k: v for k, v in versions.items() if v is not None}, definition, state
    )
    plan = _keeping(plan_refresh(af.target, facts), kept, recorded, state)
    if plan.technique == Technique.FULL_RECOMPUTE and facts.partitioned is not None:
        # (asked only after a change no other technique refreshes: a view with kept averages,
        # or quarantines, has no partition facts either)
        facts = replace(facts, keyed=affected_keys.keyed_facts(df, frames))
        plan = plan_refresh(af.target, facts)
    if plan.technique not in (Technique.APPEND, Technique.GROUP_AGGREGATE) and plan.keyed is None:
        return plan, record, None
    assert recorded is not None
    if plan.technique == Technique.GROUP_AGGREGATE and not plan.merge and plan.keyed is None:
        job = _arrow_job(spark, af, dataset, df, frames, plan, since=recorded.inputs, now=versions)
        if not isinstance(job, str):
            return replace(plan, executor="arrow"), record, ChangedRows({}, arrow=job)
        plan = replace(plan, executor_reason=job)
    rows = ChangedRows({}, {} if plan.retract or plan.keyed is not None else None)
    for key, change in changes.items():
        if change == Change.NONE:
            continue
        table, since, now = api.table(spark, key), recorded.inputs[key], versions[key]
        assert now is not None
        if change == Change.UPDATES:  # (planned where the feed or the files have them)
            added, removed = _changed_rows(_change_feed(spark, table, since, now))
        else:
            appended = table.read_appended(since, now)
            if appended is None:  # compacted away since: recompute
                facts = replace(facts, appends_readable=False)
                return _keeping(plan_refresh(af.target, facts), kept, recorded, state), record, None
            added, removed = appended, appended.limit(0)
        rows.added[key] = added
        if rows.removed is not None:
            rows.removed[key] = removed
    return plan, record, rows


def _kept(
    aggregate: Aggregation | None, dataset: Dataset, quarantines: bool, folder: str | None
) -> Aggregation | None:
    """The aggregation whose averages' sums and counts the refresh keeps: a GROUP BY
    with averages that combine, whose rows are the query's (no expectations), in a view
    that may be refreshed incrementally."""
    if aggregate is None or not aggregate.averages or aggregate.not_mergeable is not None:
        return None
    if quarantines or dataset.expectations or folder is None:
        return None
    if dataset.refresh_policy == RefreshPolicy.FULL:  # (never incremental: nothing to keep)
        return None
    return aggregate


def _keeping(
    plan: RefreshPlan, kept: Aggregation | None, recorded: Recorded | None, state: str | None
) -> RefreshPlan:
    """``plan`` with the averages' state it reads and writes (none for a NO_OP)."""
    if kept is None or plan.technique == Technique.NO_OP:
        return plan
    incremental = plan.technique == Technique.GROUP_AGGREGATE and recorded is not None
    source = recorded.state if incremental and recorded is not None else None
    return replace(plan, kept=kept, state_from=source, state_to=state)


def _arrow_job(
    spark: SparkSession,
    af: AnalysedFlow,
    dataset: Dataset,
    df: DataFrame,
    frames: Mapping[str, Sequence[DataFrame]],
    plan: RefreshPlan,
    *,
    since: Mapping[str, int],
    now: Mapping[str, int | None],
) -> arrow_refresh.ArrowJob | str:
    """The group aggregate's refresh in Arrow on the driver, or why it runs in Spark."""
    assert plan.aggregation is not None and plan.view_version is not None
    view = api.table(spark, af.target)
    query = arrow_refresh.arrow_query(df, frames)
    if isinstance(query, str):
        return query
    version = now.get(query.input)
    if version is None or query.input not in since:
        return f"input '{query.input}' has no recorded version"
    return arrow_refresh.small_change(
        query,
        plan.aggregation,
        input_location=api.table(spark, query.input).location,
        since=since[query.input],
        now=version,
        view_location=view.location,
        view_version=plan.view_version,
        view_partitioned=bool(dataset.partition_cols or dataset.cluster_by),
        retract=plan.retract,
        up_to_rows=int(spark.conf.get(arrow_refresh.UP_TO_ROWS, None) or ARROW_UP_TO_ROWS),
        state=(plan.state_from, plan.state_to),
        state_up_to_bytes=int(
            spark.conf.get(avg_state.ON_DRIVER_UP_TO, None) or avg_state.ON_DRIVER_UP_TO_BYTES
        ),
    )


def refresh_in_arrow(
    spark: SparkSession, target: str, job: arrow_refresh.ArrowJob, record: str
) -> WriteResult | None:
    """The Arrow refresh's one commit, through the view's table (None: averages past
    their bound, nothing committed; the view is to be recomputed)."""
    return arrow_refresh.refresh(job, record, api.table(spark, target))


def _change_feed(spark: SparkSession, table: TableDoor, since: int, now: int) -> DataFrame:
    """The rows the commits after ``since`` up to ``now`` changed: their change files read
    by Spark's own Parquet scan when they hold the whole change (an UPDATE, DELETE or
    MERGE each wrote some), else read by the door from the change files and the files the
    commits removed and added (:func:`headwater.engines.door.read_changes`: with the
    table's change data feed on or not, on either engine; in Python workers, slower)."""
    log = table.log()
    files = log.change_files(since, now)
    if not files:
        return read_changes(spark, log, since, now)
    schema = table.read(version=now).schema
    kind = StructField(CHANGE_TYPE, StringType(), True)
    return spark.read.schema(StructType([*schema.fields, kind])).parquet(*files)


def _changed_rows(feed: DataFrame) -> tuple[DataFrame, DataFrame]:
    """The change feed's rows split into those added and those removed, in the table's
    columns."""
    columns = [f"`{c}`" for c in feed.columns if c not in CDF_COLUMNS]
    kind = F.col(CHANGE_TYPE)
    added = feed.where(kind.isin("insert", "update_postimage")).select(*columns)
    removed = feed.where(kind.isin("delete", "update_preimage")).select(*columns)
    return added, removed


def _row_counts(
    spark: SparkSession,
    keys: Sequence[str],
    found: Mapping[str, view_inputs.InputChange],
    now: Mapping[str, int | None],
) -> tuple[int | None, int | None]:
    """The rows the appended inputs gained (counted from their commits' stats as they were
    classified) and hold now: what the cost model weighs and the planning event shows."""
    return _counted(spark, keys, {k: found[k].rows_added for k in keys}, now)


def _update_counts(
    spark: SparkSession,
    facts: Facts,
    found: Mapping[str, view_inputs.InputChange],
    now: Mapping[str, int | None],
) -> Facts:
    """With rows updated or deleted: the rows taking the change back reads (from the
    commits' metrics) and the rows the changed inputs hold (from their files' stats),
    what the cost model weighs (unknown: not weighed)."""
    keys = sorted(k for k, f in found.items() if f.change != Change.NONE)
    read, total = _counted(spark, keys, {k: found[k].rows_changed for k in keys}, now)
    return replace(facts, rows_changed=read, rows_in_inputs=total)


def _counted(
    spark: SparkSession,
    keys: Sequence[str],
    rows: Mapping[str, int | None],
    now: Mapping[str, int | None],
) -> tuple[int | None, int | None]:
    """The sum of ``rows`` over ``keys``, and the rows those inputs hold at their versions
    ``now`` (either None when one input's count is unknown)."""
    summed: int | None = 0
    total: int | None = 0
    for key in keys:
        version = now[key]
        assert version is not None
        n = rows[key]
        t = view_inputs.rows_at(api.table(spark, key).location, version)
        summed = None if summed is None or n is None else summed + n
        total = None if total is None or t is None else total + t
    return summed, total


def signed_groups(
    added: DataFrame, removed: DataFrame | None, aggregation: Aggregation
) -> DataFrame:
    """The groups of the query on the added rows and, negated, those on the removed rows:
    what each touched group's counts and sums change by (a sum's NULL adds nothing)."""
    if removed is None:
        return added
    negated = removed.select(
        *[
            (-F.col(f"`{c}`")).cast(removed.schema[c].dataType).alias(c)
            if c in aggregation.columns
            else F.col(f"`{c}`")
            for c in removed.columns
        ]
    )
    return added.unionByName(negated)


def merge_groups(
    spark: SparkSession,
    target: str,
    groups: DataFrame,
    aggregation: Aggregation,
    record: str,
    *,
    retract: bool = False,
) -> WriteResult:
    """The *group aggregate* technique's commit on a large view: ``groups`` (the query on
    the new rows: one row per touched group; with ``retract``, :func:`signed_groups`)
    merged into the view ``target`` by its keys (NULL keys matching NULL keys), each
    aggregate combined with the view's, groups left with no row deleted, the refresh's
    record in the same commit."""
    if retract:
        groups = _regrouped(groups, aggregation, groups.schema)
    keys = [f"t.`{k}` <=> s.`{k}`" for k in aggregation.keys]
    condition = " AND ".join(keys) if keys else F.lit(True)
    combined = {
        f"`{c}`": _combine(F.col(f"t.`{c}`"), F.col(f"s.`{c}`"), how)
        for c, how in aggregation.columns.items()
    }
    for column, count in (aggregation.sum_counts or {}).items() if retract else ():
        left = F.col(f"t.`{count}`") + F.col(f"s.`{count}`")
        combined[f"`{column}`"] = F.when(left == 0, F.lit(None)).otherwise(combined[f"`{column}`"])
    clauses = [api.Clause("matched", "update", None, combined), api.Clause("not_matched", "insert")]
    if retract and aggregation.keys and aggregation.rows is not None:
        rows = f"s.`{aggregation.rows}`"
        emptied = F.expr(f"t.`{aggregation.rows}` + {rows} = 0")
        clauses = [
            api.Clause("matched", "delete", emptied),
            clauses[0],
            api.Clause("not_matched", "insert", F.expr(f"{rows} > 0")),
        ]
    result = api.table(spark, target).merge(
        groups.alias("s"), condition, clauses, target_alias="t", user_metadata=record
    )
    metrics = result.metrics
    touched = sum(
        metrics.get(m, 0)
        for m in ("numTargetRowsUpdated", "numTargetRowsInserted", "numTargetRowsDeleted")
    )
    return WriteResult(result.version, num_rows=touched)


def combined_groups(
    spark: SparkSession,
    target: str,
    version: int,
    groups: DataFrame,
    aggregation: Aggregation,
    *,
    retract: bool = False,
) -> DataFrame:
    """The view's rows at ``version`` with ``groups`` (the query on the new rows; with
    ``retract``, :func:`signed_groups`) combined in: both unioned and aggregated again by
    the keys (NULL keys group together, as in the query), each aggregate by its combining
    function — sums and counts summed, minimums and maximums taken again; with ``retract``
    a sum whose count reaches 0 is NULL and a group whose rows do is gone. What the *group
    aggregate* technique writes over a small view, in one overwrite: one aggregation of a
    view's worth of rows, no join."""
    view = api.table(spark, target).read(version=version)
    both = view.unionByName(groups.select(*[f"`{c}`" for c in view.columns]))
    combined = _regrouped(both, aggregation, view.schema)
    if retract:
        combined = _emptied(combined, aggregation)
    return combined.select(*[f"`{c}`" for c in view.columns])


def _regrouped(rows: DataFrame, aggregation: Aggregation, schema: StructType) -> DataFrame:
    """``rows`` (groups' partial results) aggregated again by the keys."""
    again = {
        Combine.SUM: F.sum,
        Combine.ADD: F.sum,
        Combine.LEAST: F.min,
        Combine.GREATEST: F.max,
        Combine.AVERAGE: F.max,  # (replaced by the kept sums' average: view_avg)
    }
    aggregates = [
        again[how](F.col(f"`{c}`")).cast(schema[c].dataType).alias(c)
        for c, how in aggregation.columns.items()
    ]
    keys = [F.col(f"`{k}`") for k in aggregation.keys]
    return rows.groupBy(*keys).agg(*aggregates) if keys else rows.agg(*aggregates)


def _emptied(groups: DataFrame, aggregation: Aggregation) -> DataFrame:
    """Groups with rows taken back: a sum with no value left is NULL, a group with no row
    left is gone (a global aggregate keeps its one row)."""
    for column, count in (aggregation.sum_counts or {}).items():
        value = F.when(F.col(f"`{count}`") == 0, F.lit(None)).otherwise(F.col(f"`{column}`"))
        groups = groups.withColumn(column, value.cast(groups.schema[column].dataType))
    if aggregation.keys and aggregation.rows is not None:
        groups = groups.where(F.col(f"`{aggregation.rows}`") > 0)
    return groups


def regrouped(rows: DataFrame, aggregation: Aggregation) -> DataFrame:
    """Signed groups (:func:`signed_groups`) as one row per touched group."""
    return _regrouped(rows, aggregation, rows.schema)


def _combine(old: Column, new: Column, how: Combine) -> Column:
    if how == Combine.AVERAGE:  # (the source's average is the group's new one)
        return new
    if how == Combine.SUM:
        return F.when(old.isNull(), new).when(new.isNull(), old).otherwise(old + new)
    if how == Combine.ADD:
        return old + new
    if how == Combine.LEAST:
        return F.least(old, new)
    return F.greatest(old, new)
