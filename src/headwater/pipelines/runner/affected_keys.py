"""The *affected keys* refresh (:mod:`headwater.pipelines.refresh.key_plan`): which of the
view's columns key its rows by input columns, from Spark's analysed plan; the keys the
changed rows hold (their old and new images: the change data feed's rows, or those of the
files the commits removed and added, as a take-back reads them); the query recomputed on
the inputs' rows with those keys (a semi join below the aggregate, window or DISTINCT);
and the view's rows of those keys replaced by them in one commit with the refresh's
record, so a refresh killed at any moment leaves the old rows and the old record or the
new ones with the new. A small view is rewritten whole (its untouched rows kept); a large
one (the plan's cost model, as for the group aggregate's MERGE) by a MERGE that deletes the
touched keys' rows and inserts their new ones, rewriting only the files that hold them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from headwater import api
from headwater.engines.door import WriteResult
from headwater.pipelines.define.elements import Dataset
from headwater.pipelines.graph.analysis import AnalysedFlow
from headwater.pipelines.refresh import partitions, plan_nodes
from headwater.pipelines.refresh.key_plan import GROUPS, WINDOW, Keyed
from headwater.pipelines.runner import flows as flow_runs
from headwater.pipelines.runner.expectations import Rules
from headwater.pipelines.runner.flows import FlowRun

KEY = "__headwater_key_{}"  # the touched keys' columns (named apart from any input's)
GONE = "__headwater_gone"  # a MERGE source row naming a touched key whose rows go
# Key types whose values compare by equality as they group (a map does not compare).
UNKEYABLE = ("map", "variant")


def keyed_facts(df: DataFrame, frames: Mapping[str, Sequence[DataFrame]]) -> Keyed:
    """The view's columns (of the query ``df``) that are input columns carried unchanged
    through its GROUP BY, windows or DISTINCT, all from the same inputs; or why none are."""
    kind = _kind(plan_nodes.analysed(df))
    if kind is None:
        return Keyed(not_keyed="the query has no GROUP BY, window or DISTINCT to recompute by key")
    types = {f.name: f.dataType.typeName() for f in df.schema.fields}
    by_sources: dict[frozenset[str], list[tuple[str, dict[str, str], frozenset[str]]]] = {}
    why = None
    for column, traced in partitions.carried(df, frames).items():
        if isinstance(traced, str):
            why = why or traced
            continue
        if types.get(column) in UNKEYABLE:
            why = why or f"'{column}' is a {types[column]}, which does not compare"
            continue
        sources, fixed = traced
        by_sources.setdefault(frozenset(sources), []).append((column, sources, fixed))
    if not by_sources:
        return Keyed(not_keyed=f"no column of the view is an input's column carried unchanged "
                     f"through its keys ({why or 'none'})")  # fmt: skip
    found = max(by_sources.values(), key=len)
    columns = tuple(c for c, _, _ in found)
    inputs = sorted(found[0][1])
    return Keyed(
        columns,
        {key: tuple(sources[key] for _, sources, _ in found) for key in inputs},
        frozenset().union(*(fixed for _, _, fixed in found)),
        kind,
    )


def _kind(root: object) -> str | None:
    """``window`` when the plan has a window, ``groups`` for a GROUP BY or DISTINCT."""
    found: str | None = None
    stack = [root]
    while stack:
        node = stack.pop()
        name = node.nodeName()  # type: ignore[attr-defined]
        if name == "Window":
            return WINDOW
        if name in ("Aggregate", "Distinct", "Deduplicate"):
            found = GROUPS
        children = node.children()  # type: ignore[attr-defined]
        stack.extend(children.apply(i) for i in range(children.size()))
    return found


def touched_keys(
    keyed: Keyed, added: Mapping[str, DataFrame], removed: Mapping[str, DataFrame]
) -> DataFrame:
    """The distinct keys the changed inputs' added and removed rows hold, in columns
    :data:`KEY` 0, 1, ... (NULL a key of its own)."""
    frames = []
    for key, rows in [*added.items(), *removed.items()]:
        names = keyed.sources[key]
        frames.append(
            rows.select(*[F.col(f"`{c}`").alias(KEY.format(i)) for i, c in enumerate(names)])
        )
    return reduce(DataFrame.unionByName, frames).distinct()


def _matching(rows: DataFrame, columns: Sequence[str], keys: DataFrame, how: str) -> DataFrame:
    """``rows`` whose ``columns`` equal (NULL equal to NULL) a key of ``keys`` (``how``:
    ``left_semi``), or none does (``left_anti``)."""
    same: list[Column] = [
        F.col(f"r.`{c}`").eqNullSafe(F.col(f"k.`{KEY.format(i)}`")) for i, c in enumerate(columns)
    ]
    condition = reduce(lambda a, b: a & b, same)
    return (
        rows.alias("r")
        .join(keys.alias("k"), condition, how)
        .select(*[F.col(f"r.`{c}`") for c in rows.columns])
    )


def keyed_inputs(
    spark: SparkSession, keyed: Keyed, keys: DataFrame, versions: Mapping[str, int | None]
) -> dict[str, DataFrame]:
    """Each input carrying the keys, read at its recorded version, its rows with the
    touched keys only."""
    found = {}
    for key, columns in keyed.sources.items():
        rows = api.table(spark, key).read(version=versions[key])
        found[key] = _matching(rows, columns, keys, "left_semi")
    return found


def replace_keys(
    spark: SparkSession,
    af: AnalysedFlow,
    dataset: Dataset,
    df: DataFrame,
    keyed: Keyed,
    *,
    keys: DataFrame,
    view_version: int,
    run: FlowRun,
    rules: Rules,
    user_metadata: str,
    merge: bool = False,
) -> WriteResult | None:
    """The view's rows (at ``view_version``, the one the refresh was planned on) whose
    keys were not touched, and the query's rows on the touched keys' input rows (``df``;
    filtered by the keys again: a constant row of a union branch is not the keys'), in one
    overwrite commit with the refresh's record; with ``merge`` (a large view without
    expectations), in one MERGE (:func:`merge_keys`)."""
    view = api.table(spark, af.target).read(version=view_version)
    fresh = _matching(
        df.select(*[F.col(f"`{c}`") for c in view.columns]), keyed.columns, keys, "left_semi"
    )
    if merge:
        assert not rules
        return merge_keys(spark, af.target, fresh, keyed, keys, user_metadata)
    kept = _matching(view, keyed.columns, keys, "left_anti")
    return flow_runs.refresh_view(
        spark,
        af,
        dataset,
        kept.unionByName(fresh),
        run=run,
        rules=rules,
        user_metadata=user_metadata,
    )


def merge_keys(
    spark: SparkSession,
    target: str,
    fresh: DataFrame,
    keyed: Keyed,
    keys: DataFrame,
    record: str,
) -> WriteResult:
    """One MERGE into the view ``target``: its rows whose keys are among ``keys`` deleted
    (NULL keys matching NULL keys) and ``fresh``, the query's rows on those keys, inserted,
    with the refresh's ``record``. The source is ``fresh`` marked to insert and a row per
    touched key marked :data:`GONE`; only the marked rows match, each target row at most
    one of them (the keys are distinct), so MERGE's one-match rule holds."""
    columns = fresh.columns
    types = {f.name: f.dataType for f in fresh.schema.fields}
    key_of = {c: KEY.format(i) for i, c in enumerate(keyed.columns)}
    gone = keys.select(
        *[
            (F.col(f"`{key_of[c]}`") if c in key_of else F.lit(None)).cast(types[c]).alias(c)
            for c in columns
        ],
        F.lit(True).alias(GONE),
    )
    source = fresh.withColumn(GONE, F.lit(False)).unionByName(gone)
    same = [f"t.`{c}` <=> s.`{c}`" for c in keyed.columns]
    condition = " AND ".join([f"s.`{GONE}`", *same])
    clauses = [
        api.Clause("matched", "delete"),
        api.Clause(
            "not_matched",
            "insert",
            F.expr(f"NOT s.`{GONE}`"),
            {f"`{c}`": F.col(f"s.`{c}`") for c in columns},
        ),
    ]
    result = api.table(spark, target).merge(
        source.alias("s"), condition, clauses, target_alias="t", user_metadata=record
    )
    metrics = result.metrics
    touched = sum(metrics.get(m, 0) for m in ("numTargetRowsInserted", "numTargetRowsDeleted"))
    return WriteResult(result.version, num_rows=touched)
