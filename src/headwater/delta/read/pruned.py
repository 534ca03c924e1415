"""Column pruning for the ``delta`` Python source, which Spark's API does not prune.

Where Spark has no filesystem for a table's store (``s3://`` on a pip-only install) or its
files cannot be described to Spark's Parquet scan, ``load()`` returns a scan by the
``delta`` Python data source (:mod:`headwater.delta.read.source`). Spark pushes filters to
Python sources but not the columns a query needs, so every batch carried every column
into the JVM: the benchmark's ``sum(k), sum(v)`` over four columns read and shipped the
36-byte strings it never used (``bench/bench_s3.py``: 4.3x Spark's own scan; 2.2x with
the two columns alone). The scan's reader reads only the columns of the schema it is
given, so the DataFrame ``load()`` returns is a :class:`PrunedFrame`: its ``select``,
``selectExpr``, ``agg``, ``filter``/``where``, ``withColumn`` and ``drop`` build the query
on the whole scan, ask Spark's optimiser which of the scan's columns the optimised plan
uses, and, when that is fewer than all, build the same calls again over a scan of those
columns alone. The result is kept only when its columns and types are the whole scan's
query's; anything that does not resolve, or goes wrong, keeps the whole scan. Rows are the
same: the reader still drops rows deleted by deletion vectors by their position in the
file, and renames column-mapped columns. Queries reach the narrow scan through calls on
the loaded DataFrame (or on one such call's result); SQL over a view of it reads every
column.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame
from pyspark.sql.types import StructType

from headwater.delta.log.delta_log import Snapshot

log = logging.getLogger(__name__)

Step = tuple[str, tuple[Any, ...], dict[str, Any]]
# Builds the Python source's scan of a snapshot with the given columns.
ScanBuilder = Callable[[SparkSession, Snapshot, StructType], DataFrame]


class PrunedFrame(ClassicDataFrame):
    """The Python source's scan of a whole snapshot, after ``steps`` (DataFrame calls);
    each further call reads only the columns the query needs."""

    def __init__(
        self, df: DataFrame, snapshot: Snapshot, build: ScanBuilder, steps: tuple[Step, ...] = ()
    ) -> None:
        super().__init__(df._jdf, df.sparkSession)
        self._snapshot = snapshot
        self._build = build
        self._steps = steps

    def _then(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> DataFrame:
        steps = (*self._steps, (name, args, kwargs))
        full = getattr(ClassicDataFrame, name)(self, *args, **kwargs)
        return PrunedFrame(self._narrowed(full, steps), self._snapshot, self._build, steps)

    def _narrowed(self, full: DataFrame, steps: tuple[Step, ...]) -> DataFrame:
        """``full`` built again over a scan of the columns it uses; ``full`` itself when it
        uses every column or anything goes wrong."""
        schema = self._snapshot.schema
        try:
            used = used_scan_columns(full)
            if used is None or len(used) >= len(schema.fields):
                return full
            columns = read_columns(self._snapshot, used)
            if len(columns.fields) >= len(schema.fields):
                return full
            df: DataFrame = self._build(self.sparkSession, self._snapshot, columns)
            for name, args, kwargs in steps:
                df = getattr(ClassicDataFrame, name)(df, *args, **kwargs)
            if df.schema != full.schema:
                return full
            return df
        except Exception:  # pruning is an optimisation: never a reason for a query to fail
            log.debug("column pruning left out for %s", self._snapshot.root, exc_info=True)
            return full


def _pruning(name: str):
    def method(self: PrunedFrame, *args: Any, **kwargs: Any) -> DataFrame:
        return self._then(name, args, kwargs)

    method.__name__ = name
    method.__doc__ = getattr(ClassicDataFrame, name).__doc__
    return method


for _name in (
    "select",
    "selectExpr",
    "agg",
    "filter",
    "where",
    "withColumn",
    "withColumns",
    "drop",
):
    setattr(PrunedFrame, _name, _pruning(_name))


def read_columns(snapshot: Snapshot, used: set[str]) -> StructType:
    """The snapshot's columns to read for a query that uses ``used``, in the table's order;
    at least one column the files hold, so every row is still read (a ``count(*)``, or a
    query of partition columns only, needs the rows, not their values)."""
    fields = [f for f in snapshot.schema.fields if f.name in used]
    parts = set(snapshot.partition_columns)
    if not any(f.name not in parts for f in fields):
        stored = [f for f in snapshot.schema.fields if f.name not in parts]
        if stored:
            first = stored[0]
            fields = [f for f in snapshot.schema.fields if f in fields or f is first]
    return StructType(fields)


def used_scan_columns(df: DataFrame) -> set[str] | None:
    """The names of the columns of ``df``'s one scan that its optimised plan uses (the
    plan's output and every expression above the scan); None when the plan has no single
    leaf to read them from."""
    plan = df._jdf.queryExecution().optimizedPlan()
    leaves = plan.collectLeaves()
    if leaves.size() != 1:
        return None
    leaf = leaves.apply(0)
    by_id = {a.exprId().id(): a.name() for a in _seq(leaf.output())}
    used: set[int] = set()
    if plan is leaf or plan.equals(leaf):
        return set(by_id.values())
    used.update(a.exprId().id() for a in _seq(plan.output()))
    pending = [plan]
    while pending:
        node = pending.pop()
        children = _seq(node.children())
        if not children:
            continue
        used.update(a.exprId().id() for a in _seq(node.references().toSeq()))
        pending.extend(children)
    return {name for i, name in by_id.items() if i in used}


def _seq(scala_seq: Any) -> list[Any]:
    return [scala_seq.apply(i) for i in range(scala_seq.size())]
