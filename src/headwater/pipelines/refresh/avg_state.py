"""The kept sums and counts behind a view's ``avg`` columns (:mod:`.averages`), combined
on the driver in Arrow (no Spark).

The state is one row per group, so for most views it is small, and combining it in Spark
cost more than the rest of the refresh: a job reading the recorded folder, a shuffle and a
write through Spark's commit protocol, then a second job reading the folder back for the
bounds (about 3 s of a 4.4 s refresh at 200,000 rows, against 0.6 s for a recompute). Here
the recorded folder is read with pyarrow, the changed rows' partial state (one small
Spark result) added, the sums kept exact (added in 256-bit decimals, and a sum past its
type's precision makes :func:`combined` give None: the caller combines in Spark, as
Spark's own sum would overflow), and the new folder written as one Parquet file and its
``_SUCCESS`` marker — before the view's commit, as in Spark."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from headwater import storage
from headwater.pipelines.refresh import averages as avg

# Session setting: the largest recorded state (bytes of its files) combined on the driver;
# a larger one (or 0) is combined in Spark.
ON_DRIVER_UP_TO = "headwater.pipelines.groupAggregate.avgStateOnDriverUpToBytes"
ON_DRIVER_UP_TO_BYTES = 64 * 1024 * 1024
# Key types whose equality (so grouping) is the same in Arrow as in Spark: not floats
# (NaN, -0.0), not collated strings, not timestamps (Spark may write them as INT96).
_KEY_TYPES = {"tinyint", "smallint", "int", "bigint", "string", "boolean", "date", "binary"}


def key_type_on_driver(simple_string: str) -> bool:
    """Whether a key of this Spark type (its ``simpleString``) groups as in Spark."""
    return simple_string in _KEY_TYPES or simple_string.startswith("decimal(")


def on_driver(key_types: Sequence[str], path: str, up_to_bytes: int) -> bool:
    """Whether the state at ``path`` is combined on the driver: keyed by types (their
    ``simpleString``) that group in Arrow as in Spark, and its files within
    ``up_to_bytes`` (0: never)."""
    if up_to_bytes <= 0 or not all(key_type_on_driver(k) for k in key_types):
        return False
    return state_bytes(path) <= up_to_bytes


def state_bytes(path: str) -> int:
    """The bytes of the state folder's files."""
    return sum(i.size or 0 for i in storage.list_files(path))


def read(path: str) -> pa.Table:
    """The state folder's rows (its Parquet files; markers and checksums skipped)."""
    fs, inner = storage.filesystem(path)
    return ds.dataset(inner, filesystem=fs, format="parquet").to_table()


def combined(old: pa.Table, delta: pa.Table, keys: Sequence[str]) -> pa.Table | None:
    """``old`` (the recorded state) with ``delta`` (signed partial states: the added rows'
    groups and the removed rows' negated) added in, in ``delta``'s schema; groups left
    with no row gone (a global aggregate keeps its one row). None when a sum passes its
    type's precision."""
    schema = pa.schema([f.with_nullable(True) for f in delta.schema])
    both = pa.concat_tables([old.select(schema.names).cast(schema), delta.cast(schema)])
    values = [n for n in schema.names if n not in keys]
    wide = {n: _wide(schema.field(n).type) for n in values}
    both = pa.table({n: (both[n].cast(wide[n]) if n in wide else both[n]) for n in schema.names})
    if keys:
        grouped = both.group_by(list(keys), use_threads=False).aggregate(
            [(n, "sum") for n in values]
        )
        columns = {**{k: grouped[k] for k in keys}, **{n: grouped[f"{n}_sum"] for n in values}}
    else:
        columns = {n: pa.array([pc.sum(both[n]).as_py()], wide[n]) for n in values}
    try:
        out = pa.table({n: columns[n].cast(schema.field(n).type) for n in schema.names})
    except pa.ArrowInvalid:  # (a decimal sum past its precision)
        return None
    if keys:
        out = out.filter(pc.greater(out[avg.ROWS], 0))
    return out


def _wide(kind: pa.DataType) -> pa.DataType:
    """The type a value column is summed in: decimals in 256 bits (no silent overflow)."""
    if pa.types.is_decimal(kind):
        return pa.decimal256(76, kind.scale)
    return kind


def exact(state: pa.Table, averages: Sequence[avg.Average]) -> bool:
    """Whether every group's average derived from ``state`` is Spark's (its largest sum
    of absolute values and count within :func:`.averages.exact`'s bounds)."""

    def largest(column: str) -> int | None:
        found = pc.max(state[column]).as_py() if state.num_rows else None
        return None if found is None else int(found)

    return all(avg.exact(a, largest(a.magnitude), largest(a.count)) for a in averages)


def write(state: pa.Table, path: str) -> None:
    """The state as one Parquet file in the new folder ``path``, then its ``_SUCCESS``
    marker (what :func:`headwater.pipelines.runner.view_avg.readable` checks)."""
    fs, inner = storage.filesystem(path)
    if not storage.is_remote(path):
        fs.create_dir(inner, recursive=True)
    pq.write_table(state, f"{inner}/part-00000-{uuid.uuid4().hex}.parquet", filesystem=fs)
    storage.write_bytes(storage.join(path, "_SUCCESS"), b"")


def partial(
    rows: pa.Table,
    keys: Sequence[tuple[str, str]],
    averages: Sequence[tuple[avg.Average, str]],
    key_types: pa.Schema,
) -> pa.Table:
    """The state of ``rows`` (the input's columns) in Arrow, as ``view_avg.partial_state``
    makes it in Spark: per group (``keys``: the view's column and the input's, cast to
    ``key_types``) its rows, and per average of integral values (``averages``: each with
    the input column it reads) their exact sum, count and sum of absolute values."""
    names = [view for view, _ in keys]
    table = pa.table(
        {view: rows.column(source).cast(key_types.field(view).type) for view, source in keys}
        if keys
        else {"_": pa.nulls(rows.num_rows, pa.int8())}
    )
    exact = pa.decimal128(avg.MAX_PRECISION, 0)
    specs: list[tuple] = [([], "count_all")]
    for i, (_, source) in enumerate(averages):
        value, magnitude = _summed(rows.column(source), exact)
        table = table.append_column(f"v{i}", value).append_column(f"a{i}", magnitude)
        keep_null = pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)
        specs += [
            (f"v{i}", "sum", keep_null),
            (f"v{i}", "count", pc.CountOptions(mode="only_valid")),
            (f"a{i}", "sum", keep_null),
        ]
    grouped = table.group_by(names, use_threads=False).aggregate(specs)
    # pyarrow puts the keys first, then the aggregates in the order asked.
    columns = {k: grouped.column(i) for i, k in enumerate(names)}
    at = len(names)
    columns[avg.ROWS] = grouped.column(at)
    for i, (a, _) in enumerate(averages):
        columns[a.sum] = grouped.column(at + 1 + 3 * i).cast(exact)
        columns[a.count] = grouped.column(at + 2 + 3 * i)
        columns[a.magnitude] = grouped.column(at + 3 + 3 * i).cast(exact)
    return pa.table(columns)


def _summed(values: pa.ChunkedArray, exact: pa.DataType) -> tuple[pa.ChunkedArray, ...]:
    """Integral values and their absolute values, in a type their sums are exact in: 64-bit
    integers when no sum of them can pass 2**63 (every value's magnitude times their
    number: no group sums more), else ``exact`` decimals (a cast per row that costs more
    than the grouping: 100,000 rows, 6 ms against 2)."""
    wide = values.cast(pa.int64())
    try:
        magnitude = pc.abs_checked(wide)
    except pa.ArrowInvalid:  # (-2**63 has no 64-bit magnitude)
        magnitude = None
    largest = pc.max(magnitude).as_py() if magnitude is not None else None
    if magnitude is not None and (largest or 0) * max(len(values), 1) < 2**63:
        return wide, magnitude
    value = values.cast(exact)
    return value, pc.abs(value)


def negated(state: pa.Table, keys: Sequence[str]) -> pa.Table:
    """A partial state taken back: its counts and sums negated, its keys kept."""
    return pa.table(
        {n: state[n] if n in keys else pc.negate_checked(state[n]) for n in state.column_names}
    )


def with_averages(
    view: pa.Table, state: pa.Table, averages: Sequence[avg.Average], keys: Sequence[str]
) -> pa.Table:
    """``view`` (the refreshed view's rows, its averages not yet right) with each average
    derived from ``state`` as Spark's ``Average`` evaluates its buffer for integral values:
    ``double(sum) / double(count)``, NULL with no value (exact within :func:`exact`'s
    bounds). Matched by key, NULL keys as one group (one ``group_by`` of both, so no join
    has to match NULLs); a view group the state lacks gets NULL."""
    mark = "__in_view"
    kept = [c for c in view.column_names if c not in keys]
    values = [c for a in averages for c in (a.sum, a.count)]
    n_view, n_state = view.num_rows, state.num_rows

    def column(table: pa.Table, name: str, n: int, kind: pa.DataType) -> pa.ChunkedArray:
        found = table.column(name) if name in table.column_names else pa.nulls(n, kind)
        cast = found.cast(kind)
        return pa.chunked_array([cast]) if isinstance(cast, pa.Array) else cast

    kinds = {
        **{c: view.schema.field(c).type for c in [*keys, *kept]},
        **{c: state.schema.field(c).type for c in values},
        mark: pa.int8(),
    }
    marked = view.append_column(mark, pa.array([1] * n_view, pa.int8()))
    both = pa.concat_tables(
        [
            pa.table({c: column(marked, c, n_view, kinds[c]) for c in kinds}),
            pa.table({c: column(state, c, n_state, kinds[c]) for c in kinds}),
        ]
    )
    if not keys:
        both = both.append_column("_", pa.nulls(both.num_rows, pa.int8()))
    first = pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)
    # each value is in one part only, or NULL: max of the group is that value
    grouped = both.group_by(list(keys) or ["_"], use_threads=False).aggregate(
        [(c, "max", first) for c in [*kept, *values, mark]]
    )
    grouped = grouped.filter(pc.is_valid(grouped[f"{mark}_max"]))
    out = {k: grouped[k] for k in keys}
    out.update({c: grouped[f"{c}_max"] for c in kept})
    for a in averages:
        count = grouped[f"{a.count}_max"]
        mean = pc.divide(grouped[f"{a.sum}_max"].cast(pa.float64()), count.cast(pa.float64()))
        empty = pc.fill_null(pc.equal(count, 0), True)
        out[a.column] = pc.if_else(empty, pa.nulls(grouped.num_rows, pa.float64()), mean)
    return pa.table({c: out[c].cast(view.schema.field(c).type) for c in view.column_names})
