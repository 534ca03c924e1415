"""``read_kafka``, the known platform's table-valued function over Kafka topics, as its SQL
writes it, in pipeline SQL and in any ``spark.sql``::

    SELECT * FROM STREAM read_kafka(bootstrapServers => 'host:9092', subscribe => 'orders',
                                    startingOffsets => 'earliest')

Its named arguments are the options of Spark's own Kafka source under the platform's names
(``bootstrapServers`` is ``kafka.bootstrap.servers``; the others are spelled as Spark spells
them), plus any ``kafka.``-prefixed consumer setting written in backquotes. The rows are the
source's: ``key`` and ``value`` (binary), ``topic``, ``partition``, ``offset``,
``timestamp``, ``timestampType`` (and ``headers`` with ``includeHeaders``). Under ``STREAM``
it is a streaming read, else a batch read of what the topics hold.

``read_debezium`` takes the same arguments and returns the change rows of Debezium's
topics instead (:func:`headwater.debezium.changes`), with its decoding arguments under
their SQL names: ``schema`` (a DDL string, for messages without schemas),
``decimalHandlingMode``, ``timePrecisionMode``, ``millisColumns`` (comma-separated).

The arguments are checked here, without Spark, so a misspelt or missing option is reported
(in pipeline SQL with the file, line and column, before a session starts). The checked
options become ``spark.readStream.format("kafka")`` in :mod:`headwater.sql.stream_functions`
(``spark.sql``) and :mod:`headwater.pipelines.graph.kafka` (pipelines), which also share the
one line a read fails with when Spark's Kafka connector is missing
(:func:`connector_missing_message`). This module imports nothing of headwater (sqlglot only): pipeline SQL
(:mod:`headwater.pipelines.sql_files.queries`) and ``spark.sql``
(:mod:`headwater.sql.rewrite`) hand it the arguments.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

import pyspark
from sqlglot import exp

FUNCTION = "read_kafka"
# ``read_debezium``: a ``read_kafka`` whose rows are decoded by headwater.debezium.changes;
# it takes the Kafka arguments plus these, named as in SQL (the Python keyword each is).
DEBEZIUM = "read_debezium"
DECODE_OPTIONS: dict[str, str] = {
    "schema": "schema",
    "decimalHandlingMode": "decimal_handling_mode",
    "timePrecisionMode": "time_precision_mode",
    "millisColumns": "millis_columns",
}
DECODE_BY_KEY = {name.lower(): name for name in DECODE_OPTIONS}
BOOTSTRAP = "bootstrapServers"
CONSUMER_PREFIX = "kafka."
STRATEGIES = ("subscribe", "subscribePattern", "assign")
STREAM_ONLY = ("maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay")
BATCH_ONLY = ("endingOffsets", "endingOffsetsByTimestamp", "endingTimestamp")

# The source's options as written in SQL; Spark's name where it differs. Option names are
# matched without regard to case, as Spark matches them.
OPTIONS: dict[str, str] = {
    BOOTSTRAP: "kafka.bootstrap.servers",
    **{name: name for name in STRATEGIES},
    **{
        name: name
        for name in (
            "startingOffsets",
            "startingOffsetsByTimestamp",
            "startingTimestamp",
            "startingOffsetsByTimestampStrategy",
            *BATCH_ONLY,
            *STREAM_ONLY,
            "minPartitions",
            "maxRecordsPerPartition",
            "failOnDataLoss",
            "includeHeaders",
            "groupIdPrefix",
            "kafkaConsumer.pollTimeoutMs",
            "fetchOffset.numRetries",
            "fetchOffset.retryIntervalMs",
        )
    },
}
BY_KEY = {name.lower(): name for name in OPTIONS}

# Spark's condition for format("kafka") without the connector, and the one headwater's
# errors for it carry.
# Spark's condition for format("kafka") without the connector: its name since Spark 4.3,
# and the legacy one Spark 4.2 (the newest the connector is published for) gives it.
SPARK_CONNECTOR_MISSING = frozenset({"KAFKA_DATA_SOURCE_NOT_ENABLED", "_LEGACY_ERROR_TEMP_1140"})
CONNECTOR_MISSING = "KAFKA_CONNECTOR_MISSING"


class KafkaArgumentError(ValueError):
    """A ``read_kafka`` call whose arguments cannot make a Kafka read (one line, naming the
    argument and the fix)."""


@dataclass(frozen=True)
class Argument:
    """One argument as written: its name (None when positional), its value as text when it
    is a literal (strings unquoted, numbers and booleans as written), and its SQL."""

    name: str | None
    literal: str | None
    sql: str


@dataclass(frozen=True)
class KafkaSource:
    """A checked ``read_kafka`` call. ``options``: (Spark's option name, value) for the
    literal arguments; ``expressions``: (Spark's option name, SQL) for arguments given as an
    expression (``secret(...)``, ``concat(...)``), evaluated once by the runner. Hashable:
    it keys ``SqlQuery.render``. ``decode``: for ``read_debezium``, the decoding arguments
    (:data:`DECODE_OPTIONS`' Python names, literal values)."""

    options: tuple[tuple[str, str], ...]
    expressions: tuple[tuple[str, str], ...] = ()
    streaming: bool = False
    function: str = FUNCTION
    decode: tuple[tuple[str, str], ...] = ()

    def option_names(self) -> list[str]:
        return [name for name, _ in (*self.options, *self.expressions)]


def arguments_of(call: exp.Expr, dialect: str) -> list[Argument]:
    """The arguments of a ``read_kafka(...)`` call as sqlglot parsed it (each expression's
    SQL written in ``dialect``)."""
    arguments = []
    for arg in call.expressions:
        if isinstance(arg, (exp.Kwarg, exp.PropertyEQ)):
            value = arg.expression
            arguments.append(Argument(arg.this.name, literal_text(value), value.sql(dialect)))
        else:
            arguments.append(Argument(None, literal_text(arg), arg.sql(dialect)))
    return arguments


def literal_text(node: exp.Expr) -> str | None:
    """A literal's value as text: strings unquoted, numbers and booleans as written."""
    if isinstance(node, exp.Literal):
        return str(node.this)
    if isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        return "-" + str(node.this.this)
    return None


def kafka_source(
    arguments: Sequence[Argument], streaming: bool, function: str = FUNCTION
) -> KafkaSource:
    """The Kafka read of a ``read_kafka`` (or ``read_debezium``) call, or
    :class:`KafkaArgumentError`."""
    options: list[tuple[str, str]] = []
    expressions: list[tuple[str, str]] = []
    decode: list[tuple[str, str]] = []
    seen: dict[str, str] = {}
    for arg in arguments:
        if arg.name is None:
            raise KafkaArgumentError(
                f"arguments are named, as in subscribe => 'orders'; found {arg.sql}."
            )
        if function == DEBEZIUM and arg.name.lower() in DECODE_BY_KEY:
            if arg.name.lower() in seen:
                raise KafkaArgumentError(f"{arg.name} is given twice.")
            seen[arg.name.lower()] = arg.name
            decode.append(decode_argument(arg))
            continue
        option = spark_option(arg.name, function)
        if option.lower() in seen:
            raise KafkaArgumentError(f"{arg.name} is given twice.")
        seen[option.lower()] = arg.name
        if arg.literal is not None:
            options.append((option, arg.literal))
        else:
            expressions.append((option, arg.sql))
    if OPTIONS[BOOTSTRAP] not in seen:
        raise KafkaArgumentError(
            f"{BOOTSTRAP} is required: the brokers to connect to, as in {BOOTSTRAP} => 'host:9092'."
        )
    chosen = [seen[s.lower()] for s in STRATEGIES if s.lower() in seen]
    if len(chosen) != 1:
        found = f"found {', '.join(chosen)}" if chosen else "found none"
        raise KafkaArgumentError(
            f"name the topics with exactly one of {', '.join(STRATEGIES)} ({found})."
        )
    without_schema = [
        seen[n.lower()] for n in DECODE_OPTIONS if n != "schema" and n.lower() in seen
    ]
    if without_schema and "schema" not in seen:
        raise KafkaArgumentError(
            f"{', '.join(without_schema)} decode messages without schemas, with schema => "
            "'<columns>'; messages with schemas give their own types: drop it or add schema."
        )
    wrong = STREAM_ONLY if not streaming else BATCH_ONLY
    for name in wrong:
        if name.lower() in seen:
            where = f"a streaming read (STREAM {function}(...))" if streaming else "a batch read"
            kind = "batch" if streaming else "streaming"
            raise KafkaArgumentError(
                f"{seen[name.lower()]} applies to {kind} reads only, not to {where}."
            )
    return KafkaSource(tuple(options), tuple(expressions), streaming, function, tuple(decode))


def decode_argument(arg: Argument) -> tuple[str, str]:
    """A ``read_debezium`` decoding argument: (its Python keyword, its literal value)."""
    name = DECODE_BY_KEY[str(arg.name).lower()]
    if arg.literal is None:
        raise KafkaArgumentError(f"{name} takes a literal string, not {arg.sql}.")
    return DECODE_OPTIONS[name], arg.literal


def spark_option(name: str, function: str = FUNCTION) -> str:
    """Spark's name of a ``read_kafka`` argument; ``kafka.*`` passes through as written."""
    if name.lower().startswith(CONSUMER_PREFIX) and len(name) > len(CONSUMER_PREFIX):
        return name
    known = BY_KEY.get(name.lower())
    if known is not None:
        return OPTIONS[known]
    names = {**BY_KEY, **(DECODE_BY_KEY if function == DEBEZIUM else {})}
    close = difflib.get_close_matches(name.lower(), list(names), n=1, cutoff=0.75)
    if close:
        raise KafkaArgumentError(f"unknown option '{name}': did you mean {names[close[0]]}?")
    extra = f", {', '.join(DECODE_OPTIONS)}" if function == DEBEZIUM else ""
    raise KafkaArgumentError(
        f"unknown option '{name}': options are {', '.join(OPTIONS)}{extra}, or a Kafka "
        "consumer setting written `kafka.<setting>` (in backquotes)."
    )


def is_connector_missing(error: Exception) -> bool:
    """Spark's error (an ``AnalysisException``) for ``format("kafka")`` without the
    connector on the classpath."""
    condition = getattr(error, "getCondition", None)
    return callable(condition) and condition() in SPARK_CONNECTOR_MISSING


def connector_missing_message(doing: str = "Reading") -> str:
    """The one line a read of Kafka (``read_kafka``, ``format("kafka")``) or a write to it
    fails with when Spark's Kafka connector is missing, naming the fix."""
    connector = f"org.apache.spark:spark-sql-kafka-0-10_2.13:{pyspark.__version__}"
    return (
        f"[{CONNECTOR_MISSING}] {doing} Kafka needs Spark's Kafka connector, which pip's "
        "pyspark does not ship; it must be on the classpath when Spark starts: "
        f"`headwater pipelines run --packages {connector}` (or --jars with the connector's "
        "jar and its dependencies), or in Python "
        f"headwater.session(conf={{'spark.jars.packages': '{connector}'}}) (or spark.jars) "
        "before any session starts (docs/kafka.md, 'The connector')."
    )


def option_text(value: object) -> str:
    """An option's value as Spark's options take it (booleans as ``true``/``false``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
