"""Files skipped for filters applied after ``load()``, as delta-spark skips them.

``spark.read.format("delta").load(p)`` returns Spark's native Parquet scan of the
snapshot's files, built before any filter is known (:mod:`headwater.delta.read.batch`).
Spark then applies a later ``.filter(...)`` on the scan, reading every file's footer.
delta-spark instead prunes the file list with the log's partition values and min/max/null
count stats, inside its JVM file index. headwater has no JVM code, so the scan it returns
is a :class:`DeltaFrame`: a DataFrame whose ``filter``/``where`` asks Spark's own planner
which predicates reach the scan (after its optimiser has moved and simplified them),
translates them to data-source filters with Spark's own translation, evaluates them over
the log's stats (:mod:`headwater.delta.read.skipping`, which reads loose bounds as loose)
and restricts the scan to the files that may match by a ``_metadata.file_path`` filter,
which Spark applies to its file list before opening a file. No footer is read to decide,
the rows are Spark's Parquet reader's as before, and the result keeps the scan's columns
(``df.id`` still resolves). Anything the stats cannot decide keeps the file; anything that
goes wrong keeps every file. Filters reach the scan this way only through ``filter``/
``where`` called on the loaded DataFrame (or on one such call's result).
"""

from __future__ import annotations

import datetime as dt
import decimal
import logging
from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringStartsWith,
)

from headwater.delta.log.delta_log import Snapshot
from headwater.delta.read import native_scan
from headwater.delta.read.skipping import AllOf, AnyOf, keep_mask

log = logging.getLogger(__name__)

_EPOCH = dt.datetime(1970, 1, 1)
_COMPARISONS: dict[str, type[Filter]] = {
    "EqualTo": EqualTo,
    "EqualNullSafe": EqualNullSafe,
    "GreaterThan": GreaterThan,
    "GreaterThanOrEqual": GreaterThanOrEqual,
    "LessThan": LessThan,
    "LessThanOrEqual": LessThanOrEqual,
    "StringStartsWith": StringStartsWith,
}


class DeltaFrame(ClassicDataFrame):
    """A native scan of a whole snapshot whose ``filter``/``where`` skip files."""

    def __init__(self, df: DataFrame, snapshot: Snapshot) -> None:
        super().__init__(df._jdf, df.sparkSession)
        self._snapshot = snapshot

    def filter(self, condition: Column | str) -> DataFrame:
        full = super().filter(condition)
        return DeltaFrame(skip_files(full, self._snapshot), self._snapshot)

    def where(self, condition: Column | str) -> DataFrame:
        return self.filter(condition)


def _keeping(name: str):
    """A DataFrame method whose result (the same rows, other columns) stays a
    :class:`DeltaFrame`, so a filter after it still skips files."""

    def method(self: DeltaFrame, *args: Any, **kwargs: Any) -> DataFrame:
        return DeltaFrame(getattr(ClassicDataFrame, name)(self, *args, **kwargs), self._snapshot)

    method.__name__ = name
    return method


for _name in (
    "select",
    "selectExpr",
    "withColumn",
    "withColumns",
    "withColumnRenamed",
    "withColumnsRenamed",
    "drop",
    "alias",
):
    setattr(DeltaFrame, _name, _keeping(_name))


def skip_files(df: DataFrame, snapshot: Snapshot) -> DataFrame:
    """``df`` (a filtered scan of all of ``snapshot``'s files) reading only the files whose
    stats admit the filters Spark pushes to its scan."""
    try:
        scans = file_scans(df)
        if len(scans) != 1:
            return df
        keep = _kept(df, snapshot, scans)
        if keep is None:
            return df
        kept = [f for f, k in zip(snapshot.files, keep, strict=True) if k]
        return native_scan.restricted(df.sparkSession, df, snapshot, kept)
    except Exception:  # skipping is an optimisation: never a reason for a query to fail
        log.debug("file skipping left out for %s", snapshot.root, exc_info=True)
        return df


def narrow_views(query: DataFrame, frames: Mapping[str, DataFrame]) -> bool:
    """For a SQL query over temporary views of whole-snapshot scans (``frames``, by view
    name: ``delta.`/path``` references), each such view replaced by its scan of only the
    files that the filters Spark pushes to that table's scans in ``query`` admit. True
    when a view changed: the caller plans the statement again, over the narrowed views
    (the rows are the same; fewer files are read). A statement Spark already ran (a
    command) is left alone."""
    ours = {view: f for view, f in frames.items() if isinstance(f, DeltaFrame)}
    if not ours:
        return False
    changed = False
    try:
        execution = query._jdf.queryExecution()
        if execution.analyzed().getClass().getSimpleName() == "CommandResult":
            return False
        scans = file_scans(query)
        for view, frame in ours.items():
            own = file_scans(frame)
            if len(own) != 1:
                continue
            location = own[0].relation().location()
            mine = [s for s in scans if s.relation().location().equals(location)]
            keep = _kept(query, frame._snapshot, mine) if mine else None
            if keep is None:
                continue
            snapshot = frame._snapshot
            kept = [f for f, k in zip(snapshot.files, keep, strict=True) if k]
            narrowed = native_scan.restricted(query.sparkSession, frame, snapshot, kept)
            narrowed.createOrReplaceTempView(view)
            changed = True
    except Exception:  # as above: the statement runs over the views as they are
        log.debug("file skipping left out of a SQL query", exc_info=True)
    return changed


def _kept(df: DataFrame, snapshot: Snapshot, scans: list[Any]) -> list[bool] | None:
    """Per file of ``snapshot``: may it hold a row some of ``scans`` (all of its files)
    reads after their pushed filters; None when every file may."""
    keep: list[bool] | None = None
    for scan in scans:
        filters = scan_filters(df, scan)
        if not filters:
            return None
        mask = keep_mask(snapshot.add_actions, filters, snapshot.partition_columns).to_pylist()
        keep = mask if keep is None else [a or b for a, b in zip(keep, mask, strict=True)]
    return None if keep is None or all(keep) else keep


def file_scans(df: DataFrame) -> list[Any]:
    """The file scans (``FileSourceScanExec``) of Spark's physical plan of ``df``."""
    scans = []
    stack = [df._jdf.queryExecution().sparkPlan()]
    while stack:
        node = stack.pop()
        if node.getClass().getSimpleName() == "FileSourceScanExec":
            scans.append(node)
        children = node.children()
        stack.extend(children.apply(i) for i in range(children.size()))
    return scans


def scan_filters(df: DataFrame, scan: Any) -> list[Filter]:
    """The filters Spark pushes to ``scan`` (data and partition filters), translated by
    Spark as for a data source, as data-source filters."""
    jvm = df.sparkSession._jvm
    assert jvm is not None  # a classic session always has one
    strategy = getattr(
        getattr(jvm.org.apache.spark.sql.execution.datasources, "DataSourceStrategy$"), "MODULE$"
    )
    found: list[Filter] = []
    for exprs in (scan.dataFilters(), scan.partitionFilters()):
        for i in range(exprs.size()):
            translated = strategy.translateFilter(exprs.apply(i), False)
            if translated.isDefined():
                flt = from_jvm(translated.get())
                if flt is not None:
                    found.append(flt)
    return found


def from_jvm(flt: Any) -> Filter | None:
    """One of Spark's ``sources.Filter`` (a JVM object) as a data-source filter; None for
    what skipping cannot use (a conjunct left out keeps more files, never fewer)."""
    kind = flt.getClass().getSimpleName()
    try:
        if kind in ("And", "Or"):
            left, right = from_jvm(flt.left()), from_jvm(flt.right())
            if kind == "And":
                return None if left is None and right is None else AllOf(left, right)
            return None if left is None or right is None else AnyOf(left, right)
        if kind == "Not":
            child = from_jvm(flt.child())
            return None if child is None else Not(child)
        if kind in _COMPARISONS:
            comparison: Any = _COMPARISONS[kind]  # each takes (attribute, value)
            return comparison((flt.attribute(),), python_value(flt.value()))
        if kind == "In":
            return In((flt.attribute(),), tuple(python_value(v) for v in flt.values()))
        if kind in ("IsNull", "IsNotNull"):
            return (IsNull if kind == "IsNull" else IsNotNull)((flt.attribute(),))
    except ValueError:
        return None
    return None


def python_value(value: Any) -> Any:
    """A filter's literal as Python holds it (py4j already converts numbers, strings and
    decimals); dates and times from their JVM classes. ValueError for anything else."""
    if value is None or isinstance(value, (bool, int, float, str, decimal.Decimal)):
        return value
    kind = value.getClass().getName()
    if kind == "java.sql.Timestamp":  # an instant: whole seconds (floored) and nanoseconds
        micros = (value.getTime() // 1000) * 1_000_000 + value.getNanos() // 1000
        return _instant(micros)
    if kind == "java.time.Instant":
        return _instant(value.getEpochSecond() * 1_000_000 + value.getNano() // 1000)
    if kind == "java.sql.Date":
        return dt.date.fromordinal(_EPOCH.toordinal() + value.toLocalDate().toEpochDay())
    if kind == "java.time.LocalDate":
        return dt.date.fromordinal(_EPOCH.toordinal() + value.toEpochDay())
    if kind == "java.time.LocalDateTime":  # TIMESTAMP_NTZ: wall-clock time, no zone
        date = value.toLocalDate().toEpochDay()
        micros = value.toLocalTime().toNanoOfDay() // 1000
        return _EPOCH + dt.timedelta(days=date, microseconds=micros)
    raise ValueError(f"no Python value for a {kind} literal")


def _instant(micros: int) -> dt.datetime:
    return (_EPOCH + dt.timedelta(microseconds=micros)).replace(tzinfo=dt.timezone.utc)
