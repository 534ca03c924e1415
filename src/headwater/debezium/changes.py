"""Debezium change events read from Kafka as one flat row per change, the shape AUTO CDC
takes: the table's columns (the row image: ``after``, or ``before`` for a delete), then
``_op`` ('r' snapshot read, 'c', 'u', 'd', 't' truncate), ``_sequence`` (the order of a
key's changes), ``_unavailable`` (the columns Debezium did not send) and ``_ts_ms``.

Decoding is Spark column expressions (no Python over rows): each message's JSON is parsed
once, every row column as its raw JSON text, then decoded by the plan of
:mod:`headwater.debezium.connect_schema` (base64 decimals, epoch micro/milli/nanoseconds,
ISO timestamps...).

``_sequence`` is ``STRUCT<phase INT, lsn BIGINT>``: phase 0 for the snapshot's 'r' events,
1 for streamed changes, then PostgreSQL's log position of the change. Two changes of one
row are in log order (the second writer waits for the first's commit), and the snapshot's
events carry the slot's starting position, which the first streamed change can share or
precede: the phase puts them first. A connector restart re-sends events with the same
position, so AUTO CDC applies them once.

Messages with a schema (``value.converter.schemas.enable=true``) give the types: the row
schemas the topic holds are merged (a column added in the database is a new column). A
stream's columns are fixed when it starts, so a message whose schema the stream has not
seen fails it with ``[DEBEZIUM_SCHEMA_CHANGED]``; started again, the stream reads the new
schema from the topic, as Auto Loader's ``addNewColumns`` does. Without schemas, the
``schema=`` DDL gives the columns.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from headwater.debezium.connect_schema import ColumnPlan, ddl_plans, merged_plans
from headwater.errors import OptionError

MARKER = "__debezium_unavailable_value"
MARKER_BASE64 = "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="
META = ("_op", "_sequence", "_unavailable", "_ts_ms")
EPOCH = "TIMESTAMP_NTZ'1970-01-01 00:00:00'"
# Kafka options of a stream that a batch read of the same topic does not take.
STREAM_ONLY = {"maxoffsetspertrigger", "minoffsetspertrigger", "maxtriggerdelay",
               "startingoffsets", "endingoffsets", "startingtimestamp",
               "startingoffsetsbytimestamp", "startingoffsetsbytimestampstrategy"}  # fmt: skip


def changes(
    kafka_df: DataFrame,
    schema: str | StructType | None = None,
    decimal_handling_mode: str | None = None,
    time_precision_mode: str | None = None,
    millis_columns: Iterable[str] = (),
) -> DataFrame:
    """The change rows of a Debezium topic read by Spark's Kafka source (``kafka_df``,
    batch or stream). ``schema``: the table's columns (DDL or StructType) when the
    messages carry no schema, decoded as the connector's ``decimal_handling_mode``
    (default ``precise``) and ``time_precision_mode`` (default ``adaptive``) wrote them
    (``millis_columns``: the columns sent in milliseconds under ``adaptive``, PostgreSQL's
    ``timestamp(0..3)``); with schemas in the messages, leave them all out: the types come
    from the messages, and a mode given without ``schema`` is refused rather than ignored."""
    millis_columns = list(millis_columns)
    modes = {
        "decimal_handling_mode": decimal_handling_mode,
        "time_precision_mode": time_precision_mode,
        "millis_columns": millis_columns or None,
    }
    if schema is None and any(v is not None for v in modes.values()):
        given = ", ".join(name for name, value in modes.items() if value is not None)
        raise OptionError(
            f"{given} decode messages without schemas, with schema= (the columns); messages "
            "with schemas give their own types: drop it or give schema="
        )
    if schema is not None:
        decimal_handling_mode = decimal_handling_mode or "precise"
        time_precision_mode = time_precision_mode or "adaptive"
        struct = schema if isinstance(schema, StructType) else StructType.fromDDL(schema)
        assert isinstance(struct, StructType)
        fields = [(f.name, f.dataType.simpleString().upper()) for f in struct.fields]
        return decoded(kafka_df, ddl_plans(fields, decimal_handling_mode, time_precision_mode, millis_columns),
                       with_schema=False, known=None)  # fmt: skip
    texts, hashes = topic_schemas(kafka_df)
    if not texts:
        raise OptionError(
            "the topic holds no Debezium change event with a schema yet: start once the "
            "connector has written its snapshot, or give schema= (a DDL string) when "
            "value.converter.schemas.enable=false"
        )
    known = hashes if kafka_df.isStreaming else None
    return decoded(kafka_df, merged_plans(texts), with_schema=True, known=known)


def read(spark: SparkSession, streaming: bool = True, **options: str) -> DataFrame:
    """The change rows of the Kafka topics ``options`` name (Spark's Kafka source options:
    ``kafka.bootstrap.servers``, ``subscribe``, ``startingOffsets``...); what the SQL
    function ``read_debezium`` returns."""
    reader = spark.readStream if streaming else spark.read
    return changes(reader.format("kafka").options(**options).load())


def topic_schemas(kafka_df: DataFrame) -> tuple[list[str], list[int]]:
    """The distinct value schemas of the topic's messages, oldest first, and their hashes.
    A batch DataFrame is read itself; a stream's topic is read as a batch with the
    stream's options (from its plan)."""
    source = kafka_df
    if kafka_df.isStreaming:
        options = stream_options(kafka_df)
        batch = {k: v for k, v in options.items() if k.lower() not in STREAM_ONLY}
        source = kafka_df.sparkSession.read.format("kafka").options(**batch).load()
    text = F.get_json_object(F.col("value").cast("string"), "$.schema")
    found = (
        source.where(F.col("value").isNotNull())
        .select(text.alias("s"), F.struct("timestamp", "partition", "offset").alias("at"))
        .where(F.col("s").isNotNull())
        .groupBy("s")
        .agg(F.min("at").alias("at"))
        .select("s", F.xxhash64("s").alias("h"), "at")
        .orderBy("at")
        .collect()
    )
    return [row.s for row in found], [row.h for row in found]


def stream_options(kafka_df: DataFrame) -> dict[str, str]:
    """The options of the Kafka source under a streaming DataFrame (its plan's streaming
    relation), to read the same topic as a batch."""
    plan = kafka_df._jdf.queryExecution().analyzed()  # noqa: SLF001
    leaves = plan.collectLeaves()
    for i in range(leaves.size()):
        leaf = leaves.apply(i)
        if leaf.nodeName() == "StreamingRelationV2" and str(leaf.sourceName()) == "kafka":
            return dict(leaf.extraOptions().asCaseSensitiveMap())
    raise OptionError(
        "changes() on a stream reads the topic's schemas with the stream's Kafka options, "
        "and this DataFrame is not a Kafka stream: pass spark.readStream.format('kafka')"
        "...load(), or give schema="
    )


def decoded(
    kafka_df: DataFrame, plans: list[ColumnPlan], with_schema: bool, known: list[int] | None
) -> DataFrame:
    raw = ", ".join(f"`{p.name}`: STRING" for p in plans)
    image = f"STRUCT<{raw}>" if plans else "STRING"
    body = (f"before {image}, after {image}, op STRING, "
            "source STRUCT<lsn: BIGINT, ts_ms: BIGINT>")  # fmt: skip
    inner = (
        body.replace(f"before {image}", f"before: {image}")
        .replace(f"after {image}", f"after: {image}")
        .replace("op STRING", "op: STRING")
        .replace("source STRUCT", "source: STRUCT")
    )
    parse = f"schema STRING, payload STRUCT<{inner}>" if with_schema else body
    text = F.col("value").cast("string")
    df = kafka_df.where(F.col("value").isNotNull()).select(
        F.from_json(text, parse).alias("m"), text.alias("t")
    )
    event = F.col("m.payload") if with_schema else F.col("m")
    df = df.select(event.alias("e"), *([F.col("m.schema").alias("s")] if with_schema else []))
    df = df.where(F.col("e.op").isNotNull())
    if known is not None:
        message = (
            "[DEBEZIUM_SCHEMA_CHANGED] a Debezium change event has a schema this stream "
            "has not seen (a column added or changed in the database): restart the stream, "
            "it reads the new schema from the topic"
        )
        check = F.when(F.xxhash64("s").isin(known), F.lit(True)).otherwise(
            F.raise_error(F.lit(message)).cast("boolean")
        )
        df = df.where(check)
    columns, unavailable = [], []
    for plan in plans:
        value = F.when(F.col("e.op") == "d", F.col(f"e.before.`{plan.name}`")).otherwise(
            F.col(f"e.after.`{plan.name}`")
        )
        missing = value.isin(MARKER, MARKER_BASE64, f'["{MARKER}"]')
        unavailable.append(F.when(missing, F.lit(plan.name)))
        columns.append(F.when(missing, F.lit(None)).otherwise(decode(value, plan)).alias(plan.name))
    sequence = F.struct(
        F.when(F.col("e.op") == "r", 0).otherwise(1).alias("phase"),
        F.col("e.source.lsn").alias("lsn"),
    )
    return df.select(
        *columns,
        F.col("e.op").alias("_op"),
        sequence.alias("_sequence"),
        F.filter(F.array(*unavailable), lambda c: c.isNotNull()).alias("_unavailable")
        if unavailable
        else F.array().cast("array<string>").alias("_unavailable"),
        F.col("e.source.ts_ms").alias("_ts_ms"),
    )


def decode(raw: Column, plan: ColumnPlan) -> Column:
    """The Spark value of one column from its raw JSON text."""
    kind, spark_type = plan.encoding, plan.spark_type
    if kind == "text":
        return raw.cast(spark_type)
    if kind == "json":
        if spark_type.startswith(("ARRAY", "MAP", "STRUCT")):
            return F.from_json(raw, spark_type)
        return raw.cast(spark_type)
    if kind == "base64":
        return F.unbase64(raw)
    if kind == "days":
        return F.date_add(F.lit("1970-01-01").cast("date"), raw.cast("int"))
    if kind in ("millis", "micros", "nanos"):
        return epoch(raw, kind)
    if kind == "iso_timestamp":
        return raw.cast("timestamp")
    if kind.startswith("time_"):
        moment = epoch(raw, kind.removeprefix("time_"))
        return F.date_format(moment, "HH:mm:ss.SSSSSS")
    if kind == "decimal_bytes":
        return bytes_decimal(raw, F.lit(plan.scale)).cast(spark_type)
    if kind == "decimal_struct":
        return struct_decimal(raw).cast(spark_type)
    if kind == "decimal_any":
        fixed = bytes_decimal(raw, F.lit(plan.scale))
        return F.when(raw.startswith("{"), struct_decimal(raw)).otherwise(fixed).cast(spark_type)
    raise AssertionError(f"no decoder for {kind}")


def epoch(raw: Column, unit: str) -> Column:
    """A wall-clock TIMESTAMP_NTZ from a count of ``unit`` since the epoch."""
    count = raw.cast("bigint")
    if unit == "nanos":
        count = F.floor(raw.cast("decimal(20,0)") / 1000).cast("bigint")
    unit = "MILLISECOND" if unit == "millis" else "MICROSECOND"
    return F.timestamp_add(unit, count, F.expr(EPOCH))


def struct_decimal(raw: Column) -> Column:
    """``io.debezium.data.VariableScaleDecimal``: ``{"scale": s, "value": base64}``."""
    scale = F.get_json_object(raw, "$.scale").cast("int")
    return bytes_decimal(F.get_json_object(raw, "$.value"), scale)


def bytes_decimal(encoded: Column, scale: Column) -> Column:
    """The decimal text of base64 bytes holding a big-endian two's-complement unscaled
    integer (Connect's Decimal) at ``scale``; exact for any precision up to 38."""
    hexed = F.hex(F.unbase64(encoded))
    size = (F.length(hexed) / 2).cast("int")
    negative = F.conv(F.substring(hexed, 1, 2), 16, 10).cast("int") >= 128

    def byte(i: Column) -> Column:
        value = F.conv(F.substring(hexed, i * 2 + 1, 2), 16, 10).cast("int")
        return F.when(negative, 255 - value).otherwise(value)

    wide = "decimal(38,0)"
    digits = F.aggregate(
        F.sequence(F.lit(0), F.greatest(size - 1, F.lit(0))),
        F.lit(0).cast(wide),
        lambda acc, i: (acc * 256 + byte(i)).cast(wide),
    )
    unscaled = (
        F.when(size == 0, F.lit(0).cast(wide)).when(negative, -(digits + 1)).otherwise(digits)
    )
    text = F.abs(unscaled).cast("string")
    width = F.greatest(F.length(text), scale + 1)
    padded = F.call_function("lpad", text, width, F.lit("0"))
    whole = F.call_function("substr", padded, F.lit(1), width - scale)
    fraction = F.call_function("substr", padded, width - scale + 1)
    sign = F.when(unscaled < 0, F.lit("-")).otherwise(F.lit(""))
    return F.when(scale <= 0, F.concat(sign, text)).otherwise(
        F.concat(sign, whole, F.lit("."), fraction)
    )
