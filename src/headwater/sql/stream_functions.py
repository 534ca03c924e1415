"""The table functions of ``spark.sql`` that read streams or Kafka, which the known platform
takes in any SQL and not only in pipeline SQL: ``STREAM read_files(...)`` (Auto Loader with
``read_files``' defaults, a streaming DataFrame), ``read_kafka(...)`` (a batch read of what
the topics hold) and ``STREAM read_kafka(...)`` (a stream); ``STREAM(read_files(...))`` is
the same read as ``STREAM read_files(...)``.

Auto Loader keeps the schema it infers and the files it has seen in a schema location. A
pipeline gives each of its sources a folder of its own; here it is the ``schemaLocation``
argument, else a folder under the warehouse named after what the stream reads (the path and
the options as written), so the same query started again finds its files and schema there
and reads each file once. Two streams reading the same files with the same options share
that folder, which is harmless for reading but not for ``cleanSource`` (one stream would
move files the other has not read yet): with ``cleanSource`` the folder must be given.

``read_kafka``'s arguments are checked and mapped by :mod:`headwater.sql.kafka_arguments`,
as in pipeline SQL; the pipelines read Kafka through :func:`read_kafka` too. ``read_debezium``
is the same read, its rows decoded by :func:`headwater.debezium.changes` (docs/cdc.md).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession

from headwater import debezium, storage
from headwater.errors import UnsupportedOperationError
from headwater.sql import functions
from headwater.sql.kafka_arguments import (
    DEBEZIUM,
    KafkaSource,
    connector_missing_message,
    is_connector_missing,
    option_text,
)

# Under the warehouse: the schema and file state of STREAM read_files given no schemaLocation.
STATE_FOLDER = "_headwater_read_files"
_LOCATION_KEYS = ("schemalocation", "cloudfiles.schemalocation")
_CLEAN_KEYS = ("cleansource", "cloudfiles.cleansource")


def read_files_stream(spark: SparkSession, path: str, options: Mapping[str, str]) -> DataFrame:
    """``STREAM read_files(path, k => v, ...)`` in ``spark.sql``: Auto Loader, its schema
    location given or chosen (see the module's docstring)."""
    opts = dict(options)
    given = {k.lower(): v for k, v in opts.items()}
    if not any(k in given for k in _LOCATION_KEYS):
        clean = next((given[k] for k in _CLEAN_KEYS if k in given), "off")
        if str(clean).lower() != "off":
            raise ValueError(
                f"cleanSource => '{clean}' needs schemaLocation => '<folder>', a folder of "
                "this stream's own: it holds the files the stream has read, which cleanSource "
                "moves or deletes."
            )
        opts["schemaLocation"] = default_schema_location(spark, path, opts)
    return functions.read_files_stream(spark, path, opts)


def default_schema_location(spark: SparkSession, path: str, options: Mapping[str, str]) -> str:
    """``<warehouse>/_headwater_read_files/<digest of the path and options>``."""
    warehouse = spark.conf.get("spark.headwater.warehouse", None) or spark.conf.get(
        "spark.sql.warehouse.dir"
    )
    read = [storage.normalize(path), sorted((k.lower(), str(v)) for k, v in options.items())]
    digest = hashlib.sha1(json.dumps(read).encode()).hexdigest()[:16]
    return storage.join(storage.normalize(str(warehouse)), STATE_FOLDER, digest)


def read_kafka(
    spark: SparkSession, source: KafkaSource, evaluate: Callable[[str], object]
) -> DataFrame:
    """The Kafka read of a checked ``read_kafka`` call: streaming or batch, every option
    passed on; an argument given as an expression (``secret(...)``, ``concat(...)``) is
    evaluated once by ``evaluate``. Without Spark's Kafka connector, one line saying how to
    add it (``[KAFKA_CONNECTOR_MISSING]``) instead of Spark's pointer to its deployment
    guide."""
    options = dict(source.options)
    for name, sql in source.expressions:
        options[name] = option_text(evaluate(sql))
    reader = spark.readStream if source.streaming else spark.read
    try:
        rows = reader.format("kafka").options(**options).load()
    except AnalysisException as e:
        if not is_connector_missing(e):
            raise
        raise UnsupportedOperationError(connector_missing_message("Reading")) from None
    return debezium_changes(rows, dict(source.decode)) if source.function == DEBEZIUM else rows


def debezium_changes(kafka_rows: DataFrame, decode: Mapping[str, str]) -> DataFrame:
    """``read_debezium``'s rows: the Kafka rows decoded by :func:`headwater.debezium.changes`
    with the call's decoding arguments (``millisColumns`` comma-separated)."""
    millis = [c.strip() for c in decode.get("millis_columns", "").split(",") if c.strip()]
    modes = {k: v for k, v in decode.items() if k != "millis_columns"}
    return debezium.changes(kafka_rows, millis_columns=millis, **modes)
