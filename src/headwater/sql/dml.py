"""INSERT, UPDATE, DELETE and MERGE INTO on Delta tables.

sqlglot parses each statement; conditions, assignments and MERGE's clauses go to the
table (:class:`headwater.api.Table`, the one door that keeps Spark's catalog mirror
current) as Spark SQL expression strings, and the source queries (INSERT ... SELECT,
MERGE ... USING (subquery)) run in Spark exactly as written. INSERT into a table that is
not Delta is Spark's (``PASS``).
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from typing import Any, overload

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from sqlglot import exp
from sqlglot.tokens import TokenType

from headwater import api
from headwater.delta.options import WriteSpec
from headwater.delta.tables import merge_metrics
from headwater.engines.door import Clause
from headwater.errors import SchemaMismatchError
from headwater.sql.context import PASS, Context
from headwater.sql.cursor import Cursor, TableRef, matching_paren
from headwater.sql.refs import from_table, is_delta, offset_of, resolve_at
from headwater.sql.text import DIALECT, parse

_QUERY_START = {TokenType.SELECT, TokenType.WITH, TokenType.FROM, TokenType.VALUES, TokenType.TABLE}


@overload
def _sql(node: exp.Expr, ctx: Context, strip: AbstractSet[str] = ...) -> str: ...


@overload
def _sql(node: None, ctx: Context, strip: AbstractSet[str] = ...) -> None: ...


def _sql(node: exp.Expr | None, ctx: Context, strip: AbstractSet[str] = frozenset()) -> str | None:
    """Spark SQL text of an expression: parameters bound, ``strip`` qualifiers removed (the
    DML functions evaluate against the bare table)."""
    if node is None:
        return None
    node = node.copy()
    for col in list(node.find_all(exp.Column)):
        if col.table and col.table.lower() in strip and not col.args.get("db"):
            col.set("table", None)
    node = _bind(node, ctx.args, ctx)
    return node.sql("spark")


def _bind(node: exp.Expr, args: dict[str, Any] | list[Any] | None, ctx: Context) -> exp.Expr:
    """Parameter markers replaced by literals, as ``spark.sql(text, args)`` binds them."""
    if args is None:
        return node

    def replace(n: exp.Expr) -> exp.Expr:
        if not isinstance(n, exp.Placeholder):
            return n
        try:
            return exp.convert(ctx.arg(n.name))
        except (KeyError, StopIteration):
            raise ctx.stmt.error(f"No value given for parameter {n.sql(DIALECT)}.") from None

    return node.transform(replace)


def _qualifiers(table: exp.Table) -> set[str]:
    names = {table.name.lower()}
    if table.alias:
        names.add(table.alias.lower())
    return names


def _column_name(node: exp.Expression) -> str:
    return node.name if isinstance(node, (exp.Column, exp.Identifier)) else node.sql(DIALECT)


def _metrics(ctx: Context, **values: int) -> DataFrame:
    return ctx.rows(values, ", ".join(f"{k} long" for k in values))


def _open(ctx: Context, ref: TableRef, action: str, offset: int | None) -> api.Table:
    """The Delta table a statement changes, or its error placed where the name is written."""
    resolved = resolve_at(ctx.spark, ref, action, ctx.stmt, offset)
    return api.Table(ctx.spark, resolved.path, resolved.entry)


# -- INSERT ----------------------------------------------------------------------------------


def insert(ctx: Context) -> DataFrame | object:
    """``INSERT INTO|OVERWRITE [TABLE] t [(cols)] [BY NAME] [REPLACE WHERE p] query``."""
    cur = Cursor(ctx.stmt)
    cur.next()
    overwrite = cur.accept("OVERWRITE")
    if not overwrite:
        cur.expect("INTO")
    cur.accept("TABLE")
    ref_tok = cur.peek()
    ref = cur.table()
    if not is_delta(ctx.spark, ref):
        return PASS
    tree = parse(ctx.stmt)
    if not isinstance(tree, exp.Insert):
        raise ctx.stmt.error("Expected INSERT INTO t ... SELECT/VALUES.")
    target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    static = _static_partitions(ctx, target.args.get("partition") or tree.args.get("partition"))
    columns = (
        [_column_name(c) for c in tree.this.expressions]
        if isinstance(tree.this, exp.Schema)
        else None
    )
    assert ref_tok is not None  # cur.table() read the name from it
    table = _open(ctx, ref, "INSERT", ref_tok.start)
    start = _insert_query_start(ctx, cur)
    source = ctx.query(start)
    snapshot = table.log().snapshot()
    try:
        out = _arrange(source, snapshot.schema, columns, bool(tree.args.get("by_name")), static)
    except SchemaMismatchError as e:
        raise cur.error(str(e), ref_tok) from e
    parts = {p.lower() for p in snapshot.partition_columns}
    if set(static) - parts:
        raise cur.error(
            f"PARTITION ({', '.join(sorted(set(static) - parts))}): not a partition column of "
            f"the table (partitioned by {', '.join(snapshot.partition_columns) or 'nothing'}).",
            ref_tok,
        )
    where = tree.args.get("where")
    replace_where = None if where is None else _sql(where, ctx)
    if overwrite and static:  # INSERT OVERWRITE t PARTITION (p = v): those partitions only
        replace_where = " AND ".join(f"`{c}` <=> {v}" for c, v in static.items())
    spec = WriteSpec(
        mode="overwrite" if overwrite or replace_where is not None else "append",
        replace_where=replace_where,
    )
    table.write(out, spec)
    return ctx.empty()  # as delta-spark's INSERT: no result rows (the counts are in history)


def _insert_query_start(ctx: Context, cur: Cursor) -> int:
    """Skip the column list and BY NAME / REPLACE WHERE: where the query starts."""
    toks = cur.toks
    i = cur.i
    if i < len(toks) and toks[i].token_type == TokenType.L_PAREN and not _starts_query(toks, i):
        i = matching_paren(toks, i) + 1  # the column list
    depth = 0
    for j in range(i, len(toks)):
        if depth == 0 and _starts_query(toks, j):
            return j
        if toks[j].token_type == TokenType.L_PAREN:
            depth += 1
        elif toks[j].token_type == TokenType.R_PAREN:
            depth -= 1
    raise cur.error("Expected SELECT or VALUES after the INSERT target.")


def _starts_query(toks, j: int) -> bool:
    """SELECT/WITH/FROM/VALUES/TABLE, or ``(`` opening a parenthesised query."""
    t = toks[j].token_type
    if t == TokenType.L_PAREN:
        return j + 1 < len(toks) and toks[j + 1].token_type in _QUERY_START
    return t in _QUERY_START


def _static_partitions(ctx: Context, partition: exp.Expression | None) -> dict[str, str]:
    """``PARTITION (p = v, ...)`` of an INSERT: each column (lower case) with its value as
    Spark SQL text. A column without a value (a dynamic partition) is refused."""
    static: dict[str, str] = {}
    for item in partition.expressions if isinstance(partition, exp.Partition) else []:
        if not isinstance(item, exp.EQ):
            raise ctx.stmt.error(
                f"PARTITION ({item.sql(DIALECT)}): give the partition's value (PARTITION "
                "(p = v)), or leave the clause out and select the column in the query."
            )
        static[_column_name(item.this).lower()] = _sql(item.expression, ctx)
    return static


def _arrange(
    source: DataFrame,
    schema,
    columns: list[str] | None,
    by_name: bool,
    static: dict[str, str] | None = None,
) -> DataFrame:
    """The rows in the table's column order and types, as Spark's INSERT maps them:
    by position, by the listed columns, or BY NAME; ``static``: partition columns given a
    value in ``PARTITION (p = v)``, which the query leaves out. Unlisted columns are left
    out: the write gives them NULL, their DEFAULT or (generated columns) their
    expression."""
    static = static or {}
    by_lower = {f.name.lower(): f for f in schema}
    n = len(source.columns)
    if by_name:
        names = list(source.columns)
    elif columns is not None:
        names = columns
        if len(names) != n:
            raise SchemaMismatchError(
                f"INSERT lists {len(names)} column(s) but the query gives {n}."
            )
    else:
        names = [f.name for f in schema if f.name.lower() not in static]
        if n != len(names):
            raise SchemaMismatchError(
                f"[DELTA_INSERT_COLUMN_ARITY_MISMATCH] The table has {len(names)} column(s) "
                f"({', '.join(names)}) but the query gives "
                f"{n}. List the target columns: INSERT INTO t (a, b) SELECT ..."
            )
    unknown = [c for c in names if c.lower() not in by_lower]
    if unknown:
        raise SchemaMismatchError(
            f"Column(s) {', '.join(unknown)} not in the table ({', '.join(by_lower)})."
        )
    positional = source.toDF(*[f"__hw_c{i}" for i in range(n)])
    given = {name.lower(): F.col(f"__hw_c{i}") for i, name in enumerate(names)}
    given.update({name: F.expr(value) for name, value in static.items()})
    return positional.select(
        *[
            given[f.name.lower()].cast(f.dataType).alias(f.name)
            for f in schema
            if f.name.lower() in given
        ]
    )


# -- UPDATE / DELETE -------------------------------------------------------------------------


def update(ctx: Context) -> DataFrame:
    tree = parse(ctx.stmt)
    if not isinstance(tree, exp.Update) or tree.args.get("from_") or tree.args.get("from"):
        raise ctx.stmt.error("Expected UPDATE t SET col = expr [, ...] [WHERE condition].")
    table = _open(ctx, from_table(tree.this), "UPDATE", offset_of(tree.this))
    strip = _qualifiers(tree.this)
    assignments = {}
    for eq in tree.expressions:
        if not isinstance(eq, exp.EQ):
            raise ctx.stmt.error(f"Expected col = expr in SET, got {eq.sql(DIALECT)}.")
        assignments[_column_name(eq.this)] = _sql(eq.expression, ctx, strip)
    where = tree.args.get("where")
    result = table.update(_sql(where.this if where else None, ctx, strip), assignments)
    return _metrics(ctx, num_affected_rows=result.metrics.get("numUpdatedRows", 0))


def delete(ctx: Context) -> DataFrame:
    tree = parse(ctx.stmt)
    if not isinstance(tree, exp.Delete) or tree.args.get("using"):
        raise ctx.stmt.error("Expected DELETE FROM t [WHERE condition].")
    table = _open(ctx, from_table(tree.this), "DELETE", offset_of(tree.this))
    where = tree.args.get("where")
    result = table.delete(_sql(where.this if where else None, ctx, _qualifiers(tree.this)))
    return _metrics(ctx, num_affected_rows=result.metrics.get("numDeletedRows", 0))


# -- MERGE -----------------------------------------------------------------------------------


def merge(ctx: Context) -> DataFrame:
    """``MERGE [WITH SCHEMA EVOLUTION] INTO t USING src ON cond WHEN ...``."""
    toks = ctx.stmt.tokens
    cur = Cursor(ctx.stmt)
    cur.next()
    evolve = cur.accept("WITH", "SCHEMA", "EVOLUTION")
    if evolve:  # sqlglot does not know the clause: parse the statement without it
        toks = [toks[0], *toks[cur.i :]]
    tree = parse(ctx.stmt, toks)
    if not isinstance(tree, exp.Merge):
        raise ctx.stmt.error("Expected MERGE INTO t USING source ON condition WHEN ...")
    target = tree.this
    table = _open(ctx, from_table(target), "MERGE", offset_of(target))
    using = tree.args["using"]
    s_alias = using.alias or (using.name if isinstance(using, exp.Table) else None)
    source = ctx.query(*_source_span(ctx), prefix="SELECT * FROM ")
    if s_alias:
        source = source.alias(s_alias)
    whens = tree.args.get("whens")
    clauses = [_when(ctx, w) for w in (whens.expressions if whens is not None else [])]
    result = table.merge(
        source,
        _sql(tree.args["on"], ctx),
        clauses,
        target_alias=target.alias or target.name,
        evolve=evolve,
    )
    return merge_metrics(ctx.spark, result)


def _source_span(ctx: Context) -> tuple[int, int]:
    """Token indexes (in the statement's own token list) of the USING source, alias included."""
    depth = 0
    using = on = None
    all_toks = ctx.stmt.tokens
    for i, tok in enumerate(all_toks):
        t = tok.token_type
        if t == TokenType.L_PAREN:
            depth += 1
        elif t == TokenType.R_PAREN:
            depth -= 1
        elif depth == 0 and t == TokenType.USING and using is None:
            using = i
        elif depth == 0 and t == TokenType.ON and using is not None:
            on = i
            break
    if using is None or on is None or on == using + 1:
        raise ctx.stmt.error("Expected MERGE INTO t USING source ON condition.")
    return using + 1, on - 1


def _when(ctx: Context, when: exp.When) -> Clause:
    """One WHEN clause as MERGE's :class:`Clause` (``UPDATE SET *`` / ``INSERT *``: no
    assignments, every same-named source column)."""
    cond = _sql(when.args.get("condition"), ctx)
    then = when.args.get("then")
    matched = bool(when.args.get("matched"))
    by_source = bool(when.args.get("source"))
    delete = isinstance(then, exp.Var) and then.name.upper() == "DELETE"
    if isinstance(then, exp.Update):
        star = len(then.expressions) == 1 and isinstance(then.expressions[0], exp.Star)
        sets = None if star else _assignments(ctx, then.expressions)
        if matched:
            return Clause("matched", "update", cond, sets)
        if by_source and not star:
            return Clause("not_matched_by_source", "update", cond, sets)
    elif delete and matched:
        return Clause("matched", "delete", cond)
    elif delete and by_source:
        return Clause("not_matched_by_source", "delete", cond)
    elif isinstance(then, exp.Insert) and not matched and not by_source:
        if isinstance(then.this, exp.Star):
            return Clause("not_matched", "insert", cond)
        cols = [_column_name(c) for c in then.this.expressions]
        values = [_sql(v, ctx) for v in then.expression.expressions]
        if len(cols) != len(values):
            raise ctx.stmt.error(f"INSERT lists {len(cols)} column(s) but {len(values)} value(s).")
        return Clause("not_matched", "insert", cond, dict(zip(cols, values, strict=True)))
    clause = (
        "WHEN MATCHED"
        if matched
        else ("WHEN NOT MATCHED BY SOURCE" if by_source else "WHEN NOT MATCHED")
    )
    action = then.sql(DIALECT) if then is not None else "nothing"
    raise ctx.stmt.error(f"{clause} THEN {action} is not allowed.")


def _assignments(ctx: Context, eqs: list[exp.Expression]) -> dict[str, str]:
    out = {}
    for eq in eqs:
        if not isinstance(eq, exp.EQ):
            raise ctx.stmt.error(f"Expected col = expr in SET, got {eq.sql(DIALECT)}.")
        out[_column_name(eq.this)] = _sql(eq.expression, ctx)
    return out
