"""The *group aggregate* technique without a Spark job, for small changes.

After 1% of a 10M-row input changed, the Spark path's time is the fixed cost of its jobs
(two or three shuffle stages and the write's job, about 2 s on 2 cores), as much as a
recompute. When the change is small and the query simple enough to evaluate exactly in
Arrow (:func:`arrow_query`: one GROUP BY of plain columns of one input, aggregates of
plain columns), the refresh runs on the driver instead (:func:`refresh`): the changed
rows read from the input's files (appended files, or the change files' old and new
images) with pyarrow, aggregated and combined with the view's rows
(:mod:`.arrow_combine`), and committed — the view's new contents with the refresh's
record (its input versions) — in one Delta commit through the view's table door
(``overwrite_arrow``: on headwater's engine one Parquet file and no Spark job; on
delta-spark through its writer). Anything else, or a change above the thresholds, takes
the Spark path, and the planning event says which ran and why.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from headwater import storage
from headwater.engines.door import (
    CHANGE_TYPE,
    FileTask,
    SnapshotView,
    TableDoor,
    WriteResult,
    read_arrow,
    read_arrow_file,
    table_log,
)
from headwater.pipelines.refresh import avg_state, plan_nodes, snapshots
from headwater.pipelines.refresh.arrow_combine import (
    FUNCTIONS,
    ArrowQuery,
    Measure,
    combine,
    partial_groups,
)
from headwater.pipelines.refresh.plan import Aggregation
from headwater.sqltypes import arrow_schema

# Rows changed (added and removed) up to which the refresh runs in Arrow; the session
# setting ``UP_TO_ROWS`` changes it (0: always Spark).
ARROW_UP_TO_ROWS = 2_000_000
UP_TO_ROWS = "headwater.pipelines.groupAggregate.arrowUpToRows"
# The view's data files up to which its rows are read onto the driver (bytes).
VIEW_UP_TO_BYTES = 64 * 1024 * 1024
ADDED = ("insert", "update_postimage")
REMOVED = ("delete", "update_preimage")
_ADDED, _REMOVED = pa.array(ADDED), pa.array(REMOVED)
_KIND = pa.dictionary(pa.int32(), pa.string())
_INTEGRAL = {"byte", "short", "integer", "long"}
# The types each use of a column is exact for in Arrow as in Spark: equality and order of
# floats differ (NaN, -0.0), and sums of floats depend on their order.
_KEY_TYPES = _INTEGRAL | {"string", "date", "timestamp", "timestamp_ntz", "boolean"}
_SUM_TYPES = _INTEGRAL
_ORDERED_TYPES = _KEY_TYPES
_FUNCTIONS = {
    "Sum": "sum",
    "Min": "min",
    "Max": "max",
    "count_if": "count_if",
    "CountIf": "count_if",
    "Average": "avg",
}
_PASS_THROUGH = ("SubqueryAlias", "View", "Project")


def arrow_query(df: DataFrame, reads: Mapping[str, Sequence[DataFrame]]) -> ArrowQuery | str:
    """The view's query as an :class:`ArrowQuery`, from Spark's analysed plan, or why it
    is not one: it must aggregate the rows of one input read directly (only renaming or
    selecting projections between), grouping by plain columns and aggregating plain
    columns of types whose Arrow semantics are Spark's."""
    known = [(key, plan_nodes.analysed(d)) for key, frames in reads.items() for d in frames]
    root = plan_nodes.analysed(df)
    while root.nodeName() in ("SubqueryAlias", "View", "Sort"):
        root = _seq(root.children())[0]
    if root.nodeName() != "Aggregate":
        return "the query is not one GROUP BY"
    node, key = _seq(root.children())[0], None
    while key is None:
        key = next((k for k, plan in known if node.sameResult(plan)), None)
        if key is None:
            if node.nodeName() not in _PASS_THROUGH:
                return f"the query has {node.nodeName()} under its aggregate"
            node = _seq(node.children())[0]
    names = {int(a.exprId().id()): str(a.name()) for a in _seq(node.output())}

    def column(expression: object) -> str | None:
        """The input column ``expression`` is, if it is one."""
        if expression.nodeName() != "AttributeReference":  # type: ignore[attr-defined]
            return None
        return names.get(int(expression.exprId().id()))  # type: ignore[attr-defined]

    grouping = _seq(root.groupingExpressions())
    keys: list[tuple[str, str]] = []
    measures: list[Measure] = []
    for e in _seq(root.aggregateExpressions()):
        value = e.child() if e.nodeName() == "Alias" else e
        if any(value.semanticEquals(g) for g in grouping):
            source = column(value)
            if source is None or _type(value) not in _KEY_TYPES and not _decimal(value):
                return f"its group key '{e.name()}' is not a plain column of an exact type"
            keys.append((str(e.name()), source))
            continue
        measure = _measure(str(e.name()), value, column)
        if isinstance(measure, str):
            return measure
        measures.append(measure)
    if len(keys) < len(grouping):
        return "a GROUP BY expression is not one of the view's columns"
    return ArrowQuery(key, tuple(keys), tuple(measures))


def _measure(name: str, value: object, column: Callable[[object], str | None]) -> Measure | str:
    why = f"its aggregate '{name}' is not of a plain column, or not exact in Arrow"
    if value.nodeName() != "AggregateExpression":  # type: ignore[attr-defined]
        return why
    if value.isDistinct() or not value.filter().isEmpty():  # type: ignore[attr-defined]
        return why
    function = value.aggregateFunction()  # type: ignore[attr-defined]
    kind = str(function.nodeName())
    args = _seq(function.children())
    if kind == "Count":
        counted = [a for a in args if not (a.foldable() and not a.nullable())]
        if not counted:
            return Measure(name, "count_rows", None)
        source = column(counted[0]) if len(counted) == 1 else None
        return Measure(name, "count", source) if source is not None else why
    how = _FUNCTIONS.get(kind)
    source = column(args[0]) if how is not None and len(args) == 1 else None
    if how is None or source is None:
        return why
    kind_of = _type(args[0])
    exact = {
        "sum": kind_of in _SUM_TYPES or _decimal(args[0]),
        "min": kind_of in _ORDERED_TYPES or _decimal(args[0]),
        "max": kind_of in _ORDERED_TYPES or _decimal(args[0]),
        "count_if": kind_of == "boolean",
        # (integral values: derived from the kept exact sum and count as Spark's; decimals'
        # rounding is derived in Spark: view_avg)
        "avg": kind_of in _INTEGRAL,
    }[how]
    return Measure(name, how, source) if exact else why


def _type(expression: object) -> str:
    return str(expression.dataType().typeName())  # type: ignore[attr-defined]


def _decimal(expression: object) -> bool:
    return _type(expression).startswith("decimal")


def _seq(seq: object) -> list:
    return [seq.apply(i) for i in range(seq.size())]  # type: ignore[attr-defined]


@dataclass(frozen=True)
class ArrowJob:
    """What :func:`refresh` needs: the query, the input's changed rows' files (from the
    version the view was computed from to the one it is refreshed to), the view."""

    query: ArrowQuery
    aggregation: Aggregation
    tasks: tuple[FileTask, ...]  # the changed rows' files (inserts, deletes, change files)
    view: SnapshotView  # the view at the version the plan was made on
    input_schema: StructType  # the input's at ``now``
    retract: bool
    # A view with averages: the kept state its record names, and the new one's path
    state_from: str | None = None
    state_to: str | None = None


def small_change(
    query: ArrowQuery | str,
    aggregation: Aggregation,
    *,
    input_location: str,
    since: int,
    now: int,
    view_location: str,
    view_version: int,
    view_partitioned: bool,
    retract: bool,
    up_to_rows: int = ARROW_UP_TO_ROWS,
    state: tuple[str | None, str | None] = (None, None),
    state_up_to_bytes: int = avg_state.ON_DRIVER_UP_TO_BYTES,
) -> ArrowJob | str:
    """The Arrow refresh of this change, or why it takes the Spark path: the query is not
    simple enough, the view or the input has what the Arrow reader or writer does not do
    (partitions, column mapping, constraints), or the change or the view is too large to
    hold on the driver."""
    if isinstance(query, str):
        return query
    rules = {m.column: FUNCTIONS[m.function] for m in query.measures}
    if rules != dict(aggregation.columns) or [v for v, _ in query.keys] != list(aggregation.keys):
        return "the plan's aggregates and the query's read in Arrow differ"
    if view_partitioned:
        return "the view is partitioned or clustered"
    view = snapshots.at(view_location, view_version)
    if aggregation.averages:
        why = _state_on_driver(aggregation, view, state, state_up_to_bytes)
        if why is not None:
            return why
    mapped = "delta.columnMapping.mode"
    if view.check_constraints or view.configuration.get(mapped, "none") != "none":
        return "the view has CHECK constraints or column mapping"
    view_bytes = sum(f.size for f in view.files)
    if view_bytes > VIEW_UP_TO_BYTES:
        return (
            f"the view's {view_bytes:,} bytes are more than the driver reads ({VIEW_UP_TO_BYTES:,})"
        )
    changed = snapshots.at(input_location, now)
    if changed.configuration.get(mapped, "none") != "none":
        return "the input has column mapping"
    tasks = table_log(input_location).change_tasks(since, now)
    kinds = {t.change[0] for t in tasks if t.change is not None}
    if not retract and kinds - {"insert"}:
        return "rows were removed without the change feed's images"
    rows = sum(_rows(t) for t in tasks)
    if rows > up_to_rows:
        return f"{rows:,} rows changed, more than the {up_to_rows:,} refreshed without Spark"
    return ArrowJob(query, aggregation, tuple(tasks), view, changed.schema, retract, *state)


def _state_on_driver(
    aggregation: Aggregation,
    view: SnapshotView,
    state: tuple[str | None, str | None],
    up_to_bytes: int,
) -> str | None:
    """Why the averages' kept state cannot be combined on the driver, if it cannot."""
    if state[0] is None or state[1] is None:
        return "the view's averages have no recorded state"
    if any(a.decimal is not None for a in aggregation.averages):
        return "an average of decimals is rounded as Spark's in Spark"
    types = {f.name: f.dataType.simpleString() for f in view.schema.fields}
    if not avg_state.on_driver([types[k] for k in aggregation.keys], state[0], up_to_bytes):
        return (
            "the averages' kept state is combined in Spark (a key type that may group "
            "otherwise in Arrow, or a state larger than the driver combines)"
        )
    return None


def _rows(task: FileTask) -> int:
    """Rows a change file holds (its footer; its deletion vector's selection)."""
    if task.selection is not None:
        return sum(task.selection)
    fs, path = storage.filesystem(task.path)
    with fs.open_input_file(path) as f:
        return int(pq.ParquetFile(f).metadata.num_rows)


def refresh(job: ArrowJob, record: str, view_table: TableDoor) -> WriteResult | None:
    """The view's new rows, computed in Arrow and committed with ``record`` in one commit
    through the view's table (which fails as a conflict when the view changed since the
    version the plan read). A view with averages has its kept state combined and
    written first (the record names it); None, with
    nothing committed, when a group's average is past the bound where that state gives
    Spark's (:func:`.avg_state.exact`): the caller recomputes the view."""
    wanted = StructType([f for f in job.input_schema.fields if f.name in job.query.columns])
    if not wanted.fields:  # count(*) alone: a file read without columns yields no rows
        wanted = StructType(job.input_schema.fields[:1])
    new_rows, gone = changed_rows(job.tasks, arrow_schema(wanted))
    old_rows = gone if job.retract else None
    snapshot = job.view
    schema = arrow_schema(snapshot.schema)
    added = partial_groups(new_rows, job.query, schema)
    removed = partial_groups(old_rows, job.query, schema) if old_rows is not None else None
    tasks = table_log(snapshot.root).snapshot_tasks(snapshot)
    view = pa.Table.from_batches(list(read_arrow(tasks, snapshot.schema)), schema=schema)
    rows = combine(view, added, removed, job.aggregation, schema)
    if job.aggregation.averages:
        state = _kept_state(job, new_rows, old_rows, schema)
        if state is None or not avg_state.exact(state, job.aggregation.averages):
            return None
        rows = avg_state.with_averages(rows, state, job.aggregation.averages, job.aggregation.keys)
    return view_table.overwrite_arrow(rows, snapshot, record)


def changed_rows(tasks: Sequence[FileTask], columns: pa.Schema) -> tuple[pa.Table, pa.Table]:
    """The ``columns`` of the rows the change added and of those it removed: a change
    file's rows by their change type, a data file's (inserted or deleted whole, or through
    its deletion vector) by the kind its task names. Only what the refresh uses is read:
    the change type as a dictionary (decoding its strings cost more than reading the
    values: 200,000 changed rows, 4 ms against 1.5), no commit version or timestamp."""
    with_kind = pa.schema([*columns, pa.field(CHANGE_TYPE, _KIND)])
    added: list[pa.RecordBatch] = []
    removed: list[pa.RecordBatch] = []
    for task in tasks:
        assert task.change is not None  # (every change-feed task says what it holds)
        kind, plain = task.change[0], replace(task, change=None)
        if kind is None:  # a change file: the change type is a column of it
            for batch in read_arrow_file(plain, with_kind):
                types = batch.column(len(columns))
                values = batch.select(range(len(columns)))
                for kinds, into in ((_ADDED, added), (_REMOVED, removed)):
                    # (a dictionary's few values looked up, then its indices: no strings)
                    into.append(
                        values.filter(pc.is_in(types.dictionary, kinds).take(types.indices))
                    )
        elif kind in ADDED or kind in REMOVED:
            (added if kind in ADDED else removed).extend(read_arrow_file(plain, columns))
    return (
        pa.Table.from_batches(added, schema=columns),
        pa.Table.from_batches(removed, schema=columns),
    )


def _kept_state(
    job: ArrowJob, added: pa.Table, removed: pa.Table | None, schema: pa.Schema
) -> pa.Table | None:
    """The averages' state after this change (the recorded one with the ``added`` rows'
    groups added and the ``removed`` rows' taken back), written to the job's new path;
    None when a kept sum passes its type (nothing written)."""
    assert job.state_from is not None and job.state_to is not None
    sources = {m.column: m.argument for m in job.query.measures if m.function == "avg"}
    averages = [(a, sources[a.column] or "") for a in job.aggregation.averages]
    parts = [avg_state.partial(added, job.query.keys, averages, schema)]
    if removed is not None:
        gone = avg_state.partial(removed, job.query.keys, averages, schema)
        parts.append(avg_state.negated(gone, job.aggregation.keys))
    state = avg_state.combined(
        avg_state.read(job.state_from), pa.concat_tables(parts), job.aggregation.keys
    )
    if state is not None:
        avg_state.write(state, job.state_to)
    return state
