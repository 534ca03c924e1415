"""The *partition overwrite* technique's facts and its commit: the view's partitions that
its inputs' changes fall in (:mod:`headwater.pipelines.refresh.partitions`) are
recomputed — each input carrying the partition column read in those partitions only, at
the version the refresh records — and replace those partitions of the view (``replaceWhere``)
in one commit with the refresh's record, so a refresh killed at any moment leaves either
the old partitions and the old record or the new ones with the new."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import DataType

from headwater import api
from headwater.engines.door import WriteResult
from headwater.pipelines.define.elements import Dataset
from headwater.pipelines.graph.analysis import AnalysedFlow
from headwater.pipelines.refresh import partitions
from headwater.pipelines.refresh.inputs import InputChange
from headwater.pipelines.refresh.partition_plan import Overwrite, Partitioned
from headwater.pipelines.refresh.plan import Change
from headwater.pipelines.runner import flows as flow_runs
from headwater.pipelines.runner.expectations import Rules
from headwater.pipelines.runner.flows import FlowRun


def partition_facts(
    spark: SparkSession,
    df: DataFrame,
    frames: Mapping[str, Sequence[DataFrame]],
    view_location: str,
    *,
    since: Mapping[str, int],
    now: Mapping[str, int | None],
    found: Mapping[str, InputChange],
) -> Partitioned:
    """How the view's partitions follow its inputs' and where the changed inputs changed
    (``since``: the versions recorded; ``found``: each input's change since)."""
    view_partitions = partitions.partition_columns(view_location)
    if not view_partitions:
        return Partitioned(None)
    locations = {key: api.table(spark, key).location for key in frames}
    by_input = {key: partitions.partition_columns(loc) for key, loc in locations.items()}
    derived = partitions.derive(df, frames, view_partitions, by_input)
    if derived.column is None:
        return derived
    touched: dict[str, frozenset[str | None]] = {}
    unreadable: dict[str, str] = {}
    inside: int | None = 0
    total: int | None = 0
    changed: int | None = 0
    for key, change in found.items():
        version = now.get(key)
        if change.change == Change.NONE or key not in derived.sources or version is None:
            continue
        column = derived.sources[key]
        values = partitions.touched(locations[key], since[key], version, column)
        if isinstance(values, str):
            unreadable[key] = f"'{key}': {values}"
            continue
        touched[key] = values
        held, rows = partitions.rows_in(locations[key], version, column, values)
        inside = None if inside is None or held is None else inside + held
        total = None if total is None or rows is None else total + rows
        added = change.rows_added
        changed = None if changed is None or added is None else changed + added
    return replace(
        derived,
        touched=touched,
        unreadable=unreadable,
        rows_touched=inside,
        rows_total=total,
        rows_changed=changed,
    )


def predicate(column: str, kind: DataType, values: Sequence[str | None]) -> str:
    """SQL selecting the rows of ``column`` (of type ``kind``) in the partitions of
    ``values`` (as the Delta log writes them, None for NULL): each value cast back from its
    logged text."""
    name = f"`{column.replace('`', '``')}`"
    literals = [
        f"CAST('{v.replace(chr(92), chr(92) * 2).replace(chr(39), chr(92) + chr(39))}' AS "
        f"{kind.simpleString()})"
        for v in values
        if v is not None
    ]
    parts = [f"{name} IN ({', '.join(literals)})"] if literals else []
    if any(v is None for v in values):
        parts.append(f"{name} IS NULL")
    return " OR ".join(parts) or "false"


def filtered_inputs(
    spark: SparkSession, overwrite: Overwrite, versions: Mapping[str, int | None]
) -> dict[str, DataFrame]:
    """Each input carrying the partition column read at its recorded version in the
    partitions to recompute only."""
    found = {}
    for key, column in overwrite.sources.items():
        rows = api.table(spark, key).read(version=versions[key])
        found[key] = rows.where(predicate(column, rows.schema[column].dataType, overwrite.values))
    return found


def overwrite_partitions(
    spark: SparkSession,
    af: AnalysedFlow,
    dataset: Dataset,
    df: DataFrame,
    overwrite: Overwrite,
    *,
    run: FlowRun,
    rules: Rules,
    user_metadata: str,
) -> WriteResult | None:
    """The query's rows in the recomputed partitions (those passing the view's rules)
    replace the view's rows there, in one commit with the refresh's record. The rows are
    filtered by the same predicate as the replacement (a no-op when the derivation holds;
    constant rows of a union branch outside the partitions stay as they are)."""
    table = api.table(spark, af.target)
    kind = df.schema[overwrite.column].dataType
    where = predicate(overwrite.column, kind, overwrite.values)
    spec = flow_runs.table_spec(dataset, "overwrite", user_metadata=user_metadata)
    spec = replace(spec, overwrite_schema=False, replace_where=where)
    return flow_runs.write_checked(
        df.where(where),
        rules,
        run.checks(af.target, rules) if rules else None,
        lambda rows: table.write(rows, spec),
        None,
        table.observes_writes,
    )
