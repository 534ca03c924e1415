"""AUTO CDC definitions: the arguments users pass, checked against the source's columns.

``create_auto_cdc_flow`` / ``apply_changes`` (and SQL ``AUTO CDC INTO`` / ``APPLY CHANGES
INTO``) arrive here as an :class:`~headwater.pipelines.define.elements.AutoCdc`; when the graph is
analysed, :func:`resolve` turns it and the source's schema into a :class:`CdcPlan` — the
columns the target has and the ones whose change opens a new version — or a named error
naming the argument, before any data moves. Applying events is :mod:`.apply`'s job.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    StringType,
    StructField,
    StructType,
)

from headwater.adapter.resolution import current
from headwater.errors import PipelineDefinitionError
from headwater.pipelines.define.elements import AutoCdc, Flow, Origin

START_AT = "__START_AT"
END_AT = "__END_AT"
TOMBSTONE_RETENTION = "pipelines.cdc.tombstoneGCThresholdInSeconds"
DEFAULT_TOMBSTONE_SECONDS = 2 * 24 * 3600
# A Delta table's change data feed (readChangeFeed, Spark's changes()): its columns
CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP = (
    "_change_type",
    "_commit_version",
    "_commit_timestamp",
)
FEED_COLUMNS = (CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP)


@dataclass(frozen=True)
class CdcPlan:
    """An AUTO CDC flow resolved against its source: ``columns`` are the target's data
    columns (keys included, source order), ``tracked`` the non-key columns whose change
    opens a new SCD2 version (the others are updated in place)."""

    spec: AutoCdc
    keys: tuple[str, ...]
    columns: tuple[str, ...]
    tracked: tuple[str, ...]
    sequence_type: DataType
    schema: StructType  # the target's
    sequence_column: str | None = None  # the target's column sequence_by names, if any
    unavailable: str | None = None  # the source's column unavailable_columns names
    change_feed: bool = False  # the source is a Delta table's change feed

    @property
    def data(self) -> tuple[str, ...]:
        """The target's non-key columns."""
        return tuple(c for c in self.columns if c not in self.keys)

    @property
    def scd2(self) -> bool:
        return self.spec.scd_type == 2


def expression(spec: AutoCdc, name: str) -> Column | None:
    """The Column of one of the spec's expressions (``sequence_by``, ``where``...)."""
    given = spec.columns.get(name)
    if given is not None:
        return given
    text = getattr(spec, name)
    return F.expr(text) if text else None


def resolve(spark: SparkSession, spec: AutoCdc, source: StructType, origin: Origin) -> CdcPlan:
    """Check ``spec`` against the source's columns; the plan, or a named error."""

    def fail(code: str, message: str) -> PipelineDefinitionError:
        return PipelineDefinitionError(
            f"[{code}] AUTO CDC from '{spec.source}': {message}", origin.file, origin.line
        )

    by_name = {f.name.lower(): f for f in source.fields}
    have = ", ".join(source.fieldNames())

    def named(names: Iterable[str], argument: str) -> list[str]:
        found = []
        for n in names:
            field = by_name.get(n.strip("`").lower())
            if field is None:
                raise fail(
                    "PIPELINE_AUTO_CDC_UNKNOWN_COLUMN",
                    f"{argument} names '{n}', which the source does not have (its columns: "
                    f"{have}).",
                )
            found.append(field.name)
        return found

    if spec.scd_type not in (1, 2):
        raise fail("PIPELINE_AUTO_CDC_INVALID", "stored_as_scd_type must be 1 or 2.")
    if not spec.keys:
        raise fail("PIPELINE_AUTO_CDC_INVALID", "keys must name at least one column.")
    keys = named(spec.keys, "keys")
    if spec.column_list is not None and spec.except_column_list is not None:
        raise fail("PIPELINE_AUTO_CDC_INVALID", "give column_list or except_column_list, not both.")
    if spec.scd_type == 1 and (
        spec.track_history_column_list is not None
        or spec.track_history_except_column_list is not None
    ):
        raise fail(
            "PIPELINE_AUTO_CDC_INVALID",
            "track_history_column_list / track_history_except_column_list apply to "
            "stored_as_scd_type=2 only.",
        )
    if spec.scd_type == 2 and spec.apply_as_truncates:
        raise fail(
            "PIPELINE_AUTO_CDC_INVALID",
            "apply_as_truncates applies to SCD type 1 only (a truncate has no place in a history).",
        )
    unavailable = None
    if spec.unavailable_columns is not None:
        unavailable = named([spec.unavailable_columns], "unavailable_columns")[0]
        found_type = source[unavailable].dataType
        if found_type != ArrayType(StringType(), True) and found_type != ArrayType(StringType()):
            raise fail(
                "PIPELINE_AUTO_CDC_INVALID",
                f"unavailable_columns names '{unavailable}', of type "
                f"{found_type.simpleString()}: it must be an ARRAY<STRING> of column names.",
            )
    if spec.column_list is not None:
        columns = named(spec.column_list, "column_list")
    else:
        dropped = {c.lower() for c in named(spec.except_column_list or (), "except_column_list")}
        columns = [f.name for f in source.fields if f.name.lower() not in dropped]
    columns = [c for c in columns if c != unavailable]  # the events' own, never the target's
    change_feed = {CHANGE_TYPE, COMMIT_VERSION} <= set(by_name)
    if change_feed and spec.column_list is None:  # the feed's own columns stay out
        columns = [c for c in columns if c.lower() not in FEED_COLUMNS]
    missing = [k for k in keys if k not in columns]
    if missing:
        raise fail(
            "PIPELINE_AUTO_CDC_INVALID",
            f"the key column(s) {', '.join(missing)} must be among the target's columns.",
        )
    reserved = [c for c in columns if c.upper() in (START_AT, END_AT)]
    if reserved:
        raise fail("PIPELINE_AUTO_CDC_INVALID", f"the source has a column named {reserved[0]}.")
    data = [c for c in columns if c not in keys]
    if spec.track_history_column_list is not None:
        tracked = named(spec.track_history_column_list, "track_history_column_list")
    else:
        skipped = named(spec.track_history_except_column_list or (), "track_history_except")
        tracked = [c for c in data if c not in skipped]
    tracked = [c for c in data if c in tracked]

    empty = spark.createDataFrame([], source)
    types: dict[str, DataType] = {}
    for argument in ("sequence_by", "where", "apply_as_deletes", "apply_as_truncates"):
        column = expression(spec, argument)
        if column is None:
            continue
        try:
            types[argument] = empty.select(column.alias("x")).schema[0].dataType
        except AnalysisException as e:
            first = str(e).strip().splitlines()[0]
            raise fail(
                "PIPELINE_AUTO_CDC_INVALID",
                f"{argument} ({getattr(spec, argument)}) is not valid over the source's "
                f"columns ({have}): {first}",
            ) from None
        if argument != "sequence_by" and not isinstance(types[argument], BooleanType):
            raise fail(
                "PIPELINE_AUTO_CDC_INVALID",
                f"{argument} ({getattr(spec, argument)}) must be a boolean condition, not "
                f"{types[argument].simpleString()}.",
            )
    fields = [source[c] for c in columns]
    schema = StructType([StructField(f.name, f.dataType, True) for f in fields])
    if spec.scd_type == 2:
        schema = schema.add(START_AT, types["sequence_by"]).add(END_AT, types["sequence_by"])
    named_sequence = spec.sequence_by.strip().strip("`").lower()
    if "sequence_by" in spec.columns:  # a Column: the column it is, if it is one as it is
        named_sequence = (column_named(empty, spec.columns["sequence_by"]) or "").lower()
    sequence_column = next((c for c in columns if c.lower() == named_sequence), None)
    return CdcPlan(
        spec,
        tuple(keys),
        tuple(columns),
        tuple(tracked),
        types["sequence_by"],
        schema,
        sequence_column,
        unavailable,
        change_feed,
    )


def column_named(rows: DataFrame, column: Column) -> str | None:
    """The column of ``rows`` that ``column`` is, as it is (``col("seq")``), or None for
    an expression (a cast, a field, a literal whose text reads like a name). Its text
    cannot tell: ``lit("seq")`` reads ``seq`` too; Spark's analysis of it can. A
    ``sequence_by`` naming a column the target keeps lets SCD1 keep tombstones only."""
    try:
        analysed = rows.select(column)._jdf.queryExecution().analyzed()
        found = analysed.projectList().head()
        if found.getClass().getSimpleName() != "AttributeReference":
            return None
        return str(found.name())
    except Exception:  # a plan of another shape: an expression, as before
        return None


def tombstone_seconds(properties: Mapping[str, str]) -> int:
    """How long SCD1 keeps a deleted key's tombstone (so older late upserts stay ignored):
    the target's table property ``pipelines.cdc.tombstoneGCThresholdInSeconds``."""
    value = properties.get(TOMBSTONE_RETENTION)
    try:
        return int(value) if value is not None else DEFAULT_TOMBSTONE_SECONDS
    except ValueError:
        raise PipelineDefinitionError(
            f"Table property {TOMBSTONE_RETENTION} must be a number of seconds, not '{value}'."
        ) from None


def is_connect(value: Any) -> bool:
    """A Spark Connect Column (SDP builds them from strings), which a classic session
    cannot use. (A classic Column answers any attribute with a nested field.)"""
    return type(value).__module__.startswith("pyspark.sql.connect")


def sql_text(value: Any) -> str:
    """A Column's SQL text, for the event log and for Spark Connect Columns."""
    if is_connect(value):
        expr = value._expr
        for attribute in ("_unparsed_identifier", "_expr"):
            text = getattr(expr, attribute, None)
            if isinstance(text, str):
                return text
        return str(expr)
    if isinstance(value, Column):
        text = str(value)
        return text[len("Column<'") : -2] if text.startswith("Column<'") else text
    return str(value)


def names_of(values: Any, argument: str) -> tuple[str, ...] | None:
    """A column-list argument (names, Columns or one of them) as names."""
    if values is None:
        return None
    if isinstance(values, (str, Column)) or is_connect(values):
        values = [values]
    out = []
    for v in values:
        if not isinstance(v, (str, Column)) and not is_connect(v):
            raise TypeError(f"{argument} takes column names or Columns, not {type(v).__name__}.")
        out.append(v if isinstance(v, str) else sql_text(v))
    return tuple(out)


def unavailable_name(value: Any) -> str | None:
    """``unavailable_columns``: one column's name (or a Column naming it)."""
    names = names_of(value, "unavailable_columns")
    if names is None:
        return None
    if len(names) != 1:
        raise TypeError("unavailable_columns takes one column (an ARRAY<STRING> of names).")
    return names[0]


def auto_cdc(
    source: str,
    keys: Any,
    sequence_by: Any,
    where: Any = None,
    ignore_null_updates: bool = False,
    apply_as_deletes: Any = None,
    apply_as_truncates: Any = None,
    column_list: Any = None,
    except_column_list: Any = None,
    stored_as_scd_type: Any = 1,
    track_history_column_list: Any = None,
    track_history_except_column_list: Any = None,
    unavailable_columns: Any = None,
) -> AutoCdc:
    """The spec of the arguments of ``create_auto_cdc_flow`` / ``apply_changes``:
    expressions as SQL text or Columns (classic Columns are kept and used as given)."""
    if not isinstance(source, str) or not source:
        raise TypeError("source must be the name of a dataset or table (a string).")
    scd = str(stored_as_scd_type if stored_as_scd_type is not None else 1).strip()
    if scd not in ("1", "2"):
        raise ValueError(f"stored_as_scd_type must be 1 or 2, not {stored_as_scd_type!r}.")
    texts: dict[str, str | None] = {}
    columns: dict[str, Column] = {}
    for argument, value in (
        ("sequence_by", sequence_by),
        ("where", where),
        ("apply_as_deletes", apply_as_deletes),
        ("apply_as_truncates", apply_as_truncates),
    ):
        if value is None:
            texts[argument] = None
        elif isinstance(value, str):
            texts[argument] = value
        elif is_connect(value):  # its SQL text
            texts[argument] = sql_text(value)
        elif isinstance(value, Column):
            texts[argument] = sql_text(value)
            columns[argument] = value
        else:
            raise TypeError(f"{argument} takes a SQL expression or a Column.")
    if texts["sequence_by"] is None:
        raise ValueError("sequence_by is required: the column or expression ordering events.")
    return AutoCdc(
        source=source,
        keys=names_of(keys, "keys") or (),
        sequence_by=texts["sequence_by"],
        where=texts["where"],
        ignore_null_updates=bool(ignore_null_updates),
        apply_as_deletes=texts["apply_as_deletes"],
        apply_as_truncates=texts["apply_as_truncates"],
        column_list=names_of(column_list, "column_list"),
        except_column_list=names_of(except_column_list, "except_column_list"),
        scd_type=int(scd),
        track_history_column_list=names_of(track_history_column_list, "track_history"),
        track_history_except_column_list=names_of(
            track_history_except_column_list, "track_history_except_column_list"
        ),
        unavailable_columns=unavailable_name(unavailable_columns),
        columns=columns,
    )


def cdc_flow(
    target: str,
    spec: AutoCdc,
    origin: Origin,
    name: str | None = None,
    spark_conf: Mapping[str, str] | None = None,
    once: bool = False,
) -> Flow:
    """The flow of an AUTO CDC definition: a stream of ``spec.source``'s events."""

    def events() -> DataFrame:
        spark = getattr(current(), "spark", None) or SparkSession.getActiveSession()
        if spark is None:
            raise PipelineDefinitionError("AUTO CDC flows need an active SparkSession.")
        if spec.snapshot_function is not None:  # its first snapshot gives the columns
            first = spec.snapshot_function(None)
            if first is None:
                raise PipelineDefinitionError(
                    f"[PIPELINE_AUTO_CDC_NO_SNAPSHOT] The snapshot function of the flow into "
                    f"'{target}' returned None for the first snapshot: return the first one "
                    "(its columns are the target's).",
                    origin.file,
                    origin.line,
                )
            return first[0]
        if spec.from_snapshot:
            return spark.read.table(spec.source)
        return spark.readStream.table(spec.source)

    return Flow(
        name or target,
        target,
        events,
        origin,
        spark_conf=dict(spark_conf or {}),
        once=once,
        implicit=name is None or name == target,
        auto_cdc=spec,
    )


def snapshot_cdc(
    source: Any,
    keys: Any,
    stored_as_scd_type: Any = 1,
    track_history_column_list: Any = None,
    track_history_except_column_list: Any = None,
) -> AutoCdc:
    """The spec of ``create_auto_cdc_from_snapshot_flow``: ``source`` is a table's name,
    or a function ``next_snapshot_and_version(latest_version)``."""
    function = None if isinstance(source, str) else source
    if function is not None and not callable(function):
        raise TypeError(
            "source takes a table name or a function next_snapshot_and_version(version) "
            "returning (DataFrame, version) or None."
        )
    name = source if isinstance(source, str) else getattr(function, "__name__", "snapshots")
    spec = auto_cdc(
        name,
        keys,
        "1",
        stored_as_scd_type=stored_as_scd_type,
        track_history_column_list=track_history_column_list,
        track_history_except_column_list=track_history_except_column_list,
    )
    return replace(spec, from_snapshot=True, snapshot_function=function)
