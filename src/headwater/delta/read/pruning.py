"""Which files a DML can touch, decided from the log before any data is read.

A MERGE on ``t.id = s.id`` can only touch files whose ``id`` range overlaps the source's,
and an UPDATE/DELETE ``WHERE id BETWEEN ...`` only files whose stats admit the predicate.
The conditions are read with sqlglot (conjuncts of simple comparisons); anything else
keeps every file, so pruning is an optimisation that never changes a result.

The same conditions say which partitions a DML read, for its commit's conflict check
(:func:`partition_filter`): the partition part of the condition, as delta-spark records it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.errors import AnalysisException
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.datasource import (
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
)
from pyspark.sql.types import (
    ByteType,
    DateType,
    IntegerType,
    LongType,
    ShortType,
    StructField,
    StructType,
)
from sqlglot import exp

from headwater.delta.log.commit import PartitionFilter
from headwater.delta.log.delta_log import DataFile, Snapshot
from headwater.delta.read.skipping import keep_mask
from headwater.delta.schema.expressions import (
    condition_text,
    conjuncts,
    parse_condition,
    referenced_columns,
)

_COMPARISONS = {
    exp.EQ: (EqualTo, EqualTo),
    exp.GT: (GreaterThan, LessThan),
    exp.GTE: (GreaterThanOrEqual, LessThanOrEqual),
    exp.LT: (LessThan, GreaterThan),
    exp.LTE: (LessThanOrEqual, GreaterThanOrEqual),
}


def _literal(node: exp.Expr):
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        value = _literal(node.this)
        return -value if isinstance(value, (int, float)) else None
    if not isinstance(node, exp.Literal):
        return None
    if node.is_string:
        return node.this
    try:
        return int(node.this)
    except ValueError:
        try:
            return float(node.this)
        except ValueError:
            return None


def _target_column(node: exp.Expr, schema: StructType, alias: str | None) -> str | None:
    if not isinstance(node, exp.Column) or node.args.get("db"):
        return None
    table = node.table.lower() if node.table else None
    if alias is not None and table not in (None, alias.lower()):
        return None
    by_lower = {f.name.lower(): f.name for f in schema}
    return by_lower.get(node.name.lower())


def predicate_filters(condition: str | Column | None, schema: StructType) -> list[Filter]:
    """Data-source filters implied by ``column <op> literal`` conjuncts of a condition."""
    tree = parse_condition(condition_text(condition))
    if tree is None:
        return []
    filters: list[Filter] = []
    for part in conjuncts(tree):
        if isinstance(part, exp.In) and not part.args.get("query"):
            col = _target_column(part.this, schema, None)
            values = [_literal(v) for v in part.expressions]
            if col and values and all(v is not None for v in values):
                filters.append(In((col,), tuple(values)))
        elif isinstance(part, exp.Between):
            col = _target_column(part.this, schema, None)
            low, high = _literal(part.args["low"]), _literal(part.args["high"])
            if col and low is not None and high is not None:
                filters += [GreaterThanOrEqual((col,), low), LessThanOrEqual((col,), high)]
        elif isinstance(part, exp.Binary) and type(part) in _COMPARISONS:
            straight, flipped = _COMPARISONS[type(part)]
            col, value = _target_column(part.left, schema, None), _literal(part.right)
            kind = straight
            if col is None:
                col, value = _target_column(part.right, schema, None), _literal(part.left)
                kind = flipped
            if col and value is not None:
                filters.append(kind((col,), value))
    return filters


@dataclass(frozen=True)
class EquiKey:
    target: str  # target column name
    source: str  # SQL of the source side


def equi_keys(condition: str | Column, schema: StructType, alias: str) -> list[EquiKey]:
    """``t.col = <source expression>`` conjuncts of a MERGE condition."""
    tree = parse_condition(condition_text(condition))
    if tree is None:
        return []
    keys = []
    for part in conjuncts(tree):
        if not isinstance(part, exp.EQ):
            continue
        for mine, other in ((part.left, part.right), (part.right, part.left)):
            col = _target_column(mine, schema, alias)
            if col is None or not isinstance(mine, exp.Column) or not mine.table:
                continue
            refs = list(other.find_all(exp.Column))
            if refs and all(r.table and r.table.lower() != alias.lower() for r in refs):
                keys.append(EquiKey(col, other.sql(dialect="spark")))
                break
    return keys


def keep_files(snapshot: Snapshot, filters: list[Filter]) -> list[DataFile]:
    files = snapshot.files
    if not filters or not files:
        return files
    mask = keep_mask(snapshot.add_actions, filters, snapshot.partition_columns)
    return [f for f, k in zip(files, pa.array(mask).to_pylist(), strict=True) if k]


# Key types whose logged min/max are exact bounds (timestamps are truncated to milliseconds
# and long strings cut short in stats, so their bounds can miss a value).
_EXACT_BOUND_TYPES = (ByteType, ShortType, IntegerType, LongType, DateType)


def source_key_filter(
    snapshot: Snapshot, files: list[DataFile], keys: list[EquiKey]
) -> Column | None:
    """A filter keeping the source rows whose keys fall in the key range of ``files`` (the
    only rows that can match a target row there); None when the log's stats cannot say."""
    by_name = {f.name: f for f in snapshot.schema}
    actions = snapshot.add_actions
    wanted = {f.path for f in files}
    mask = pa.array([unquote(p) in wanted for p in actions.column("path").to_pylist()])
    chosen = actions.filter(mask)
    if chosen.num_rows == 0:
        return None
    condition = None
    for k in keys:
        field = by_name.get(k.target)
        low_col, high_col = f"min.{k.target}", f"max.{k.target}"
        if field is None or not isinstance(field.dataType, _EXACT_BOUND_TYPES):
            continue
        if low_col not in chosen.column_names or high_col not in chosen.column_names:
            continue
        lows, highs = chosen.column(low_col), chosen.column(high_col)
        if lows.null_count or highs.null_count:
            continue  # a file without stats (or all-null keys) bounds nothing
        low, high = pc.min(lows).as_py(), pc.max(highs).as_py()
        test = F.expr(k.source).between(F.lit(low), F.lit(high))
        condition = test if condition is None else condition & test
    return condition


_INDEX = "__hw_index"


def partitions_matching(
    spark: SparkSession,
    snapshot: Snapshot,
    condition: str | Column,
    values: Sequence[Mapping[str, str | None]],
) -> list[bool] | None:
    """Which of ``values`` (partition values as the log holds them) satisfy a condition
    over partition columns alone; None when the condition reads other columns."""
    parts = snapshot.partition_columns
    if not parts:
        return None
    refs = referenced_columns(condition)
    if refs is not None and not refs <= {p.lower() for p in parts}:
        return None  # reads data columns (checked without an analysis error in the log)
    if not values:
        return []
    fields: list[StructField] = [f for f in snapshot.schema if f.name in parts]
    rows = [tuple(v.get(f.name) for f in fields) + (i,) for i, v in enumerate(values)]
    text_schema = ", ".join(f"`{f.name}` string" for f in fields) + f", `{_INDEX}` long"
    frame = spark.createDataFrame(rows, text_schema).select(
        *[F.col(f"`{f.name}`").cast(f.dataType).alias(f.name) for f in fields], F.col(_INDEX)
    )
    try:
        cond = F.expr(condition) if isinstance(condition, str) else condition
        hits = {r[0] for r in frame.where(F.coalesce(cond, F.lit(False))).select(_INDEX).collect()}
    except AnalysisException:
        return None
    return [i in hits for i in range(len(values))]


def read_predicate(
    condition: str | Column | None,
    partition_columns: Sequence[str],
    alias: str | None = None,
    other_columns: Sequence[str] = (),
) -> str | None:
    """The partition part of a condition, as delta-spark records a DML's read predicate:
    the AND of its conjuncts that read partition columns alone, over bare column names
    (None: no such conjunct, so the DML depends on every partition).

    For a MERGE condition ``alias`` names the target and ``other_columns`` the source's
    columns: a conjunct counts only when it reads the target alone (``t.date = '2024-01-01'``
    does, ``t.id = s.id`` does not), and an unqualified name the source also has is
    ambiguous, so it does not count either."""
    tree = parse_condition(condition_text(condition))
    if tree is None or not partition_columns:
        return None
    parts = {p.lower(): p for p in partition_columns}
    theirs = {c.lower() for c in other_columns}
    kept = []
    for part in conjuncts(tree):
        columns = list(part.find_all(exp.Column))
        if not columns or part.find(exp.Subquery, exp.Exists, exp.Select) is not None:
            continue
        if all(_partition_column(c, parts, alias, theirs) for c in columns):
            kept.append(
                part.transform(
                    lambda n: (
                        exp.column(parts[n.name.lower()], quoted=True)
                        if isinstance(n, exp.Column)
                        else n
                    )
                )
            )
    if not kept:
        return None
    return " AND ".join(f"({k.sql(dialect='spark')})" for k in kept)


def _partition_column(
    column: exp.Column, parts: Mapping[str, str], alias: str | None, theirs: set[str]
) -> bool:
    """Whether ``column`` is one of the target's partition columns (``parts``, by lower-cased
    name): qualified by the target's ``alias``, or unqualified and not a source column."""
    if column.args.get("db") or column.name.lower() not in parts:
        return False
    if column.table:
        return alias is not None and column.table.lower() == alias.lower()
    return column.name.lower() not in theirs


def partition_filter(
    spark: SparkSession,
    snapshot: Snapshot,
    condition: str | Column | None,
    alias: str | None = None,
    other_columns: Sequence[str] = (),
) -> PartitionFilter | None:
    """The partitions a condition reads, for a transaction's conflict check: those its
    partition part (:func:`read_predicate`) admits. None when it has none, so a file added
    in any partition may hold matching rows (as delta-spark, where a condition on data
    columns alone reads every partition, but ``date = '2024-01-01' AND value > 5`` reads
    one)."""
    predicate = read_predicate(condition, snapshot.partition_columns, alias, other_columns)
    if predicate is None:
        return None

    physical = snapshot.physical_schema  # column mapping: logged under physical names
    renamed = (
        {}
        if physical is None
        else {f.name: p.name for f, p in zip(snapshot.schema, physical, strict=True)}
    )
    names = {c: renamed.get(c, c) for c in snapshot.partition_columns}

    def matches(values: Sequence[Mapping[str, str | None]]) -> Sequence[bool]:
        """Which of these partition values (keyed by logical names, as a snapshot's files
        hold them, or as logged, as a concurrent commit's added files do) it read."""
        keys = [
            tuple((c, v[c] if c in v else v.get(key)) for c, key in names.items()) for v in values
        ]
        distinct = list(dict.fromkeys(keys))  # one row per partition, not per file
        found = partitions_matching(spark, snapshot, predicate, [dict(k) for k in distinct])
        if found is None:
            return [True] * len(values)
        hit = dict(zip(distinct, found, strict=True))
        return [hit[k] for k in keys]

    return matches
