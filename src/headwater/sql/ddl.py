"""CREATE [OR REPLACE] TABLE [AS SELECT], ALTER TABLE, DROP TABLE for Delta tables.

Tables are created through the catalog (``DeltaTable.create`` builder / :class:`Catalog`),
then written, replaced and altered through :class:`headwater.api.Table`, the one door that
keeps Spark's catalog mirror current. Statements about other tables (``USING parquet``,
Hive ``STORED AS``, a Spark view) are Spark's: the handlers return ``PASS``.
"""

from __future__ import annotations

from dataclasses import replace

from pyspark.sql import DataFrame
from pyspark.sql.types import StructField, StructType
from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from headwater import api, engines, storage
from headwater.catalog import Catalog
from headwater.catalog.names import parse as parse_name
from headwater.catalog.registry import TableEntry
from headwater.delta.options import WriteSpec
from headwater.delta.tables import DeltaTable
from headwater.engines.door import (
    Operation,
    declare_identity,
    table_log,
    with_default,
    with_generation,
)
from headwater.errors import HeadwaterError, SchemaMismatchError, TableAlreadyExistsError
from headwater.sql.context import PASS, Context
from headwater.sql.cursor import Cursor, TableRef, is_name
from headwater.sql.refs import entry_of, from_table, in_spark_catalog, is_delta, resolve_at
from headwater.sql.text import DIALECT, parse
from headwater.sqltypes import parse_type

_KNOWN = (
    exp.FileFormatProperty,
    exp.PartitionedByProperty,
    exp.ClusterProperty,
    exp.LocationProperty,
    exp.SchemaCommentProperty,
    exp.ExternalProperty,
)


def _known(p: exp.Expression) -> bool:
    # Every property class derives from exp.Property; a plain one is a TBLPROPERTIES entry.
    return type(p) is exp.Property or isinstance(p, _KNOWN)


_QUERY_START = {
    TokenType.SELECT,
    TokenType.WITH,
    TokenType.FROM,
    TokenType.VALUES,
    TokenType.L_PAREN,
}


def create(ctx: Context) -> DataFrame | object:
    tree = parse(ctx.stmt)
    if not isinstance(tree, exp.Create) or str(tree.args.get("kind", "")).upper() != "TABLE":
        return PASS
    props = list(tree.args["properties"].expressions) if tree.args.get("properties") else []
    using = next((p for p in props if isinstance(p, exp.FileFormatProperty)), None)
    if using is not None and (using.args.get("hive_format") or using.name.lower() != "delta"):
        return PASS
    if using is None and not engines.delta_by_default(ctx.spark):
        return PASS  # the user made another format the default (spark.sql.sources.default)
    unknown = [p for p in props if not _known(p)]
    if unknown and using is None:
        return PASS  # Hive-style DDL (ROW FORMAT, LIKE, ...): Spark's
    if unknown:
        raise ctx.stmt.error(
            f"Not supported for Delta tables: {unknown[0].sql(DIALECT)}. Supported: columns, "
            "PARTITIONED BY, CLUSTER BY, LOCATION, TBLPROPERTIES, COMMENT."
        )
    schema_node = tree.this if isinstance(tree.this, exp.Schema) else None
    table = schema_node.this if schema_node is not None else tree.this
    ref = from_table(table)
    spec = _Spec(ctx, ref, props)
    columns = _columns(ctx, schema_node.expressions) if schema_node is not None else None
    replace = bool(tree.args.get("replace"))
    if_not_exists = bool(tree.args.get("exists"))
    if ref.parts and in_spark_catalog(ctx.spark, ref) and entry_of(ctx.spark, ref) is None:
        if if_not_exists:
            return ctx.empty()
        raise TableAlreadyExistsError(
            f"{ref} already exists in Spark's catalog and is not a Delta table; drop it first."
        )
    if tree.expression is not None:
        if columns:
            raise ctx.stmt.error("CREATE TABLE ... AS SELECT takes its columns from the query.")
        return _create_as_select(ctx, spec, replace, if_not_exists)
    return _create_empty(ctx, spec, columns, replace, if_not_exists)


class _Spec:
    """Where the table goes and how it is laid out, from the CREATE statement's clauses."""

    def __init__(self, ctx: Context, ref: TableRef, props: list[exp.Expression]) -> None:
        self.ref = ref
        self.partitions: list[str] = []
        self.location: str | None = ref.path
        self.properties: dict[str, str] = {}
        self.comment: str | None = None
        self.cluster_by: list[str] | None = None
        for p in props:
            if isinstance(p, exp.PartitionedByProperty):
                cols = p.this.expressions if isinstance(p.this, exp.Schema) else [p.this]
                if not all(isinstance(c, (exp.Identifier, exp.Column)) for c in cols):
                    raise ctx.stmt.error("PARTITIONED BY takes column names, e.g. (day, region).")
                self.partitions = [c.name for c in cols]
            elif isinstance(p, exp.ClusterProperty):
                self.cluster_by = _cluster_columns(ctx, p) or None
            elif isinstance(p, exp.LocationProperty):
                if ref.path is not None:
                    raise ctx.stmt.error("A table given by path (delta.`...`) takes no LOCATION.")
                self.location = p.this.name
            elif isinstance(p, exp.SchemaCommentProperty):
                self.comment = p.this.name
            elif type(p) is exp.Property:
                key = p.this.name if isinstance(p.this, exp.Literal) else p.this.sql(DIALECT)
                value = p.args.get("value")
                if isinstance(value, exp.Boolean):
                    self.properties[key] = "true" if value.this else "false"
                else:
                    self.properties[key] = value.name if value is not None else ""

    def write_spec(self, replace: bool) -> WriteSpec:
        """How a CREATE [OR REPLACE] ... AS SELECT (or a replace by an empty table) writes:
        properties and comment land in the same commit as the data."""
        return WriteSpec(
            mode="overwrite" if replace else "error",
            overwrite_schema=replace,
            partition_by=tuple(self.partitions),
            configuration=dict(self.properties) or None,
            description=self.comment,
            cluster_by=tuple(self.cluster_by) if self.cluster_by else None,
        )

    def operation(self, as_select: bool, replace: bool) -> Operation:
        return Operation.create_table(
            self.partitions, self.properties, self.comment, as_select, replace
        )

    def existing(self, ctx: Context) -> api.TableDoor | None:
        """The table the statement names, when it exists."""
        if self.ref.path is not None:
            table = api.for_path(ctx.spark, self.ref.path)
            return table if table.exists() else None
        return api.find(ctx.spark, self.ref.name)


def _cluster_columns(ctx: Context, p: exp.ClusterProperty) -> list[str]:
    """``CLUSTER BY (a, b)`` as names; ``CLUSTER BY NONE`` as none."""
    cols = list(p.expressions)
    if not cols:
        none = p.this if isinstance(p.this, str) else getattr(p.this, "name", "")
        if str(none).upper() == "NONE":
            return []
        raise ctx.stmt.error("CLUSTER BY takes column names, e.g. (day, region), or NONE.")
    if not all(
        isinstance(c, exp.Identifier) or (isinstance(c, exp.Column) and not c.table) for c in cols
    ):
        raise ctx.stmt.error(
            "CLUSTER BY takes top-level column names, e.g. (day, region); AUTO and "
            "expressions are not supported."
        )
    return [c.name for c in cols]


def _columns(ctx: Context, defs: list[exp.Expression]) -> StructType:
    fields = []
    for d in defs:
        if not isinstance(d, exp.ColumnDef) or d.args.get("kind") is None:
            raise ctx.stmt.error(f"Expected a column definition (name type), got {d.sql(DIALECT)}.")
        nullable, metadata = True, {}
        generated: str | None = None
        default: str | None = None
        identity_of: tuple[int, int, bool] | None = None
        for c in d.args.get("constraints") or []:
            kind = c.args.get("kind")
            if isinstance(kind, exp.NotNullColumnConstraint) and not kind.args.get("allow_null"):
                nullable = False  # enforced on every write (headwater.delta.files.constraints)
            elif isinstance(kind, exp.CommentColumnConstraint):
                metadata["comment"] = kind.this.name
            elif isinstance(kind, exp.ComputedColumnConstraint):
                generated = kind.this.sql("spark")
            elif isinstance(kind, exp.DefaultColumnConstraint):
                default = kind.this.sql("spark")
            elif isinstance(kind, exp.GeneratedAsIdentityColumnConstraint):
                identity_of = (
                    _number(ctx, kind.args.get("start"), 1),
                    _number(ctx, kind.args.get("increment"), 1),
                    bool(kind.this),  # True: ALWAYS, False: BY DEFAULT
                )
            else:
                raise ctx.stmt.error(
                    f"Column {d.name}: {c.sql(DIALECT)} is not supported yet (COMMENT, NOT NULL, "
                    "DEFAULT, GENERATED ALWAYS AS (expr) and identity columns are)."
                )
        try:
            dtype = parse_type(d.args["kind"].sql("spark"))
        except ValueError as e:
            raise ctx.stmt.error(f"Column {d.name}: {e}") from e
        field = StructField(d.name, dtype, nullable, metadata)
        if generated is not None:
            field = with_generation(field, generated)
        if default is not None:
            field = with_default(field, default)
        if identity_of is not None:
            field = declare_identity(field, *identity_of)
        fields.append(field)
    return StructType(fields)


def _number(ctx: Context, node: exp.Expression | None, default: int) -> int:
    """START WITH / INCREMENT BY values (signed integers)."""
    if node is None:
        return default
    try:
        return int(node.sql("spark"))
    except ValueError:
        raise ctx.stmt.error(f"Expected an integer, got {node.sql('spark')}.") from None


def _create_empty(
    ctx: Context, spec: _Spec, columns: StructType | None, replace: bool, if_not_exists: bool
) -> DataFrame:
    existing = spec.existing(ctx)
    if columns and spec.location and (existing is None or (replace and spec.ref.path)):
        # A table at the location is not replaced (delta-spark replaces tables by name only):
        # the columns given must be its own; CREATE OR REPLACE by path then does nothing.
        found = table_log(spec.location)
        if found.exists():
            _check_same_schema(found.root, found.snapshot().schema, columns)
            if replace and existing is not None:
                return ctx.empty()
    if existing is not None and replace:
        if not columns:
            raise ctx.stmt.error("CREATE OR REPLACE TABLE needs the new columns.")
        existing.replace(columns, spec.partitions, spec.properties, spec.comment)
        return ctx.empty()
    if not columns:
        if not spec.ref.parts:
            raise ctx.stmt.error("CREATE TABLE delta.`path` needs columns or AS SELECT.")
        if spec.location and table_log(spec.location).exists():  # register the table there
            Catalog.of(ctx.spark).create_table(
                spec.ref.name, None, spec.location, if_not_exists=if_not_exists
            )
            return ctx.empty()
        return _create_schemaless(ctx, spec, if_not_exists)
    builder = (DeltaTable.createIfNotExists if if_not_exists else DeltaTable.create)(ctx.spark)
    if spec.ref.parts:
        builder = builder.tableName(spec.ref.name)
    if spec.location:
        builder = builder.location(spec.location)
    builder = builder.addColumns(columns).partitionedBy(*spec.partitions)
    if spec.cluster_by:
        builder = builder.clusterBy(*spec.cluster_by)
    for key, value in spec.properties.items():
        builder = builder.property(key, value)
    if spec.comment is not None:
        builder = builder.comment(spec.comment)
    builder.execute()
    return ctx.empty()


def _check_same_schema(location: str, existing: StructType, specified: StructType) -> None:
    """The columns a CREATE gives for a table already at ``location`` must be its own (names
    and types, as delta-spark compares them)."""

    def shape(schema: StructType) -> list[tuple[str, str]]:
        return [(f.name, f.dataType.simpleString()) for f in schema]

    if shape(existing) != shape(specified):
        raise SchemaMismatchError(
            f"[DELTA_CREATE_TABLE_SCHEME_MISMATCH] The specified schema does not match the "
            f"existing schema at {location}: specified {specified.simpleString()}, existing "
            f"{existing.simpleString()}. Omit the columns to keep the table as it is, or "
            "replace it by name (CREATE OR REPLACE TABLE name ...) or by a write with "
            "mode('overwrite') and overwriteSchema=true."
        )


def _create_schemaless(ctx: Context, spec: _Spec, if_not_exists: bool) -> DataFrame:
    """``CREATE TABLE [IF NOT EXISTS] t``: a name whose first COPY INTO sets the schema."""
    try:
        from headwater.copyinto import create_schemaless_table
    except ImportError as e:
        raise ctx.stmt.error(
            f"CREATE TABLE without columns needs headwater.copyinto ({e}); give the columns."
        ) from e
    if spec.properties or spec.comment or spec.partitions:
        raise ctx.stmt.error(
            "A table without columns takes no PARTITIONED BY, TBLPROPERTIES or COMMENT yet; "
            "give its columns, or let COPY INTO create it."
        )
    create_schemaless_table(ctx.spark, spec.ref.name, spec.location, if_not_exists)
    return ctx.empty()


def _create_as_select(ctx: Context, spec: _Spec, replace: bool, if_not_exists: bool) -> DataFrame:
    existing = spec.existing(ctx)
    if existing is not None and not replace:
        if if_not_exists:
            return ctx.empty()
        raise TableAlreadyExistsError(f"Table {spec.ref} already exists.")
    df = ctx.query(_query_start(ctx))
    catalog = Catalog.of(ctx.spark)
    new_entry = spec.ref.parts and catalog.registry.get(parse_name(spec.ref.name)) is None
    table = existing
    if spec.ref.parts:
        location = None if existing else spec.location
        table = api.table(ctx.spark, spec.ref.name, location)
    elif table is None and spec.location is not None:
        table = api.for_path(ctx.spark, spec.location)
    if table is None:
        raise ctx.stmt.error("CREATE TABLE ... AS SELECT needs a table name or a LOCATION.")
    try:
        table.write(df, spec.write_spec(bool(existing)), spec.operation(True, bool(existing)))
    except BaseException:
        if new_entry:
            catalog.registry.remove(parse_name(spec.ref.name))
        raise
    return ctx.empty()  # as delta-spark's CTAS: no result rows


def _query_start(ctx: Context) -> int:
    """Index of the first token of the query after ``AS`` (outside parentheses)."""
    depth = 0
    toks = ctx.stmt.tokens
    for i, tok in enumerate(toks[:-1]):
        if tok.token_type == TokenType.L_PAREN:
            depth += 1
        elif tok.token_type == TokenType.R_PAREN:
            depth -= 1
        elif (
            depth == 0
            and tok.token_type == TokenType.ALIAS
            and toks[i + 1].token_type in _QUERY_START
        ):
            return i + 1
    raise ctx.stmt.error("Expected AS SELECT ... in CREATE TABLE.")


def alter(ctx: Context) -> DataFrame | object:
    """``ALTER TABLE t ADD COLUMN[S] (...)`` / ``SET TBLPROPERTIES (...)`` on Delta tables."""
    cur = Cursor(ctx.stmt)
    cur.expect("ALTER", "TABLE")
    ref_tok = cur.peek()
    ref = cur.table()
    if not is_delta(ctx.spark, ref):
        return PASS
    assert ref_tok is not None  # cur.table() read the name from it
    resolved = resolve_at(ctx.spark, ref, "ALTER TABLE", ctx.stmt, ref_tok.start)
    table = api.Table(ctx.spark, resolved.path, resolved.entry)
    if cur.accept("UNSET", "TBLPROPERTIES"):
        if_exists = cur.accept("IF", "EXISTS")
        keys = [_property_key(item) for item in cur.items(cur.group())]
        cur.expect_end()
        table.unset_properties(keys, if_exists)
        return ctx.empty()
    tokens, position = _position(cur)
    if position is not None and len(tokens) - cur.i == 2 + (cur.word(1) == "COLUMN"):
        table.change_column(tokens[-1].text, position=position)  # ALTER COLUMN c FIRST
        return ctx.empty()
    tree = parse(ctx.stmt, tokens)
    actions = tree.args.get("actions") if isinstance(tree, exp.Alter) else None
    supported = (
        "supported on Delta tables: ADD COLUMN(S), RENAME COLUMN, DROP COLUMN(S), SET / UNSET "
        "TBLPROPERTIES, ADD CONSTRAINT "
        "... CHECK, DROP CONSTRAINT, CLUSTER BY, ALTER COLUMN c TYPE / CHANGE COLUMN c c <type> "
        "[FIRST | AFTER x], ALTER COLUMN c DROP / SET NOT NULL"
    )
    if not actions:
        raise ctx.stmt.error(f"This ALTER TABLE is not supported yet ({supported}).")
    if position is not None and not (
        len(actions) == 1
        and isinstance(actions[0], exp.AlterColumn)
        and _is_type_change(actions[0])
    ):
        raise ctx.stmt.error(f"ALTER TABLE ... {position} is not {supported}.")
    for action in actions:
        if isinstance(action, (exp.Schema, exp.ColumnDef)):
            defs = action.expressions if isinstance(action, exp.Schema) else [action]
            table.add_columns(_columns(ctx, defs))
        elif isinstance(action, exp.AlterRename) and isinstance(action.this, exp.Table):
            _rename(ctx, resolved.entry, action.this)
        elif isinstance(action, exp.AlterSet) and action.args.get("location") is not None:
            _set_location(ctx, resolved.entry, table, action.args["location"].name)
        elif isinstance(action, exp.AlterSet) and action.expressions:
            props = _Spec(ctx, ref, list(action.expressions[0].expressions)).properties
            table.set_properties(props)
        elif isinstance(action, exp.ClusterProperty):
            table.cluster_by(_cluster_columns(ctx, action) or None)
        elif isinstance(action, exp.AlterColumn) and _is_type_change(action):
            _change_column(ctx, table, action, position)
        elif isinstance(action, exp.AlterColumn) and _nullability(action) is not None:
            table.change_column(action.this.name, nullable=_nullability(action))
        elif isinstance(action, exp.RenameColumn):
            table.rename_column(_path(action.this), action.args["to"].name)
        elif isinstance(action, exp.Drop) and str(action.args.get("kind")).upper() in (
            "COLUMN",
            "COLUMNS",
        ):
            table.drop_columns(_dropped(action), bool(action.args.get("exists")))
        elif isinstance(action, exp.AddConstraint) and (check := _check(action)) is not None:
            table.add_constraint(*check)
        elif isinstance(action, exp.Drop) and str(action.args.get("kind")).upper() == "CONSTRAINT":
            for t in action.args.get("tables") or []:
                table.drop_constraint(t.name, bool(action.args.get("exists")))
        else:
            raise ctx.stmt.error(f"ALTER TABLE {action.sql(DIALECT)} is not {supported}.")
    return ctx.empty()


def _path(column: exp.Expression) -> list[str]:
    """A column as written (``a``, ``a.b``): its names from the outermost."""
    return [p.name for p in column.parts] if isinstance(column, exp.Column) else [column.name]


def _dropped(action: exp.Drop) -> list[list[str]]:
    """The columns of ``DROP COLUMN a.b`` / ``DROP COLUMNS (a, b)``."""
    found = []
    for node in action.args.get("tables") or []:
        items = node.expressions if isinstance(node, exp.Schema) else [node]
        found += [_path(item) for item in items]
    return found


def _is_type_change(action: exp.AlterColumn) -> bool:
    """``ALTER COLUMN c TYPE t`` or ``CHANGE [COLUMN] c c t [COMMENT '...']`` (no rename)."""
    args = {k for k, v in action.args.items() if v not in (None, False)}
    rename = action.args.get("rename_to")
    same = rename is None or rename.name.lower() == action.this.name.lower()
    return args <= {"this", "dtype", "comment", "rename_to"} and same and len(args) > 1


def _rename(ctx: Context, entry: TableEntry | None, target: exp.Table) -> None:
    """``RENAME TO``: the catalog entry only (no Delta commit, as in delta-spark). A managed
    table's directory moves to the new name's managed location, as Spark's catalog moves it."""
    if entry is None:
        raise ctx.stmt.error("ALTER TABLE RENAME TO needs a table name: a table by path has none.")
    ref = from_table(target)
    new = parse_name(ref.name if target.args.get("db") else f"`{entry.database}`.{ref.name}")
    try:
        Catalog.of(ctx.spark).rename_table(entry, new)
    except HeadwaterError as e:  # the name is taken, or the directory cannot move
        raise ctx.stmt.error(f"ALTER TABLE RENAME TO: {e}") from e


def _set_location(ctx: Context, entry: TableEntry | None, table: api.Table, location: str) -> None:
    """``SET LOCATION``: point the name at another Delta table of the same schema (catalog
    only, no Delta commit, as in delta-spark)."""
    if entry is None:
        raise ctx.stmt.error("ALTER TABLE SET LOCATION needs a table name, not a path.")
    target = table_log(storage.normalize(location))
    if not target.exists():
        raise ctx.stmt.error(f"ALTER TABLE SET LOCATION: no Delta table at {location}.")
    old, new = table.log().snapshot().schema, target.snapshot().schema
    if [(f.name.lower(), f.dataType) for f in old] != [(f.name.lower(), f.dataType) for f in new]:
        raise ctx.stmt.error(
            f"[DELTA_SET_LOCATION_SCHEMA_MISMATCH] The table at {location} has schema "
            f"{new.simpleString()}, {entry.name} has {old.simpleString()}. Point the name at a "
            "table of the same schema."
        )
    Catalog.of(ctx.spark).repoint(replace(entry, location=target.root))


def _position(cur: Cursor) -> tuple[list[Token], str | None]:
    """The statement's tokens without a trailing ``FIRST`` / ``AFTER col`` of ``ALTER`` /
    ``CHANGE COLUMN`` (sqlglot reads no column position), and that position."""
    toks = cur.toks
    if cur.word() not in ("ALTER", "CHANGE") or len(toks) < cur.i + 3:
        return toks, None
    if toks[-1].text.upper() == "FIRST":
        return toks[:-1], "FIRST"
    if toks[-2].text.upper() == "AFTER" and is_name(toks[-1]):
        return toks[:-2], f"AFTER {toks[-1].text}"
    return toks, None


def _property_key(item: list[Token]) -> str:
    """A key of ``UNSET TBLPROPERTIES (...)``: a quoted string or a bare dotted name."""
    return "".join(t.text for t in item)


def _nullability(action: exp.AlterColumn) -> bool | None:
    """True for ``ALTER COLUMN c DROP NOT NULL``, False for ``SET NOT NULL``, else None."""
    args = {k for k, v in action.args.items() if v not in (None, False)}
    if args == {"this", "drop", "allow_null"}:
        return True
    if args == {"this"} and action.args.get("allow_null") is False:
        return False
    return None


def _change_column(
    ctx: Context, table: api.Table, action: exp.AlterColumn, position: str | None = None
) -> None:
    dtype = action.args.get("dtype") or None
    comment = action.args.get("comment") or None  # False when CHANGE COLUMN has none
    try:
        new_type = parse_type(dtype.sql("spark")) if dtype is not None else None
    except ValueError as e:
        raise ctx.stmt.error(f"Column {action.this.name}: {e}") from e
    table.change_column(
        action.this.name, new_type, comment.name if comment is not None else None, position
    )


def _check(action: exp.AddConstraint) -> tuple[str, str] | None:
    """(name, Spark SQL of the condition) of ``ADD CONSTRAINT name CHECK (condition)``."""
    constraint = action.expressions[0] if action.expressions else None
    if not isinstance(constraint, exp.Constraint) or len(constraint.expressions) != 1:
        return None
    check = constraint.expressions[0]
    if not isinstance(check, exp.CheckColumnConstraint):
        return None
    return constraint.name, check.this.sql(DIALECT)


def drop(ctx: Context) -> DataFrame | object:
    """``DROP TABLE [IF EXISTS] t [PURGE]`` of a headwater table (else Spark's)."""
    tree = parse(ctx.stmt)
    if not isinstance(tree, exp.Drop) or str(tree.args.get("kind", "")).upper() != "TABLE":
        return PASS
    tables = tree.args.get("tables") or []
    if len(tables) != 1 or not isinstance(tables[0], exp.Table):
        return PASS
    ref = from_table(tables[0])
    if ref.path is not None:
        raise ctx.stmt.error("DROP TABLE takes a table name; a table by path is its directory.")
    catalog = Catalog.of(ctx.spark)
    if catalog.registry.get(parse_name(ref.name)) is None:
        return PASS
    catalog.drop_table(ref.name, purge=True if tree.args.get("purge") else None, if_exists=True)
    return ctx.empty()
