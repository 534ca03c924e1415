"""DESCRIBE HISTORY / DETAIL, OPTIMIZE, VACUUM, RESTORE: Delta's maintenance statements.

sqlglot has no grammar for them (they come back as opaque commands), so they are read
token by token (:class:`~headwater.sql.cursor.Cursor`) and mapped onto the ``DeltaTable``
API, which does the work.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from sqlglot.tokens import TokenType

from headwater import api
from headwater.delta.tables import DeltaTable
from headwater.sql.context import PASS, Context
from headwater.sql.cursor import Cursor
from headwater.sql.refs import is_delta, resolve
from headwater.sql.rewrite import expression_end
from headwater.sql.text import split


def _table(ctx: Context, cur: Cursor, action: str) -> DeltaTable:
    ref_tok = cur.peek()
    ref = cur.table()
    try:
        return DeltaTable.forPath(ctx.spark, resolve(ctx.spark, ref, action).path)
    except Exception as e:
        raise cur.error(f"{type(e).__name__}: {e}", ref_tok) from e


def describe(ctx: Context) -> DataFrame:
    """``DESCRIBE HISTORY t [LIMIT n]`` / ``DESCRIBE DETAIL t``."""
    cur = Cursor(ctx.stmt)
    cur.next()  # DESCRIBE / DESC
    kind = cur.next().text.upper()
    table = _table(ctx, cur, f"DESCRIBE {kind}")
    if kind == "DETAIL":
        cur.expect_end()
        return table.detail()
    limit = cur.integer("a row count after LIMIT") if cur.accept("LIMIT") else None
    cur.expect_end()
    return table.history(limit)


def optimize(ctx: Context) -> DataFrame:
    """``OPTIMIZE t [FULL] [WHERE partition_predicate] [ZORDER BY (cols)]``: compaction,
    Z-ordering, or (on a clustered table) clustering; FULL re-clusters every file."""
    cur = Cursor(ctx.stmt)
    cur.next()
    table = _table(ctx, cur, "OPTIMIZE")
    full = cur.accept("FULL")
    where = None
    if cur.accept("WHERE"):
        first = cur.i
        while not cur.done and not cur.at("ZORDER"):
            cur.next()
        if cur.i == first:
            raise cur.error("OPTIMIZE ... WHERE needs a predicate.")
        where = ctx.stmt.slice(cur.toks[first], cur.toks[cur.i - 1])
    z_order_by: list[str] = []
    if cur.accept("ZORDER", "BY"):
        z_order_by = _names(cur)
    cur.expect_end()
    return api.for_path(ctx.spark, table.path).optimize(where, z_order_by, full)


def _names(cur: Cursor) -> list[str]:
    """``(a, b)`` (or a bare ``a, b``): column names."""
    paren = cur.accept_type(TokenType.L_PAREN) is not None
    names = [".".join(cur.table().parts)]
    while cur.accept_type(TokenType.COMMA):
        names.append(".".join(cur.table().parts))
    if paren:
        cur.expect_type(TokenType.R_PAREN, "')'")
    return names


def vacuum(ctx: Context) -> DataFrame:
    """``VACUUM t [LITE | FULL] [RETAIN n HOURS] [DRY RUN]``: the files deleted (or, with
    DRY RUN, the files that would be). LITE (delta-spark: only the files the log removed,
    no listing) runs as FULL, which deletes those and the table folder's unreferenced
    files past the retention too: what a plain VACUUM deletes."""
    cur = Cursor(ctx.stmt)
    cur.next()
    table = _table(ctx, cur, "VACUUM")
    if not cur.accept("LITE"):
        cur.accept("FULL")
    hours = None
    if cur.accept("RETAIN"):
        hours = cur.number("a number of hours after RETAIN")
        cur.expect("HOURS")
    dry_run = cur.accept("DRY", "RUN")
    cur.expect_end()
    return api.for_path(ctx.spark, table.path).vacuum(hours, dry_run)


def restore(ctx: Context) -> DataFrame:
    """``RESTORE [TABLE] t [TO] VERSION|TIMESTAMP AS OF value``."""
    cur = Cursor(ctx.stmt)
    cur.next()
    cur.accept("TABLE")
    table = _table(ctx, cur, "RESTORE")
    cur.accept("TO")
    kind_tok = cur.peek()
    kind = cur.word()
    if kind not in ("VERSION", "TIMESTAMP"):
        raise cur.error("Expected VERSION AS OF or TIMESTAMP AS OF.")
    cur.next()
    cur.expect("AS", "OF")
    if kind == "VERSION":
        version = cur.integer("a version number")
        cur.expect_end()
        return table.restoreToVersion(version)
    if cur.done:
        raise cur.error("TIMESTAMP AS OF needs a timestamp.", kind_tok)
    first = cur.i
    last = expression_end(cur.toks, first, len(cur.toks) - 1)
    cur.i = last + 1
    cur.expect_end()
    if first == last and cur.toks[first].token_type.name == "STRING":
        when = cur.toks[first].text
    else:
        text = ctx.stmt.slice(cur.toks[first], cur.toks[last])
        when = ctx.sql(f"SELECT CAST(({text}) AS STRING)").collect()[0][0]
    return table.restoreToTimestamp(when)


def show_tblproperties(ctx: Context) -> DataFrame | object:
    """``SHOW TBLPROPERTIES t [(key)]`` on a Delta table: its properties and its protocol
    (``delta.minReaderVersion``, ``delta.minWriterVersion``, ``delta.feature.<name>``), as
    delta-spark lists them; Spark's catalog mirror knows neither."""
    # sqlglot reads everything after SHOW as one string: the rest is a statement of its own.
    cur = Cursor(split(ctx.stmt.tokens[1].text)[0])
    cur.expect("TBLPROPERTIES")
    start = cur.i
    ref = cur.table()
    if not is_delta(ctx.spark, ref):
        return PASS
    cur.i = start  # _table reads the name again, for its errors
    detail = _table(ctx, cur, "SHOW TBLPROPERTIES").detail().first()
    assert detail is not None  # detail() is one row
    rows = dict(detail.properties)
    rows["delta.minReaderVersion"] = str(detail.minReaderVersion)
    rows["delta.minWriterVersion"] = str(detail.minWriterVersion)
    if detail.minWriterVersion >= 7:
        rows.update({f"delta.feature.{f}": "supported" for f in detail.tableFeatures})
    if cur.accept_type(TokenType.L_PAREN):
        words = []
        while not cur.done and not cur.accept_type(TokenType.R_PAREN):
            tok = cur.next()
            words.append(tok.text)
        key = "".join(words)
        rows = {key: rows.get(key, f"Table {ref} does not have property: {key}")}
    cur.expect_end()
    return ctx.spark.createDataFrame(list(rows.items()), "key string, value string")


def show_partitions(ctx: Context) -> DataFrame | object:
    """``SHOW PARTITIONS t [PARTITION (k = v, ...)]`` on a Delta table: one row per
    partition, a typed column per partition column, as delta-spark answers (Spark's own
    command has no partitions of a Delta table to show)."""
    cur = Cursor(split(ctx.stmt.tokens[1].text)[0])  # what follows SHOW is one string
    cur.expect("PARTITIONS")
    start = cur.i
    ref = cur.table()
    if not is_delta(ctx.spark, ref):
        return PASS
    cur.i = start
    table = _table(ctx, cur, "SHOW PARTITIONS")
    detail = table.detail().first()
    assert detail is not None  # detail() is one row
    columns = list(detail.partitionColumns)
    if not columns:
        raise cur.error(
            "[DELTA_SHOW_PARTITION_IN_NON_PARTITIONED_TABLE] SHOW PARTITIONS is not allowed "
            f"on {ref}, which is not partitioned."
        )
    rows = table.toDF().select(*[f"`{c}`" for c in columns]).distinct()
    if cur.accept("PARTITION"):
        specs = [cur.text(item) for item in cur.items(cur.group())]
        rows = rows.where(" AND ".join(f"({spec})" for spec in specs))
    cur.expect_end()
    return rows
