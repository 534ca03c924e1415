"""The *group aggregate* technique's arithmetic in Arrow, for small changes (no Spark).

A Spark job's fixed cost (a shuffle stage or two, the write's job) is what a refresh after
a small change costs on a few cores, more than the rows themselves. Where the query is one
GROUP BY of plain columns of one input with aggregates of plain columns, the changed rows
are aggregated here with pyarrow's ``group_by`` (:func:`partial_groups`) and combined with
the view's rows (:func:`combine`) with Spark's semantics: NULL keys are a group, a sum of
no non-null value is NULL, counts never are, ``sum`` of integers is a ``bigint`` and of
``decimal(p, s)`` a ``decimal(p + 10, s)`` (the view's column types, which the result is
cast to), groups left with no row are gone. Arrow tables in, Arrow tables out: no row is
ever a Python object.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

# group_by's engine, imported with this module rather than inside a refresh's time (17 ms)
import pyarrow.acero  # noqa: F401
import pyarrow.compute as pc

from headwater.pipelines.refresh.plan import Aggregation, Combine

# An aggregate function of the query, as Spark's analysed plan names it, and the combining
# rule its partial results take (what :func:`combine` checks against the plan's).
FUNCTIONS = {
    "count_rows": Combine.ADD,  # count(*)
    "count": Combine.ADD,  # count(column): non-null values
    "count_if": Combine.ADD,  # count_if(boolean column): true values
    "sum": Combine.SUM,
    "min": Combine.LEAST,
    "max": Combine.GREATEST,
    "avg": Combine.AVERAGE,  # derived from the kept sums and counts (avg_state.with_averages)
}


@dataclass(frozen=True)
class Measure:
    """One aggregate column of the view: its function and the input column it reads."""

    column: str  # the view's column
    function: str  # a key of FUNCTIONS
    argument: str | None  # the input's column (None: count(*))


@dataclass(frozen=True)
class ArrowQuery:
    """A view's query simple enough to evaluate exactly in Arrow: ``GROUP BY`` plain
    columns of one input, every aggregate of a plain column of it (or ``count(*)``)."""

    input: str  # the input's key
    keys: tuple[tuple[str, str], ...]  # (the view's column, the input's column)
    measures: tuple[Measure, ...]

    @property
    def columns(self) -> list[str]:
        """The input columns the query reads."""
        found = [c for _, c in self.keys] + [m.argument for m in self.measures if m.argument]
        return list(dict.fromkeys(found))


def partial_groups(rows: pa.Table, query: ArrowQuery, schema: pa.Schema) -> pa.Table:
    """The query on ``rows`` (the input's columns): one row per group, in the view's
    ``schema`` (a global aggregate: one row, even over no rows, as Spark's)."""
    keys = [view for view, _ in query.keys]
    table = (
        pa.table([rows.column(source) for _, source in query.keys], names=keys)
        if keys
        else pa.table({"_": pa.nulls(rows.num_rows, pa.int8())})
    )
    specs: list[tuple] = []
    asked = [m for m in query.measures if m.function != "avg"]  # (averages: from the state)
    for i, m in enumerate(asked):
        name = f"m{i}"
        if m.function == "count_rows":
            specs.append(([], "count_all"))
            continue
        assert m.argument is not None
        value = rows.column(m.argument)
        if m.function == "count_if":  # true values: a sum of 1s (NULL and false add 0)
            value = pc.fill_null(pc.cast(value, pa.int64()), 0)
        table = table.append_column(name, value)
        if m.function == "count":
            specs.append((name, "count", pc.CountOptions(mode="only_valid")))
        else:
            how = "sum" if m.function == "count_if" else m.function
            minimum = 0 if m.function == "count_if" else 1
            specs.append((name, how, pc.ScalarAggregateOptions(skip_nulls=True, min_count=minimum)))
    grouped = table.group_by(keys, use_threads=False).aggregate(specs)
    # pyarrow puts the keys first, then the aggregates in the order asked.
    columns = {k: grouped.column(i) for i, k in enumerate(keys)}
    for i, m in enumerate(asked):
        columns[m.column] = grouped.column(len(keys) + i)
    return _as(columns, schema, grouped.num_rows)


def combine(
    view: pa.Table,
    added: pa.Table,
    removed: pa.Table | None,
    aggregation: Aggregation,
    schema: pa.Schema,
) -> pa.Table:
    """The view's rows with the groups of the added rows combined in and those of the
    removed rows taken back (each :func:`partial_groups`, in the view's ``schema``): what
    a recompute gives when ``aggregation``'s rules hold (the plan checked they do)."""
    parts = [_as({c: view.column(c) for c in schema.names}, schema, view.num_rows), added]
    if removed is not None and removed.num_rows:
        negated = {
            c: pc.negate_checked(removed.column(c))
            if c in aggregation.columns
            else removed.column(c)
            for c in schema.names
        }
        parts.append(_as(negated, schema, removed.num_rows))
    both = pa.concat_tables(parts)
    again = {
        Combine.SUM: "sum",
        Combine.ADD: "sum",
        Combine.LEAST: "min",
        Combine.GREATEST: "max",
        Combine.AVERAGE: "max",  # (a placeholder: replaced by avg_state.with_averages)
    }
    names = list(aggregation.columns)
    specs = [
        (c, again[how], pc.ScalarAggregateOptions(skip_nulls=True, min_count=1))
        for c, how in aggregation.columns.items()
    ]
    keys = list(aggregation.keys)
    source = both if keys else both.append_column("_", pa.nulls(both.num_rows, pa.int8()))
    grouped = source.group_by(keys, use_threads=False).aggregate(specs)
    columns = {k: grouped.column(i) for i, k in enumerate(keys)}
    for i, c in enumerate(names):
        columns[c] = grouped.column(len(keys) + i)
    result = _as(columns, schema, grouped.num_rows)
    if removed is None:
        return result
    return _emptied(result, aggregation, schema)


def _emptied(groups: pa.Table, aggregation: Aggregation, schema: pa.Schema) -> pa.Table:
    """A sum whose count reached 0 is NULL; a group whose rows did is gone (a global
    aggregate keeps its one row)."""
    columns = {c: groups.column(c) for c in schema.names}
    for column, count in (aggregation.sum_counts or {}).items():
        empty = pc.equal(groups.column(count), 0)
        columns[column] = pc.if_else(
            empty, pa.nulls(groups.num_rows, schema.field(column).type), groups.column(column)
        )
    out = _as(columns, schema, groups.num_rows)
    if aggregation.keys and aggregation.rows is not None:
        out = out.filter(pc.greater(out.column(aggregation.rows), 0))
    return out


def _as(columns: dict[str, pa.ChunkedArray | pa.Array], schema: pa.Schema, n: int) -> pa.Table:
    """``columns`` as a table of ``schema`` (cast: a sum's wider type to the view's; a
    decimal out of the view's precision fails rather than change)."""
    arrays = [
        _cast(columns[f.name], f.type) if f.name in columns else pa.nulls(n, f.type) for f in schema
    ]
    return pa.Table.from_arrays(arrays, schema=schema)


def _cast(values: pa.ChunkedArray | pa.Array, to: pa.DataType) -> pa.ChunkedArray | pa.Array:
    return values if values.type == to else pc.cast(values, to)
