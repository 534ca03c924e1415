"""``read_kafka``, the known platform's table-valued function over Kafka topics, as pipeline
SQL writes it::

    SELECT * FROM STREAM read_kafka(bootstrapServers => 'host:9092', subscribe => 'orders',
                                    startingOffsets => 'earliest')

Its named arguments are the options of Spark's own Kafka source under the platform's names
(``bootstrapServers`` is ``kafka.bootstrap.servers``; the others are spelled as Spark spells
them), plus any ``kafka.``-prefixed consumer setting written in backquotes. The rows are the
source's: ``key`` and ``value`` (binary), ``topic``, ``partition``, ``offset``,
``timestamp``, ``timestampType`` (and ``headers`` with ``includeHeaders``). Under ``STREAM``
it is a streaming read, else a batch read of what the topics hold.

The arguments are checked here, without Spark, so a misspelt or missing option is reported
with the file, line and column before a session starts; the runner turns the checked
options into ``spark.readStream.format("kafka")`` (:mod:`headwater.pipelines.graph.kafka`).
This module imports nothing of its package: :mod:`.queries` hands it the arguments.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

FUNCTION = "read_kafka"
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
    it keys ``SqlQuery.render``."""

    options: tuple[tuple[str, str], ...]
    expressions: tuple[tuple[str, str], ...] = ()
    streaming: bool = False
    function: str = FUNCTION

    def option_names(self) -> list[str]:
        return [name for name, _ in (*self.options, *self.expressions)]


def kafka_source(arguments: Sequence[Argument], streaming: bool) -> KafkaSource:
    """The Kafka read of a ``read_kafka`` call, or :class:`KafkaArgumentError`."""
    options: list[tuple[str, str]] = []
    expressions: list[tuple[str, str]] = []
    seen: dict[str, str] = {}
    for arg in arguments:
        if arg.name is None:
            raise KafkaArgumentError(
                f"arguments are named, as in subscribe => 'orders'; found {arg.sql}."
            )
        option = spark_option(arg.name)
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
    wrong = STREAM_ONLY if not streaming else BATCH_ONLY
    for name in wrong:
        if name.lower() in seen:
            where = "a streaming read (STREAM read_kafka(...))" if streaming else "a batch read"
            kind = "batch" if streaming else "streaming"
            raise KafkaArgumentError(
                f"{seen[name.lower()]} applies to {kind} reads only, not to {where}."
            )
    return KafkaSource(tuple(options), tuple(expressions), streaming)


def spark_option(name: str) -> str:
    """Spark's name of a ``read_kafka`` argument; ``kafka.*`` passes through as written."""
    if name.lower().startswith(CONSUMER_PREFIX) and len(name) > len(CONSUMER_PREFIX):
        return name
    known = BY_KEY.get(name.lower())
    if known is not None:
        return OPTIONS[known]
    close = difflib.get_close_matches(name.lower(), list(BY_KEY), n=1, cutoff=0.75)
    if close:
        raise KafkaArgumentError(f"unknown option '{name}': did you mean {BY_KEY[close[0]]}?")
    raise KafkaArgumentError(
        f"unknown option '{name}': options are {', '.join(OPTIONS)}, or a Kafka consumer "
        "setting written `kafka.<setting>` (in backquotes)."
    )
