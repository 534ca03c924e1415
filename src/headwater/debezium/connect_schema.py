"""Kafka Connect schemas, as Debezium's JSON converter writes them into each message
(``value.converter.schemas.enable=true``), turned into the Spark type of each column and
the way its JSON value is decoded. Spark-free: the Spark expressions are built from these
plans by :mod:`headwater.debezium.changes`.

A column's *encoding* names how Debezium wrote its value: a Connect logical type
(``org.apache.kafka.connect.data.Decimal``: base64 bytes of the unscaled integer, the scale
in the schema), one of Debezium's (``io.debezium.time.MicroTimestamp``: microseconds since
the epoch of a wall-clock time; ``io.debezium.data.VariableScaleDecimal``: a struct of a
scale and the bytes; ...), or a plain Connect type.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from headwater.errors import OptionError

DECIMAL = "org.apache.kafka.connect.data.Decimal"
VARIABLE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
# Spark's widest decimal; PostgreSQL's NUMERIC without a precision is read as Spark's JDBC
# source reads it.
MAX_PRECISION = 38
VARIABLE_SCALE = 18

# Debezium's logical types -> (Spark type, encoding); the encoding names the decoder.
LOGICAL = {
    "io.debezium.time.Date": ("DATE", "days"),
    "org.apache.kafka.connect.data.Date": ("DATE", "days"),
    "io.debezium.time.Timestamp": ("TIMESTAMP_NTZ", "millis"),
    "org.apache.kafka.connect.data.Timestamp": ("TIMESTAMP_NTZ", "millis"),
    "io.debezium.time.MicroTimestamp": ("TIMESTAMP_NTZ", "micros"),
    "io.debezium.time.NanoTimestamp": ("TIMESTAMP_NTZ", "nanos"),
    "io.debezium.time.ZonedTimestamp": ("TIMESTAMP", "iso_timestamp"),
    "io.debezium.time.Time": ("STRING", "time_millis"),
    "org.apache.kafka.connect.data.Time": ("STRING", "time_millis"),
    "io.debezium.time.MicroTime": ("STRING", "time_micros"),
    "io.debezium.time.NanoTime": ("STRING", "time_nanos"),
    "io.debezium.time.ZonedTime": ("STRING", "text"),
    "io.debezium.data.Json": ("STRING", "text"),
    "io.debezium.data.Uuid": ("STRING", "text"),
    "io.debezium.data.Enum": ("STRING", "text"),
    "io.debezium.data.Xml": ("STRING", "text"),
    "io.debezium.data.Bits": ("BINARY", "base64"),
}
PLAIN = {
    "int8": "TINYINT",
    "int16": "SMALLINT",
    "int32": "INT",
    "int64": "BIGINT",
    "float32": "FLOAT",
    "float64": "DOUBLE",
    "float": "FLOAT",  # the JSON converter's names of float32 / float64
    "double": "DOUBLE",
    "boolean": "BOOLEAN",
    "string": "STRING",
}
# Debezium's decimal.handling.mode and time.precision.mode, for messages without a schema.
DECIMAL_MODES = ("precise", "double", "string")
TIME_MODES = ("adaptive", "adaptive_time_microseconds", "connect")


@dataclass(frozen=True)
class ColumnPlan:
    """One column of the row image: its name, Spark type (DDL) and encoding; ``scale``
    for a fixed-scale decimal in bytes."""

    name: str
    spark_type: str
    encoding: str
    scale: int = 0


def column_plan(field: Mapping) -> ColumnPlan:
    """The plan of one field of a Connect struct schema."""
    name, kind, logical = field["field"], field.get("type"), field.get("name")
    params = field.get("parameters") or {}
    if logical == DECIMAL:
        scale = int(params.get("scale", 0))
        precision = int(params.get("connect.decimal.precision", MAX_PRECISION))
        precision = min(max(precision, scale, 1), MAX_PRECISION)
        return ColumnPlan(name, f"DECIMAL({precision},{scale})", "decimal_bytes", scale)
    if logical == VARIABLE_DECIMAL:
        return ColumnPlan(name, f"DECIMAL({MAX_PRECISION},{VARIABLE_SCALE})", "decimal_struct")
    if logical in LOGICAL:
        spark_type, encoding = LOGICAL[logical]
        return ColumnPlan(name, spark_type, encoding)
    if kind in PLAIN:
        return ColumnPlan(name, PLAIN[kind], "json")
    if kind == "bytes":
        return ColumnPlan(name, "BINARY", "base64")
    if kind == "array":
        return ColumnPlan(name, f"ARRAY<{element_type(field['items'])}>", "json")
    if kind == "map":
        key, value = element_type(field["keys"]), element_type(field["values"])
        return ColumnPlan(name, f"MAP<{key}, {value}>", "json")
    if kind == "struct":
        inner = ", ".join(f"`{f['field']}`: {element_type(f)}" for f in field["fields"])
        return ColumnPlan(name, f"STRUCT<{inner}>", "json")
    return ColumnPlan(name, "STRING", "text")


def element_type(schema: Mapping) -> str:
    """The Spark type of a nested value, read from its JSON as it is (logical types of
    nested values are not decoded)."""
    kind = schema.get("type")
    if kind in PLAIN:
        return PLAIN[kind]
    if kind == "array":
        return f"ARRAY<{element_type(schema['items'])}>"
    return "STRING"


def row_fields(value_schema: Mapping) -> list[Mapping]:
    """The fields of the row image (the ``after`` struct, else ``before``) of a Debezium
    change event's value schema."""
    for part in ("after", "before"):
        for field in value_schema.get("fields", []):
            if field.get("field") == part and field.get("type") == "struct":
                return list(field["fields"])
    raise OptionError(
        "not a Debezium change event schema (no 'after' or 'before' struct): is the topic "
        "a Debezium connector's, with value.converter.schemas.enable=true?"
    )


def merged_plans(schema_texts: Iterable[str]) -> list[ColumnPlan]:
    """The columns of every row schema the topic holds, in order of first appearance (a
    column added to the table comes after the others), the newest type of each winning:
    ``schema_texts`` oldest first."""
    plans: dict[str, ColumnPlan] = {}
    for text in schema_texts:
        for field in row_fields(json.loads(text)):
            plans[field["field"]] = column_plan(field)
    return list(plans.values())


def ddl_plans(
    ddl_fields: Iterable[tuple[str, str]],
    decimal_handling_mode: str = "precise",
    time_precision_mode: str = "adaptive",
    millis_columns: Iterable[str] = (),
) -> list[ColumnPlan]:
    """Plans for messages without a schema, from the user's Spark types (``schema=``) and
    the connector's modes: a DECIMAL is base64 bytes (``precise``, its scale from the DDL),
    a number (``double``) or a string (``string``), or a scale/value struct when the
    database column has no scale (any mode reads it); TIMESTAMP_NTZ/DATE/STRING hold
    microseconds/days/text (``adaptive``: PostgreSQL's ``timestamp`` and ``time``) or
    milliseconds (``connect``, and under ``adaptive`` the columns of ``millis_columns``:
    PostgreSQL's ``timestamp(0..3)``, ``time(0..3)``); TIMESTAMP is Debezium's ISO text of
    a ``timestamptz``. A ``time`` column is declared BIGINT (its count of microseconds), or
    STRING in ``millis_columns`` (milliseconds, shown as text)."""
    if decimal_handling_mode not in DECIMAL_MODES:
        raise OptionError(f"decimal_handling_mode must be one of {', '.join(DECIMAL_MODES)}, "
                          f"as the connector's decimal.handling.mode; got {decimal_handling_mode!r}")  # fmt: skip
    if time_precision_mode not in TIME_MODES:
        raise OptionError(f"time_precision_mode must be one of {', '.join(TIME_MODES)}, as "
                          f"the connector's time.precision.mode; got {time_precision_mode!r}")  # fmt: skip
    in_millis = set(millis_columns)
    plans = []
    for name, spark_type in ddl_fields:
        upper = spark_type.upper()
        millis = time_precision_mode == "connect" or name in in_millis
        if upper.startswith("DECIMAL"):
            scale = int(upper.split(",")[1].rstrip(")").strip()) if "," in upper else 0
            encoding = {"precise": "decimal_any", "double": "json", "string": "json"}
            plans.append(ColumnPlan(name, spark_type, encoding[decimal_handling_mode], scale))
        elif upper == "TIMESTAMP_NTZ":
            plans.append(ColumnPlan(name, spark_type, "millis" if millis else "micros"))
        elif upper == "TIMESTAMP":
            plans.append(ColumnPlan(name, spark_type, "iso_timestamp"))
        elif upper == "DATE":
            plans.append(ColumnPlan(name, spark_type, "days"))
        elif upper == "BINARY":
            plans.append(ColumnPlan(name, spark_type, "base64"))
        elif upper == "STRING" and name in in_millis:
            plans.append(ColumnPlan(name, spark_type, "time_millis"))
        elif upper == "STRING":
            plans.append(ColumnPlan(name, spark_type, "text"))
        else:
            plans.append(ColumnPlan(name, spark_type, "json"))
    return plans
