"""Delta statements around a table's files and shape: ``CONVERT TO DELTA``, ``GENERATE
symlink_format_manifest FOR TABLE``, and ``DESCRIBE TABLE`` with its partitioning section.

Spark describes a headwater table (by name, from the catalog's mirror, or by path) from
its columns, without Delta's partitioning; delta-spark shows it in a ``# Partition
Information`` section, and code reading that output finds it here too.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from headwater.api import convert_to_delta
from headwater.delta.tables import DeltaTable
from headwater.engines.door import table_log
from headwater.sql.context import PASS, Context
from headwater.sql.cursor import Cursor
from headwater.sql.refs import entry_of, resolve


def convert(ctx: Context) -> DataFrame:
    """``CONVERT TO DELTA parquet.`/path` [NO STATISTICS] [PARTITIONED BY (c TYPE, ...)]``."""
    cur = Cursor(ctx.stmt)
    cur.expect("CONVERT", "TO", "DELTA")
    first = cur.i
    while not cur.done and not cur.at("NO") and not _partitioned_by(cur):
        cur.next()
    if cur.i == first:
        raise cur.error("CONVERT TO DELTA needs the files: parquet.`/path`.")
    identifier = ctx.stmt.slice(cur.toks[first], cur.toks[cur.i - 1])
    statistics = not cur.accept("NO", "STATISTICS")
    partitions = None
    if _partitioned_by(cur):
        cur.next()
        if cur.at("BY"):  # the tokenizer may give PARTITIONED and BY apart
            cur.next()
        partitions = cur.rest().strip()
        if not (partitions.startswith("(") and partitions.endswith(")")):
            raise cur.error("PARTITIONED BY takes (name TYPE, ...), e.g. (day DATE).")
        partitions = partitions[1:-1]
    else:
        cur.expect_end()
    convert_to_delta(ctx.spark, identifier, partitions, statistics=statistics)
    return ctx.empty()


def _partitioned_by(cur: Cursor) -> bool:
    return cur.at("PARTITIONED BY") or cur.at("PARTITIONED")


def generate(ctx: Context) -> DataFrame:
    """``GENERATE symlink_format_manifest FOR TABLE t``."""
    cur = Cursor(ctx.stmt)
    cur.expect("GENERATE")
    mode = cur.next().text
    cur.expect("FOR", "TABLE")
    ref = cur.table()
    cur.expect_end()
    DeltaTable.forPath(ctx.spark, resolve(ctx.spark, ref, "GENERATE").path).generate(mode)
    return ctx.empty()


_DESCRIBED = "col_name string, data_type string, comment string"


def describe_table(ctx: Context) -> DataFrame | object:
    """``DESCRIBE [TABLE] [EXTENDED] t``: Spark's rows plus the partitioning section."""
    cur = Cursor(ctx.stmt)
    cur.next()  # DESCRIBE / DESC
    cur.accept("TABLE")
    extended = cur.accept("EXTENDED") or cur.accept("FORMATTED")
    ref = cur.table()
    if not cur.done:
        return PASS  # DESCRIBE t column, DESCRIBE t PARTITION (...): Spark's
    entry = entry_of(ctx.spark, ref)
    location = ref.path if entry is None else entry.location
    if location is None or (extended and entry is None) or not table_log(location).exists():
        return PASS  # a name of Spark's, no Delta table at the path, or EXTENDED of a path
    snapshot = table_log(location).snapshot()
    if entry is None:  # a path: Spark knows no table there; its columns, as Spark shows them
        columns = [
            (f.name, f.dataType.simpleString(), f.metadata.get("comment")) for f in snapshot.schema
        ]
        spark_rows = ctx.spark.createDataFrame(columns, _DESCRIBED)
    else:
        spark_rows = ctx.orig_sql(ctx.spark, ctx.stmt.text)
    if not snapshot.partition_columns:
        return spark_rows
    rows = [tuple(r) for r in spark_rows.collect()]
    types = {f.name: f for f in snapshot.schema}
    section: list[tuple[str, str, str | None]] = [
        ("# Partition Information", "", ""),
        ("# col_name", "data_type", "comment"),
    ]
    for column in snapshot.partition_columns:
        field = types[column]
        section.append((column, field.dataType.simpleString(), field.metadata.get("comment")))
    # Before Spark's own "# ..." sections (EXTENDED's detailed table information).
    at = next((i for i, r in enumerate(rows) if r[0] == "" or str(r[0]).startswith("#")), None)
    at = len(rows) if at is None else at
    return ctx.spark.createDataFrame(rows[:at] + section + rows[at:], spark_rows.schema)
