"""Pipeline SQL source files -> datasets, flows and AUTO CDC flows (Spark-free).

The statement heads DLT users write (``CREATE OR REFRESH STREAMING TABLE t (CONSTRAINT ...
EXPECT ...)``, ``CREATE FLOW f AS INSERT INTO t BY NAME ...``, ``APPLY CHANGES INTO ...``)
are not SQL any parser knows, so they are read here from the tokens of the file; only the
query after ``AS`` (or ``BY NAME``) goes to sqlglot (:mod:`.queries`). Every value
keeps the line its statement starts on and its text, for errors and the event log.

``${key}`` is replaced, statement by statement, by the pipeline configuration's value or a
value ``SET`` earlier in the file; a key with no value is an error. ``$${key}`` is the
escape: it stays as the literal text ``${key}``. Substitution applies to the whole
statement, strings and comments inside it included.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlglot.errors import TokenError
from sqlglot.tokens import Token

from headwater.errors import PipelineDefinitionError
from headwater.pipelines.define.elements import (
    AutoCdc,
    Dataset,
    DatasetKind,
    Expectation,
    Origin,
    RefreshPolicy,
)
from headwater.pipelines.sql_files.queries import (
    PARSE_ERROR,
    DefinitionCursor,
    FileSource,
    Reference,
    SqlQuery,
    definition_error,
    parse_query,
    query_from_tokens,
)
from headwater.sql.cursor import STRINGS, key_of, keys_of
from headwater.sql.text import SqlError, Statement, line_col, offset_at, split, tokenize

__all__ = [
    "FileSource",
    "Reference",
    "SqlAutoCdc",
    "SqlDataset",
    "SqlDefinitions",
    "SqlFlow",
    "SqlQuery",
    "parse_query",
    "parse_sql_file",
]

UNSUPPORTED_STATEMENT = "PIPELINE_SQL_UNSUPPORTED_STATEMENT"
UNSUPPORTED_CLAUSE = "PIPELINE_SQL_UNSUPPORTED_CLAUSE"
UNDEFINED_PARAMETER = "PIPELINE_UNDEFINED_PARAMETER"
DUPLICATE_EXPECTATION = "PIPELINE_DUPLICATE_EXPECTATION"

ACCEPTED_FORMS = (
    "CREATE [OR REFRESH] [PRIVATE] STREAMING TABLE name [(...)] [clauses] [AS query]; "
    "CREATE [OR REFRESH] [PRIVATE] MATERIALIZED VIEW name [(...)] [clauses] AS query; "
    "CREATE TEMPORARY [STREAMING] [LIVE] VIEW name [(CONSTRAINT ...)] AS query; "
    "CREATE [OR REFRESH] {STREAMING | INCREMENTAL} LIVE TABLE / LIVE TABLE (older names); "
    "CREATE FLOW name AS INSERT INTO [ONCE] target [BY NAME] query; "
    "CREATE FLOW name AS AUTO CDC INTO target FROM STREAM(source) KEYS (...) SEQUENCE BY ...; "
    "APPLY CHANGES INTO target FROM STREAM(source) ...; SET key = value; SET key"
)
PLACEHOLDER = re.compile(r"(\$?)\$\{([^{}]*)\}")
# A SQL notebook exported as a file: its cells are split by this line, and a cell's last
# statement needs no ';' (the header and '-- MAGIC' markdown lines are comments).
CELL_BREAK = re.compile(r"^-- COMMAND -{10}[ \t]*\r?$", re.MULTILINE)
KINDS: tuple[tuple[tuple[str, ...], DatasetKind], ...] = (
    (("STREAMING", "LIVE", "TABLE"), "streaming_table"),
    (("STREAMING", "LIVE", "VIEW"), "temporary_view"),
    (("STREAMING", "TABLE"), "streaming_table"),
    (("INCREMENTAL", "LIVE", "TABLE"), "streaming_table"),
    (("MATERIALIZED", "VIEW"), "materialized_view"),
    (("LIVE", "TABLE"), "materialized_view"),
    (("LIVE", "VIEW"), "temporary_view"),
    (("VIEW",), "temporary_view"),
)
CDC_CLAUSES = (
    ("KEYS",),
    ("IGNORE", "NULL", "UPDATES"),
    ("APPLY", "AS", "DELETE", "WHEN"),
    ("APPLY", "AS", "TRUNCATE", "WHEN"),
    ("SEQUENCE", "BY"),
    ("COLUMNS",),
    ("STORED", "AS", "SCD", "TYPE"),
    ("TRACK", "HISTORY", "ON"),
    ("UNAVAILABLE", "COLUMNS", "IN"),
)


@dataclass(frozen=True, eq=False)
class SqlDataset:
    """A dataset a SQL statement defines; ``query`` is its implicit flow's (None for a
    streaming table fed only by flows). ``text`` is the statement as run."""

    dataset: Dataset
    query: SqlQuery | None
    text: str

    @property
    def name(self) -> str:
        return self.dataset.name

    @property
    def origin(self) -> Origin:
        return self.dataset.origin


@dataclass(frozen=True, eq=False)
class SqlFlow:
    """``CREATE FLOW name AS INSERT INTO [ONCE] target [BY NAME] query`` (appends by name)."""

    name: str
    target: str
    query: SqlQuery
    origin: Origin
    text: str
    once: bool = False
    comment: str | None = None


@dataclass(frozen=True)
class SqlAutoCdc:
    """``CREATE FLOW name AS AUTO CDC INTO ...`` or ``APPLY CHANGES INTO ...`` as written:
    ``changes`` holds its arguments (expressions as SQL text, column lists plain names).
    Only parsed: the semantics are the runner's."""

    name: str
    target: str
    source_streaming: bool
    origin: Origin
    text: str
    changes: AutoCdc
    comment: str | None = None


@dataclass
class SqlDefinitions:
    """What one SQL file defines, in source order; ``conf`` holds its ``SET`` values."""

    datasets: list[SqlDataset] = field(default_factory=list)
    flows: list[SqlFlow] = field(default_factory=list)
    auto_cdc: list[SqlAutoCdc] = field(default_factory=list)
    conf: dict[str, str] = field(default_factory=dict)


def parse_sql_file(text: str, file: str, configuration: Mapping[str, str]) -> SqlDefinitions:
    """The definitions of one pipeline SQL file. ``configuration`` answers ``${key}``;
    a ``SET`` makes its key answer for the statements after it."""
    values = dict(configuration)
    result = SqlDefinitions()
    try:
        statements = split(text, [m.start() for m in CELL_BREAK.finditer(text)])
    except SqlError as e:
        raise definition_error(PARSE_ERROR, e.reason, file, text, error_offset(text, e)) from None
    for raw in statements:
        source, tokens = substituted(raw, values, file)
        if not tokens:
            raise definition_error(
                PARSE_ERROR,
                "This statement is empty once ${...} values are substituted.",
                file,
                text,
                raw.start,
            )
        cursor = DefinitionCursor(source, file, tokens)
        origin = Origin(file, line_col(text, raw.start)[0])
        statement_text = source[tokens[0].start : tokens[-1].end + 1]
        if cursor.accept("SET"):
            setting = set_value(cursor)
            if setting is not None:
                result.conf[setting[0]] = values[setting[0]] = setting[1]
        elif cursor.at("CREATE"):
            item = parse_create(cursor, origin, statement_text)
            if isinstance(item, SqlDataset):
                result.datasets.append(item)
            elif isinstance(item, SqlFlow):
                result.flows.append(item)
            else:
                result.auto_cdc.append(item)
        elif cursor.at("APPLY", "CHANGES", "INTO") or cursor.at("AUTO", "CDC", "INTO"):
            result.auto_cdc.append(parse_auto_cdc(cursor, None, None, origin, statement_text))
        else:
            raise unsupported(cursor)
    return result


def error_offset(source: str, e: SqlError) -> int:
    return offset_at(source, e.line, e.column) if e.line and e.column else 0


def substituted(raw: Statement, values: Mapping[str, str], file: str) -> tuple[str, list[Token]]:
    """The statement's source and tokens after ``${key}`` substitution. A statement with no
    placeholder keeps the file's own tokens; one with placeholders is tokenized again at
    the same line and column, so errors still point into the file."""
    if "${" not in raw.text:
        return raw.source, raw.tokens

    def replace(m: re.Match[str]) -> str:
        key = m.group(2).strip()
        if m.group(1):
            return "${" + m.group(2) + "}"
        if key not in values:
            raise definition_error(
                UNDEFINED_PARAMETER,
                f"'${{{key}}}' has no value: add '{key}' to the pipeline's configuration "
                "or SET it earlier in this file (write $${...} for a literal ${...}).",
                file,
                raw.source,
                raw.start + m.start(),
            )
        return values[key]

    text = PLACEHOLDER.sub(replace, raw.text)
    line, column = line_col(raw.source, raw.start)
    source = "\n" * (line - 1) + " " * (column - 1) + text
    try:
        return source, tokenize(source)
    except TokenError as e:
        reason = f"After substituting ${{...}} values the statement cannot be read: {e}"
        raise definition_error(PARSE_ERROR, reason, file, source, len(source) - len(text)) from None


# -- statements -------------------------------------------------------------------------------


def unsupported(cursor: DefinitionCursor, hint: str = "") -> PipelineDefinitionError:
    cursor.i = 0
    head = " ".join(cursor.text(first_words(cursor.toks, 4)).split()) if cursor.toks else ""
    return cursor.refuse(
        f"'{head[:60]}' is not a statement of a pipeline SQL file.{hint} Accepted: "
        f"{ACCEPTED_FORMS}.",
        UNSUPPORTED_STATEMENT,
    )


def first_words(tokens: list[Token], n: int) -> list[Token]:
    """The tokens that hold the first ``n`` words (sqlglot makes one token of some pairs)."""
    taken, words = 0, 0
    while taken < len(tokens) and words < n:
        words += len(keys_of(tokens[taken]))
        taken += 1
    return tokens[:taken]


def set_value(cursor: DefinitionCursor) -> tuple[str, str] | None:
    """``SET key = value``: the value is the rest of the statement, unquoted. ``SET key``,
    ``SET`` and ``SET -v`` only show settings in Spark SQL: in a pipeline they set nothing
    (None), as on the known platform, whose notebooks write ``SET key;`` to show one."""
    body = cursor.source[cursor.offset() : cursor.end] if not cursor.at_end() else ""
    key, eq, value = body.partition("=")
    key, value = key.strip().strip("`"), value.strip()
    if not eq and len(key.split()) <= 1:
        return None
    if not eq or not key:
        raise cursor.error(
            "SET is written SET key = value (or SET key, which only shows the setting)."
        )
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return key, value


def parse_create(
    cursor: DefinitionCursor, origin: Origin, text: str
) -> SqlDataset | SqlFlow | SqlAutoCdc:
    """``CREATE [OR REFRESH | OR REPLACE] [PRIVATE | TEMPORARY] <kind> ...``. ``TEMPORARY``
    on a table is DLT's older spelling of ``PRIVATE``."""
    cursor.expect("CREATE")
    _ = cursor.accept("OR", "REFRESH") or cursor.accept("OR", "REPLACE")
    private = cursor.accept("PRIVATE")
    temporary = cursor.accept("TEMPORARY") or cursor.accept("TEMP")
    if not (private or temporary) and cursor.accept("FLOW"):
        return parse_flow(cursor, origin, text)
    match = next(((keys, kind) for keys, kind in KINDS if cursor.accept(*keys)), None)
    if match is None:
        raise unsupported(cursor)
    keys, kind = match
    if keys == ("VIEW",) and not temporary:
        raise unsupported(
            cursor,
            " A persisted view is not a pipeline dataset: use a TEMPORARY VIEW or a "
            "MATERIALIZED VIEW.",
        )
    private = private or (temporary and kind != "temporary_view")
    return parse_dataset(cursor, kind, private, origin, text)


def parse_dataset(
    cursor: DefinitionCursor, kind: DatasetKind, private: bool, origin: Origin, text: str
) -> SqlDataset:
    """The name, then ``(...)``, PARTITIONED BY, CLUSTER BY, COMMENT, TBLPROPERTIES in any
    order, then ``AS query`` (required except for a streaming table)."""
    name = cursor.name("the name of the dataset")
    fields: dict[str, Any] = {}
    query: SqlQuery | None = None
    while not cursor.at_end():
        if cursor.accept("AS"):
            if cursor.at_end():
                raise cursor.error("Expected a query after AS.")
            query = query_from_tokens(cursor.source, cursor.remaining(), cursor.file)
            break
        clause = next((c for c in DATASET_CLAUSES if cursor.at(*c.split())), None)
        if clause is None:
            raise cursor.error(
                f"Unexpected {cursor.found()} in the definition of {name.text}: expected a "
                "(columns and constraints) list, PARTITIONED BY, CLUSTER BY, COMMENT, "
                "TBLPROPERTIES, REFRESH POLICY or AS followed by the query."
            )
        if clause == "LOCATION":
            raise cursor.refuse(
                "LOCATION is not allowed: a pipeline manages where its tables are stored "
                "(the spec's catalog, database and storage). Remove the clause.",
                UNSUPPORTED_CLAUSE,
            )
        if clause in fields:
            shown = "The (columns and constraints) list" if clause == "(" else clause
            raise cursor.error(f"{shown} is given twice in the definition of {name.text}.")
        if kind == "temporary_view" and clause in ("PARTITIONED BY", "CLUSTER BY", "TBLPROPERTIES"):
            raise cursor.refuse(
                f"{clause} does not apply to a temporary view: it is not stored.",
                UNSUPPORTED_CLAUSE,
            )
        if clause == "REFRESH POLICY" and kind != "materialized_view":
            raise cursor.refuse(
                "REFRESH POLICY applies to a materialized view only.", UNSUPPORTED_CLAUSE
            )
        if clause != "(":  # the list reads its own parenthesis
            cursor.accept(*clause.split())
        fields[clause] = dataset_clause(cursor, clause)
    if query is None and kind != "streaming_table":
        raise cursor.error(f"{name.text} needs a query: add AS SELECT ... at the end.")
    schema, expectations = fields.get("(", (None, ()))
    dataset = Dataset(
        name.text,
        kind,
        origin,
        comment=fields.get("COMMENT"),
        table_properties=fields.get("TBLPROPERTIES", {}),
        partition_cols=fields.get("PARTITIONED BY", ()),
        cluster_by=fields.get("CLUSTER BY", ()),
        schema=schema,
        private=private,
        expectations=expectations,
        refresh_policy=fields.get("REFRESH POLICY", RefreshPolicy.AUTO),
    )
    return SqlDataset(dataset, query, text)


DATASET_CLAUSES = (
    "(",
    "PARTITIONED BY",
    "CLUSTER BY",
    "COMMENT",
    "TBLPROPERTIES",
    "REFRESH POLICY",
    "LOCATION",
)
POLICIES = (("INCREMENTAL", "STRICT"), ("INCREMENTAL",), ("AUTO",), ("FULL",))


def dataset_clause(cursor: DefinitionCursor, clause: str) -> Any:
    """The value of one clause of a dataset definition, the cursor after it."""
    if clause == "(":
        return columns_and_constraints(cursor)
    if clause == "COMMENT":
        return cursor.string("the comment")
    if clause == "TBLPROPERTIES":
        return table_properties(cursor)
    if clause == "REFRESH POLICY":
        for words in POLICIES:
            if cursor.accept(*words):
                return RefreshPolicy.parse(" ".join(words))
        raise cursor.error(
            f"Expected AUTO, INCREMENTAL, INCREMENTAL STRICT or FULL after REFRESH POLICY, "
            f"found {cursor.found()}."
        )
    return cursor.names(cursor.group(), "a column")


def columns_and_constraints(cursor: DefinitionCursor) -> tuple[str | None, tuple[Expectation, ...]]:
    """``(col TYPE ..., CONSTRAINT name EXPECT (expr) [ON VIOLATION ...], ...)``: column
    definitions as DDL text (comma-joined as written), constraints as expectations."""
    columns: list[str] = []
    expectations: list[Expectation] = []
    lines: dict[str, int] = {}
    for item in cursor.items(cursor.group()):
        if key_of(item[0]) != "CONSTRAINT":
            columns.append(cursor.text(item))
            continue
        expectation = constraint(cursor.sub(item))
        line = line_col(cursor.source, item[0].start)[0]
        first = lines.setdefault(expectation.name.lower(), line)
        if len(lines) == len(expectations):  # the name was there already
            raise definition_error(
                DUPLICATE_EXPECTATION,
                f"Constraint '{expectation.name}' is defined twice (lines {first} and {line}): "
                "expectation names are unique per dataset.",
                cursor.file,
                cursor.source,
                item[0].start,
            )
        expectations.append(expectation)
    return (", ".join(columns) if columns else None), tuple(expectations)


def constraint(cursor: DefinitionCursor) -> Expectation:
    cursor.expect("CONSTRAINT")
    name = cursor.name("the name of the constraint").plain
    if not cursor.accept("EXPECT"):
        raise cursor.refuse(
            f"Only expectations are supported as constraints (CONSTRAINT {name} EXPECT "
            f"(condition) [ON VIOLATION ...]), found {cursor.found()}.",
            UNSUPPORTED_CLAUSE,
        )
    expression = cursor.expression(cursor.group(), "the condition of the expectation")
    action = "warn"
    if cursor.accept("ON", "VIOLATION"):
        for keys, value in (
            (("DROP", "ROW"), "drop"),
            (("FAIL", "UPDATE"), "fail"),
            (("QUARANTINE",), "quarantine"),
        ):
            if cursor.accept(*keys):
                action = value
                break
        else:
            raise cursor.error(
                f"Expected DROP ROW, FAIL UPDATE or QUARANTINE here, found {cursor.found()}."
            )
    cursor.finish(f"constraint {name}")
    return Expectation(name, expression, action)  # type: ignore[arg-type]


def table_properties(cursor: DefinitionCursor) -> dict[str, str]:
    """``('key' = 'value', a.b = true, ...)``: keys and values as text, unquoted."""
    out: dict[str, str] = {}
    for item in cursor.items(cursor.group()):
        eq = next((i for i, t in enumerate(item) if key_of(t) == "="), None)
        key, value = (item[:eq], item[eq + 1 :]) if eq is not None else (item[:1], item[1:])
        if not key or not value:
            raise cursor.sub(item).error("A table property is written 'key' = 'value'.")
        out[literal(cursor, key)] = literal(cursor, value)
    return out


def literal(cursor: DefinitionCursor, tokens: list[Token]) -> str:
    if len(tokens) == 1 and tokens[0].token_type in STRINGS:
        return tokens[0].text
    return "".join(cursor.text(tokens).split())


def parse_flow(cursor: DefinitionCursor, origin: Origin, text: str) -> SqlFlow | SqlAutoCdc:
    """``FLOW name [COMMENT '...'] AS {INSERT INTO [ONCE] t [BY NAME] query | AUTO CDC ...}``."""
    name = cursor.name("the name of the flow")
    comment = cursor.string("the comment") if cursor.accept("COMMENT") else None
    cursor.expect("AS")
    if cursor.at("AUTO", "CDC", "INTO") or cursor.at("APPLY", "CHANGES", "INTO"):
        return parse_auto_cdc(cursor, name.text, comment, origin, text)
    if not cursor.accept("INSERT"):
        raise cursor.error(
            f"Expected INSERT INTO or AUTO CDC INTO after AS, found {cursor.found()}."
        )
    once = cursor.accept("ONCE")
    cursor.expect("INTO")
    once = (cursor.at("ONCE") and not cursor.at("ONCE", "BY") and cursor.accept("ONCE")) or once
    target = cursor.name("the target of the flow")
    # BY NAME is what the platform's reference writes; its earlier examples and Spark's
    # guide leave it out. Either way a flow appends by name, as every flow does.
    by_name = cursor.accept("BY", "NAME")
    if cursor.at_end():
        raise cursor.error(
            f"Expected the flow's query after {'BY NAME' if by_name else target.text}."
        )
    query = query_from_tokens(cursor.source, cursor.remaining(), cursor.file)
    return SqlFlow(name.text, target.text, query, origin, text, once, comment)


def parse_auto_cdc(
    cursor: DefinitionCursor, name: str | None, comment: str | None, origin: Origin, text: str
) -> SqlAutoCdc:
    """``{AUTO CDC | APPLY CHANGES} INTO t FROM [STREAM] s [WHERE c] KEYS (...) ...``, the
    clauses after the source in any order. Without a flow name the flow is named after t."""
    _ = cursor.accept("AUTO", "CDC", "INTO") or cursor.accept("APPLY", "CHANGES", "INTO")
    target = cursor.name("the target table")
    cursor.expect("FROM")
    streaming = cursor.accept("STREAM")
    if streaming and cursor.at("("):
        inner = cursor.sub(cursor.group())
        source = inner.name("the source")
        inner.finish("the source")
    else:
        source = cursor.name("the source")
    args: dict[str, Any] = {}
    if cursor.accept("WHERE"):
        args["where"] = cursor.expression(cursor.until(CDC_CLAUSES), "a condition")
    while not cursor.at_end():
        clause = next((c for c in CDC_CLAUSES if cursor.at(*c)), None)
        if clause is None:
            raise cursor.error(
                f"Unexpected {cursor.found()}: expected KEYS, IGNORE NULL UPDATES, APPLY AS "
                "DELETE WHEN, APPLY AS TRUNCATE WHEN, SEQUENCE BY, COLUMNS, STORED AS SCD "
                "TYPE, TRACK HISTORY ON or UNAVAILABLE COLUMNS IN."
            )
        words = " ".join(clause)
        field_name, value = CDC_FIELDS[words], None
        if field_name in args or words in args:
            raise cursor.error(f"{words} is given twice.")
        cursor.accept(*clause)
        value = cdc_clause(cursor, words)
        if isinstance(field_name, tuple):  # a (columns, except columns) pair
            args[words] = True
            args.update(zip(field_name, value, strict=True))
        else:
            args[field_name] = value
    for required, field_name in (("KEYS", "keys"), ("SEQUENCE BY", "sequence_by")):
        if field_name not in args:
            raise cursor.error(f"AUTO CDC INTO {target.text} needs {required}.")
    args = {k: v for k, v in args.items() if k.islower()}
    return SqlAutoCdc(
        name=name or target.text,
        target=target.text,
        source_streaming=streaming,
        origin=origin,
        text=text,
        changes=AutoCdc(source=source.text, **args),
        comment=comment,
    )


CDC_FIELDS: dict[str, str | tuple[str, str]] = {
    "KEYS": "keys",
    "IGNORE NULL UPDATES": "ignore_null_updates",
    "APPLY AS DELETE WHEN": "apply_as_deletes",
    "APPLY AS TRUNCATE WHEN": "apply_as_truncates",
    "SEQUENCE BY": "sequence_by",
    "COLUMNS": ("column_list", "except_column_list"),
    "STORED AS SCD TYPE": "scd_type",
    "TRACK HISTORY ON": ("track_history_column_list", "track_history_except_column_list"),
    "UNAVAILABLE COLUMNS IN": "unavailable_columns",
}


def cdc_clause(cursor: DefinitionCursor, clause: str) -> Any:
    if clause == "KEYS":
        return cursor.names(cursor.group(), "a key column")
    if clause == "IGNORE NULL UPDATES":
        return True
    if clause == "STORED AS SCD TYPE":
        if not (cursor.accept("1") or cursor.accept("2")):
            raise cursor.error(f"Expected SCD TYPE 1 or 2, found {cursor.found()}.")
        return int(cursor.toks[cursor.i - 1].text)
    if clause in ("COLUMNS", "TRACK HISTORY ON"):
        return column_selection(cursor)
    if clause == "UNAVAILABLE COLUMNS IN":  # one column: the event's ARRAY<STRING> of names
        sub = cursor.sub(cursor.until(CDC_CLAUSES))
        found = sub.name("the column naming the unavailable columns").plain
        sub.finish("the column naming the unavailable columns")
        return found
    return cursor.expression(cursor.until(CDC_CLAUSES), "an expression")


def column_selection(
    cursor: DefinitionCursor,
) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None]:
    """``a, b`` / ``(a, b)`` -> (columns, None); ``* EXCEPT (a, b)`` -> (None, columns)."""
    if cursor.accept("*"):
        cursor.expect("EXCEPT")
        return None, cursor.names(cursor.group(), "a column")
    tokens = cursor.group() if cursor.at("(") else cursor.until(CDC_CLAUSES)
    if not tokens:
        raise cursor.error(f"Expected a list of columns, found {cursor.found()}.")
    return cursor.names(tokens, "a column"), None
