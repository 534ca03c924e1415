"""The Delta engine a session runs on: headwater's own, or delta-spark.

headwater's engine (the default: pip only, no JVM jar) reads the Delta log through delta-rs
and the data through Spark. delta-spark, Delta's own Spark connector, is what most clusters
already run: its SQL extension and ``spark_catalog`` are static settings of the session, so
a session is on one engine for its life, and which one is read from its configuration once
(:func:`detect`) and kept on the session by ``headwater.install`` (:func:`of`).

Everything headwater adds above Delta — Auto Loader, COPY INTO, pipelines — reaches a table
through one door, :mod:`headwater.api`, which hands out the engine's implementation of it:
``api.Table`` (headwater's) or :class:`~headwater.engines.delta_spark.DeltaSparkTable`. So
this is the one place that asks which engine a session has; nothing above it does.

May import ``delta`` and the bottom layers (never ``api``, ``catalog`` or above).
"""

from __future__ import annotations

from types import ModuleType
from typing import Literal

from pyspark.sql import SparkSession

from headwater.errors import OptionError
from headwater.lazy import submodule

Engine = Literal["headwater", "delta-spark"]
HEADWATER: Engine = "headwater"
DELTA_SPARK: Engine = "delta-spark"
ENGINES: tuple[Engine, ...] = (HEADWATER, DELTA_SPARK)

# delta-spark's classes in a session's configuration: its SQL (MERGE, DESCRIBE HISTORY, ...)
# and the catalog that makes `delta` tables (and every name in spark_catalog) its own.
EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
DELTA_SPARK_CONF = {
    "spark.sql.extensions": EXTENSION,
    "spark.sql.catalog.spark_catalog": CATALOG,
}

_ATTRIBUTE = "_headwater_engine"


def parse(name: str | None) -> Engine:
    """``delta_engine`` as a user spells it (None: headwater's)."""
    text = (name or HEADWATER).strip().lower().replace("_", "-")
    if text in ("delta-spark", "deltaspark"):
        return DELTA_SPARK
    if text == HEADWATER:
        return HEADWATER
    raise OptionError(
        f"Unknown Delta engine '{name}': use delta_engine='headwater' (the default, no JVM "
        "jar) or 'delta-spark' (Delta's own connector, pip install 'headwater[delta-spark]')."
    )


def detect(spark: SparkSession) -> Engine:
    """delta-spark when the session was built with its extension or its catalog (a cluster
    that runs delta-spark, or ``headwater.session(delta_engine="delta-spark")``)."""
    conf = spark.sparkContext.getConf()
    extensions = conf.get("spark.sql.extensions", "") or ""
    catalog = conf.get("spark.sql.catalog.spark_catalog", "") or ""
    if EXTENSION in extensions.split(",") or catalog == CATALOG:
        return DELTA_SPARK
    return HEADWATER


def of(spark: SparkSession) -> Engine:
    """The session's engine, as ``install`` recorded it (else as configured)."""
    found = getattr(spark, _ATTRIBUTE, None)
    return found if found in ENGINES else detect(spark)


def record(spark: SparkSession, engine: Engine) -> None:
    setattr(spark, _ATTRIBUTE, engine)


def require_headwater(spark: SparkSession, what: str) -> None:
    """Refuse ``what`` on a delta-spark session, naming the engine that has it."""
    if of(spark) == DELTA_SPARK:
        from headwater.errors import EngineUnsupportedError

        raise EngineUnsupportedError(
            f"{what} runs on headwater's Delta engine, and this session runs delta-spark. "
            "Build the session with headwater.session(delta_engine='headwater') for it."
        )


# Spark's setting for the format of a table written or created without one
# (``saveAsTable``, ``writeStream.toTable``, ``CREATE TABLE`` without ``USING``, CTAS) and of a
# read or write by path without one. Spark's default is Parquet; the known platform's is Delta.
DEFAULT_FORMAT = "spark.sql.sources.default"


def default_to_delta(spark: SparkSession) -> None:
    """Make Delta the format of tables written or created without one, on either engine, as
    on the known platform, unless the user set ``spark.sql.sources.default`` themselves
    (in the session's builder, ``headwater.session(conf=...)`` or ``spark.conf.set`` before
    ``install``): theirs is kept. Without this a delta-spark session silently makes a
    Parquet table of the README's ``writeStream...toTable("bronze.events")``."""
    if spark.conf.get(DEFAULT_FORMAT, None) is None:
        spark.conf.set(DEFAULT_FORMAT, "delta")


def delta_by_default(spark: SparkSession) -> bool:
    """Whether a read, write or CREATE TABLE that names no format is Delta's (headwater's
    engine routes such calls to its own Delta path then, as delta-spark's Spark does)."""
    found = spark.conf.get(DEFAULT_FORMAT, None) or "parquet"
    return str(found).strip().lower() == "delta"


def __getattr__(name: str) -> ModuleType:
    return submodule(__name__, name)  # ``headwater.engines.door`` without importing it first
