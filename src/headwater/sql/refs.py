"""Which Delta table a statement means: a name in headwater's catalog, or a path.

Statements name tables two ways, as on Databricks: ``db.t`` (headwater's catalog, see
:mod:`headwater.catalog`) or ``delta.`/path```. A name that Spark's catalog knows but
headwater does not is a Spark table (parquet, a view...): statements only Delta supports
refuse it by saying so, instead of Spark's vaguer "not supported" later.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import SparkSession
from sqlglot import exp

from headwater import storage
from headwater.catalog import Catalog, TableEntry
from headwater.engines.door import table_log
from headwater.errors import NotADeltaTableError, TableNotFoundError
from headwater.sql.cursor import TableRef
from headwater.sql.text import Statement


@dataclass(frozen=True)
class Resolved:
    """A Delta table a statement acts on: its root path and, for a name, its catalog entry."""

    ref: TableRef
    path: str
    entry: TableEntry | None = None


def from_table(table: exp.Table) -> TableRef:
    """A sqlglot table node as a :class:`TableRef`."""
    return TableRef.of_parts([part.name for part in table.parts])


def entry_of(spark: SparkSession, ref: TableRef) -> TableEntry | None:
    """The headwater catalog entry of a name (None for paths and unknown names)."""
    if ref.path is not None:
        return None
    return Catalog.of(spark).get(ref.name)


def is_delta(spark: SparkSession, ref: TableRef) -> bool:
    """True when the statement should be ours: a path, or a name headwater manages."""
    return ref.path is not None or entry_of(spark, ref) is not None


def in_spark_catalog(spark: SparkSession, ref: TableRef) -> bool:
    try:
        return bool(ref.parts) and spark.catalog.tableExists(ref.name)
    except Exception:  # an invalid name for Spark is simply not there
        return False


def resolve(spark: SparkSession, ref: TableRef, action: str) -> Resolved:
    """The Delta table ``ref`` names, or an error saying why it is not one.

    ``action`` is what the statement wants to do (``"UPDATE"``), for the message.
    """
    if ref.path is not None:
        dlog = table_log(ref.path)
        if dlog.exists():
            return Resolved(ref, dlog.root)
        if storage.is_nonempty_dir(ref.path):
            raise NotADeltaTableError(
                f"{action} needs a Delta table, but {ref.path} holds files and no Delta log "
                "(_delta_log). Convert it by reading it and writing it with format('delta')."
            )
        raise TableNotFoundError(f"{action}: there is no Delta table at {ref.path}.")
    catalog = Catalog.of(spark)
    entry = catalog.get(ref.name)
    if entry is not None:
        return Resolved(ref, entry.location, entry)
    if in_spark_catalog(spark, ref):
        raise NotADeltaTableError(
            f"{action} needs a Delta table, but {ref} is a table or view of Spark's catalog "
            "that is not Delta. Create it with USING DELTA (or write it with format('delta'))."
        )
    try:
        catalog.require(ref.name)
    except TableNotFoundError as e:
        raise TableNotFoundError(f"{action}: {e}") from None
    raise AssertionError("unreachable")


def resolve_at(
    spark: SparkSession, ref: TableRef, action: str, stmt: Statement, offset: int | None
) -> Resolved:
    """:func:`resolve`, with its errors placed at ``offset`` (where the name is written)."""
    try:
        return resolve(spark, ref, action)
    except (TableNotFoundError, NotADeltaTableError) as e:
        raise stmt.error(f"{type(e).__name__}: {e}", offset) from e


def offset_of(node: exp.Expression) -> int | None:
    """Where a parsed node starts in the text (sqlglot keeps positions on identifiers)."""
    starts = [n.meta["start"] for n in node.walk() if "start" in getattr(n, "meta", {})]
    return min(starts) if starts else None
