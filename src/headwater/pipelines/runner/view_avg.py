"""The kept sums and counts behind a materialized view's ``avg`` columns, in Spark (see
:mod:`headwater.pipelines.refresh.averages` for why they make the view's averages exact).

The state is a Parquet folder of one row per group: the view's keys, ``__rows`` (the
group's rows) and per average its exact sum, count and sum of absolute values. Each
refresh writes a new folder (never over the one its record names) before the view's
commit; the commit's record names it."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from headwater import storage
from headwater.pipelines.refresh import averages as avg
from headwater.pipelines.refresh import avg_state
from headwater.pipelines.refresh.plan import Aggregation, RefreshPlan
from headwater.storage.paths import hadoop_uri

STRIPPED = ("SubqueryAlias", "View", "Sort")  # above the query's aggregate (as in its shape)


def partial_state(spark: SparkSession, query: DataFrame, aggregation: Aggregation) -> DataFrame:
    """The state of ``query``'s groups: its aggregate's input rows grouped by the same
    keys, each average's values summed exactly and counted (read from the query's
    analysed plan, so the keys and averaged values are the query's own expressions)."""
    jvm = spark._jvm
    assert jvm is not None
    root = query._jdf.queryExecution().analyzed()
    while root.nodeName() in STRIPPED:
        root = root.children().apply(0)
    child = root.child()
    rows = DataFrame(
        jvm.org.apache.spark.sql.classic.Dataset.ofRows(spark._jsparkSession, child), spark
    )

    def column(expression: object) -> Column:
        return Column(jvm.org.apache.spark.sql.classic.ExpressionUtils.column(expression))

    grouping = _seq(root.groupingExpressions())
    keys: list[Column] = []
    values: dict[str, Column] = {}
    for e in _seq(root.aggregateExpressions()):
        value = e.child() if e.nodeName() == "Alias" else e
        name = str(e.name())
        if any(value.semanticEquals(g) for g in grouping):
            keys.append(column(value).alias(name))
        elif name in {a.column for a in aggregation.averages}:
            values[name] = column(value.aggregateFunction().child())
    measures = [F.count(F.lit(1)).alias(avg.ROWS)]
    for a in aggregation.averages:
        x = values[a.column] if a.decimal is not None else values[a.column].cast(a.sum_type)
        magnitude = F.sum(F.abs(x)) if a.decimal is None else F.lit(0)  # (decimals: counts)
        measures += [
            F.sum(x).cast(a.sum_type).alias(a.sum),
            F.count(x).alias(a.count),
            magnitude.cast(a.sum_type).alias(a.magnitude),
        ]
    return rows.groupBy(*keys).agg(*measures) if keys else rows.agg(*measures)


def combined_state(
    spark: SparkSession,
    path: str,
    added: DataFrame,
    removed: DataFrame | None,
    aggregation: Aggregation,
) -> DataFrame:
    """The state read from ``path`` with the added rows' state added and the removed rows'
    taken back; groups left with no row are gone (a global aggregate keeps its row)."""
    old = spark.read.parquet(hadoop_uri(path))
    parts = [old, added.select(*old.columns)]
    if removed is not None:
        parts.append(_negated(removed.select(*old.columns), aggregation))
    both = parts[0]
    for part in parts[1:]:
        both = both.unionByName(part)
    sums = [
        F.sum(F.col(f"`{c}`")).cast(old.schema[c].dataType).alias(c)
        for c in old.columns
        if c not in aggregation.keys
    ]
    by = [F.col(f"`{k}`") for k in aggregation.keys]
    if not by:
        return both.agg(*sums)
    return both.groupBy(*by).agg(*sums).where(F.col(avg.ROWS) > 0)


def new_state(folder: str) -> str:
    """A new state's path under ``folder`` (named in the record before it is written)."""
    return storage.join(folder, uuid.uuid4().hex)


def write_state(state: DataFrame, path: str) -> None:
    state.coalesce(1).write.parquet(hadoop_uri(path))


def prune(folder: str, kept: str | None) -> None:
    """Every state under ``folder`` but ``kept`` (the one the view's record names)
    deleted: those a later commit replaced, or a refresh that failed before its commit
    left. Run before a refresh writes its own, so only unnamed states go."""
    names = {storage.relative(i.path, folder).split("/")[0] for i in storage.list_files(folder)}
    keep = kept.rstrip("/").rsplit("/", 1)[-1] if kept else None
    for name in sorted(names - {keep}):
        storage.delete_dir(storage.join(folder, name))


def readable(path: str) -> bool:
    return storage.exists(storage.join(path, "_SUCCESS"))


def exact(spark: SparkSession, path: str, aggregation: Aggregation) -> bool:
    """Whether every group's average derived from the state at ``path`` is Spark's."""
    state = spark.read.parquet(hadoop_uri(path))
    bounds = [
        m
        for a in aggregation.averages
        for m in (
            F.max(F.col(a.magnitude)).alias(a.magnitude),
            F.max(F.col(a.count)).alias(a.count),
        )
    ]
    found = state.agg(*bounds).collect()[0]
    return all(
        avg.exact(
            a,
            None if found[a.magnitude] is None else int(found[a.magnitude]),
            None if found[a.count] is None else int(found[a.count]),
        )
        for a in aggregation.averages
    )


def with_averages(groups: DataFrame, state: DataFrame, aggregation: Aggregation) -> DataFrame:
    """``groups`` (the view's rows, or its touched groups: one row per key) with each
    average replaced by the one derived from ``state`` (NULL for a group the state has
    not: one that emptied), in the same columns and types."""
    derived = [F.col(f"`{k}`").alias(f"__key{i}") for i, k in enumerate(aggregation.keys)]
    for a in aggregation.averages:
        derived.append(_average(state, a, groups.schema[a.column].dataType).alias(a.column))
    values = state.select(*derived)
    kept = groups.drop(*[a.column for a in aggregation.averages])
    if aggregation.keys:
        on = [
            kept[f"`{k}`"].eqNullSafe(values[f"__key{i}"]) for i, k in enumerate(aggregation.keys)
        ]
        joined = kept.join(values, on, "left")
    else:
        joined = kept.crossJoin(values)
    return joined.select(*[f"`{c}`" for c in groups.columns])


def _average(state: DataFrame, a: avg.Average, kind: object) -> Column:
    """Spark's ``Average`` result from the kept sum and count: a double division of the
    sum by the count, or for decimals the sum divided by the count as decimal(20, 0) and
    rounded HALF_UP to the view's decimal type; NULL with no value."""
    total, count = F.col(a.sum), F.col(a.count)
    if a.decimal is None:
        value = total.cast("double") / count.cast("double")
    else:
        value = (total / count.cast(f"decimal({avg.COUNT_DIGITS},0)")).cast(kind)  # type: ignore[arg-type]
    return F.when(count == 0, F.lit(None)).otherwise(value).cast(kind)  # type: ignore[arg-type]


def state_folder(checkpoint: str) -> str:
    return storage.join(checkpoint, "view_state")


def _seq(seq: object) -> Sequence:
    return [seq.apply(i) for i in range(seq.size())]  # type: ignore[attr-defined]


PAST_BOUND = (
    "a group's average past the bound where its kept exact sum gives Spark's result "
    "(2^53 for integral values' sums, or too many rows for a decimal division)"
)


@dataclass(frozen=True)
class Kept:
    """The state an incremental refresh wrote, and whether its averages are Spark's."""

    exact: bool
    state: DataFrame  # the state written (on the driver: its rows, not read back)


def keep(
    spark: SparkSession, plan: RefreshPlan, added: DataFrame, removed: DataFrame | None
) -> Kept:
    """The incremental refresh's state written (the recorded one with the changed rows'
    groups combined in), and whether its averages are Spark's (else: recompute). A small
    state is combined on the driver (:mod:`..refresh.avg_state`), a large one in Spark."""
    assert plan.kept is not None and plan.state_from is not None and plan.state_to is not None
    aggregation = plan.kept
    fresh = partial_state(spark, added, aggregation)
    gone = partial_state(spark, removed, aggregation) if removed is not None else None
    if _on_driver(spark, plan.state_from, fresh, aggregation):
        delta = fresh if gone is None else fresh.unionByName(_negated(gone, aggregation))
        table = avg_state.combined(
            avg_state.read(plan.state_from), delta.toArrow(), aggregation.keys
        )
        if table is not None:
            avg_state.write(table, plan.state_to)
            return Kept(
                avg_state.exact(table, aggregation.averages),
                spark.createDataFrame(table, schema=fresh.schema),
            )
    state = combined_state(spark, plan.state_from, fresh, gone, aggregation)
    write_state(state, plan.state_to)
    return Kept(exact(spark, plan.state_to, aggregation), read_state(spark, plan.state_to))


def _on_driver(spark: SparkSession, path: str, state: DataFrame, aggregation: Aggregation) -> bool:
    """Whether the state at ``path`` is combined on the driver: small enough (the session
    setting :data:`..refresh.avg_state.ON_DRIVER_UP_TO`) and keyed by types that group
    in Arrow as in Spark."""
    up_to = spark.conf.get(avg_state.ON_DRIVER_UP_TO, None)
    limit = int(up_to) if up_to else avg_state.ON_DRIVER_UP_TO_BYTES
    keys = [state.schema[k].dataType.simpleString() for k in aggregation.keys]
    return avg_state.on_driver(keys, path, limit)


def _negated(state: DataFrame, aggregation: Aggregation) -> DataFrame:
    """A partial state taken back: its counts and sums negated, its keys kept."""
    keys = set(aggregation.keys)
    return state.select(
        *[F.col(f"`{c}`") if c in keys else (-F.col(f"`{c}`")).alias(c) for c in state.columns]
    )


def read_state(spark: SparkSession, path: str) -> DataFrame:
    return spark.read.parquet(hadoop_uri(path))


def keep_all(spark: SparkSession, query: DataFrame, plan: RefreshPlan) -> None:
    """A recompute's state: the whole query's groups' sums and counts."""
    assert plan.kept is not None and plan.state_to is not None
    write_state(partial_state(spark, query, plan.kept), plan.state_to)


def touched(groups: DataFrame, plan: RefreshPlan, kept: Kept) -> DataFrame:
    """The MERGE's source: the touched groups (the signed changes regrouped, one row
    each: ``view_refresh.regrouped``), with their new averages."""
    assert plan.kept is not None
    return with_averages(groups, kept.state, plan.kept)


def averaged(rows: DataFrame, plan: RefreshPlan, kept: Kept) -> DataFrame:
    """The rewritten view's rows with their averages from the state written."""
    assert plan.kept is not None
    return with_averages(rows, kept.state, plan.kept)
