"""A ready SparkSession: the ``delta`` format registered, the catalog attached, local defaults.

Two entry points: :func:`session` builds (or reuses) a session; :func:`install` upgrades a
session the user built themselves. Both are idempotent.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import sys
import tempfile
from collections.abc import Iterator

from pyspark import SparkContext
from pyspark.sql import SparkSession

from headwater import engines, storage
from headwater.engines import jars

log = logging.getLogger(__name__)

# Settings every headwater session needs. Users may override them through ``conf``.
_REQUIRED_CONF = {
    # Python data sources only see pushed filters when this is on (used for file skipping).
    "spark.sql.python.filterPushdown.enabled": "true",
    # Delta stores timestamps as microseconds adjusted to UTC; INT96 has no usable stats.
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.session.timeZone": "UTC",
}

# Spark writes a stream's offset and commit logs (one file each per batch) through Hadoop's
# FileContext by default. On the local file system without Hadoop's native library (a pip
# install has none) that starts about ten child processes per file: `readlink` for the
# rename's link checks and `chmod` for the file and its checksum. Spark's FileSystem-based
# manager renames with rename(2) (atomic on local disks, as Spark requires) and starts two.
# Measured with a one-file Auto Loader batch on 2 cores: 58 -> 14 ms per log write, the batch
# about 90 ms shorter. Set at run time unless the user set it.
CHECKPOINT_MANAGER_CONF = "spark.sql.streaming.checkpointFileManagerClass"
CHECKPOINT_MANAGER = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
)

# Where headwater's managed tables and their names live (default: spark.sql.warehouse.dir).
WAREHOUSE_CONF = "spark.headwater.warehouse"
ENGINE_ENV = "HEADWATER_DELTA_ENGINE"  # the default of session(delta_engine=...)

_LOCAL_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.adaptive.enabled": "true",
    "spark.driver.memory": "2g",
    "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # The throughput collector: on a few cores G1's concurrent marking threads take CPU from
    # the tasks. A warm MERGE of 1M rows into 10M on 2 cores: 2.3-2.5 s with it, 2.8-3.0 s
    # with G1 (bench/RESULTS.md).
    "spark.driver.extraJavaOptions": "-XX:+UseParallelGC",
}


LOCAL_DELTA_SPARK_PARALLELISM = (
    "spark.databricks.delta.snapshotPartitions",
    "spark.sql.sources.parallelPartitionDiscovery.parallelism",
)


def session(
    app_name: str = "headwater",
    master: str | None = None,
    warehouse: str | os.PathLike[str] | None = None,
    conf: dict[str, str] | None = None,
    log_level: str = "ERROR",
    delta_engine: str | None = None,
    s3_connector: bool | None = None,
) -> SparkSession:
    """Build a SparkSession ready for headwater tables.

    ``master`` defaults to ``$SPARK_MASTER`` or ``local[*]``; ``local-cluster[N,C,M]`` runs
    executors in separate processes. ``warehouse`` is where managed tables live
    (default ``./spark-warehouse``, as in Spark); the catalog of names is kept there too, so
    a later session on the same warehouse sees the same tables.

    ``delta_engine``: ``"headwater"`` (default, ``$HEADWATER_DELTA_ENGINE``; no JVM jar) or
    ``"delta-spark"``: Delta's own connector runs every Delta read, write and statement and
    names are the session catalog's, while Auto Loader and pipelines run on top of it
    (``pip install 'headwater[delta-spark]'``; its jars from the cache
    ``scripts/fetch-jars.sh delta-spark`` fills, else resolved from Maven Central).

    ``s3_connector`` (default ``$HEADWATER_S3_CONNECTOR``): start Spark with Hadoop's S3
    connector, ``hadoop-aws`` of pyspark's own Hadoop version (the cache
    ``scripts/fetch-jars.sh s3a`` fills, else fetched from Maven Central on this first
    use: about 650 MB, once), so ``s3://`` and ``s3a://`` tables are scanned by Spark
    itself rather than through Python (docs/storage.md). It must be asked before Spark
    starts in this process.
    """
    engine = engines.parse(delta_engine or os.environ.get(ENGINE_ENV))
    master = master or os.environ.get("SPARK_MASTER", "local[*]")
    # Executors must run the interpreter that has headwater and its dependencies.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if master.startswith("local-cluster"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    warehouse_dir = storage.normalize(
        warehouse or os.environ.get("HEADWATER_WAREHOUSE", "spark-warehouse")
    )

    builder = SparkSession.builder.appName(app_name).master(master)
    settings = {
        **_LOCAL_DEFAULTS,
        "spark.sql.shuffle.partitions": str(_cores(master) or 4),
        **_REQUIRED_CONF,
        **(conf or {}),
    }
    settings[WAREHOUSE_CONF] = warehouse_dir
    metastore: dict[str, str] = {}  # the local Derby metastore's settings, if made here
    if engine == engines.DELTA_SPARK:
        settings.update(engines.DELTA_SPARK_CONF)
        # delta-spark sizes two of its jobs for clusters: a table's state is rebuilt from
        # its log in 50 partitions, and VACUUM lists the table's folders in as many tasks
        # as Spark's parallel partition discovery allows (10000). On a local master that is
        # 50 tasks per snapshot of a small table and a VACUUM of minutes (delta-spark's own
        # Python suite: VACUUM 105 s, MERGE 99 s). One per task slot, as for shuffles,
        # unless the user set them; a cluster master keeps delta-spark's defaults.
        slots = _cores(master)
        if slots:
            for key in LOCAL_DELTA_SPARK_PARALLELISM:
                settings.setdefault(key, str(slots))
        settings.update(jars.session_conf(settings))
        metastore = jars.metastore_conf(warehouse_dir, settings)
        settings.update(metastore)
    # Spark's own catalog keeps only names and needs a Hadoop filesystem for its folder; the
    # tables themselves live in headwater's warehouse, which may be on an object store.
    settings["spark.sql.warehouse.dir"] = (
        storage.normalize("spark-warehouse") if storage.is_remote(warehouse_dir) else warehouse_dir
    )
    if master.startswith("local-cluster"):
        settings.setdefault("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
        settings.setdefault("spark.executor.memory", "1g")
        settings.setdefault("spark.executor.extraJavaOptions", "-XX:+UseParallelGC")
    starting = SparkContext._active_spark_context is None
    if jars.s3_connector_wanted(s3_connector) and starting:
        settings.update(jars.s3_connector_conf(settings))
    if starting:  # a JVM starts: its settings are final
        check_start_settings(settings)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    if metastore:
        jars.quiet_recovered_errors(spark)
    route_error_logs()
    if s3_connector and not starting:
        _require_s3_connector(spark)
    return install(spark, warehouse=warehouse_dir)


def _require_s3_connector(spark: SparkSession) -> None:
    """``s3_connector=True`` asked of a Spark already running: fine if it has the
    connector, else one line (a JVM's classpath is fixed when it starts)."""
    from headwater.delta.files.io_choice import has_filesystem
    from headwater.errors import OptionError

    if not has_filesystem(spark, "s3a"):
        raise OptionError(
            "s3_connector=True: Spark already runs in this process without Hadoop's S3 "
            "connector, and a JVM's classpath is fixed at its start: ask for it in the first "
            "headwater.session() call (or set HEADWATER_S3_CONNECTOR=1), or spark.stop() first."
        )


# Sizes Spark reads when it starts ("2g", "512m"); a bad one fails the JVM after seconds.
MEMORY_SETTINGS = (
    "spark.driver.memory",
    "spark.driver.maxResultSize",
    "spark.driver.memoryOverhead",
    "spark.executor.memory",
    "spark.executor.memoryOverhead",
)
_SIZE = re.compile(r"\d+[kmgtp]?b?", re.IGNORECASE)
_PACKAGE = re.compile(r"[^:\s]+:[^:\s]+:[^:\s]+")  # group:artifact:version


def check_start_settings(settings: dict[str, str]) -> None:
    """Settings Spark reads only while it starts, checked before it starts: a jar of
    ``spark.jars`` that is not there (Spark logs an error and runs without it, so the
    failure comes later, as a missing class), a ``spark.jars.packages`` entry that is not
    ``group:artifact:version``, a memory size Spark cannot read. One line, naming the
    setting and the fix."""
    from headwater.errors import OptionError

    for jar in _items(settings.get("spark.jars")):
        pattern = any(c in jar for c in "*?[")  # Spark expands globs itself
        if storage.parse(jar).is_local and not pattern and not storage.exists(jar):
            raise OptionError(
                f"[INVALID_SPARK_SETTING] spark.jars names {jar}, which does not exist: give "
                "the path of a jar file (comma-separated for several)."
            )
    for package in _items(settings.get("spark.jars.packages")):
        if not _PACKAGE.fullmatch(package):
            raise OptionError(
                f"[INVALID_SPARK_SETTING] spark.jars.packages takes Maven coordinates "
                f"group:artifact:version, not '{package}'."
            )
    for key in MEMORY_SETTINGS:
        if key in settings and not _SIZE.fullmatch(settings[key].strip()):
            raise OptionError(
                f"[INVALID_SPARK_SETTING] {key}={settings[key]} is not a size Spark reads: "
                "write it as 512m, 2g or 4096m."
            )


def _items(value: str | None) -> list[str]:
    return [item.strip() for item in (value or "").split(",") if item.strip()]


# PySpark's loggers of errors with a query context (``PySparkException._log_exception``).
QUERY_CONTEXT_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")
ERROR_LOG_ENV = "HEADWATER_ERROR_LOG"  # the file they go to (default: error_log())
VERBOSE_ENV = "HEADWATER_VERBOSE"  # 1: they stay on stderr


def error_log() -> str:
    """The file Spark's error details go to: ``$HEADWATER_ERROR_LOG``, or
    ``headwater-<uid>.log`` in the temporary directory."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return os.environ.get(ERROR_LOG_ENV) or os.path.join(
        tempfile.gettempdir(), f"headwater-{uid}.log"
    )


def route_error_logs(verbose: bool | None = None) -> str | None:
    """Send PySpark's query-context error logs to :func:`error_log` (or, ``verbose`` or
    ``$HEADWATER_VERBOSE=1``, leave them on stderr); returns the file (None: stderr).

    PySpark logs every error it converts that carries a query context, at ERROR, as JSON
    with the Java stack trace, on stderr, whether or not anything catches the error: several
    KB before the one line a user needs, and as many for errors headwater handles itself
    (learning a graph probes plans that may not resolve). The detail belongs in a file."""
    from pyspark.logger import PySparkLogger

    if verbose is None:
        verbose = os.environ.get(VERBOSE_ENV, "") not in ("", "0")
    path = error_log()
    for name in QUERY_CONTEXT_LOGGERS:
        logger = PySparkLogger.getLogger(name)
        logger.propagate = False
        for old in list(logger.handlers):  # PySpark's own stderr handler, or ours
            if old.get_name() == "headwater" or type(old) is logging.StreamHandler:
                logger.removeHandler(old)
        handler = logging.StreamHandler() if verbose else logging.FileHandler(path, delay=True)
        handler.set_name("headwater")
        logger.addHandler(handler)
    return None if verbose else path


def spark_logs_to(spark: SparkSession, path: str) -> None:
    """From now on, Spark's own log goes to the file ``path`` instead of the terminal: the
    JVM's log4j lines (at the session's level, ERROR: a failed task's, a failed stream's
    with their Java and Python stack traces, each several hundred lines). For a command
    that prints its own one-line errors; the start-up lines printed before stay where they
    were. The file is made only when something is logged."""
    log4j = spark._jvm.org.apache.logging.log4j  # type: ignore[union-attr]
    context = log4j.LogManager.getContext(False)
    config = context.getConfiguration()
    layout = (
        log4j.core.layout.PatternLayout.newBuilder()
        .withPattern("%d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex")
        .build()
    )
    appender = (
        log4j.core.appender.FileAppender.newBuilder()
        .setName("headwater-file")
        .withFileName(path)
        .withAppend(True)
        .withCreateOnDemand(True)
        .setLayout(layout)
        .build()
    )
    appender.start()
    config.addAppender(appender)
    # (Spark's profile gives the root the console; Py4J hands maps over as dicts)
    for logger in [config.getRootLogger(), *config.getLoggers().values()]:
        names = list(logger.getAppenders())  # (its keys)
        for name in names:
            logger.removeAppender(name)
        if names:
            logger.addAppender(appender, None, None)
    context.updateLoggers()


def _cores(master: str) -> int | None:
    """Task slots of a local master. Shuffles into one partition per slot: fewer leave cores
    idle, and a few more leave a straggler round (AQE coalescing 4 partitions into 3 on 2
    cores ran MERGE's write stage for 1.5x its balanced time)."""
    local = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?", master)
    if local:
        slots = local.group(1)
        if slots is None:
            return 1
        return (os.cpu_count() or 1) if slots == "*" else int(slots)
    cluster = re.fullmatch(r"local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,\s*\d+\s*\]", master)
    if cluster:
        return int(cluster.group(1)) * int(cluster.group(2))
    return None


def install(spark: SparkSession, warehouse: str | os.PathLike[str] | None = None) -> SparkSession:
    """Register headwater on an existing session (idempotent) and return it.

    Registers the ``delta`` data source, hooks the reader/writer entry points so that Delta
    tables use Spark's native Parquet I/O where that is exact, and attaches the persistent
    catalog rooted at ``warehouse`` (default: the session's ``spark.sql.warehouse.dir``).

    A session built with delta-spark (its SQL extension or catalog in the configuration)
    keeps it: headwater stands aside — the ``delta`` format, Delta SQL, ``DeltaTable`` and
    table names stay delta-spark's and the session catalog's — and adds what is above
    Delta: the ``cloudFiles`` source and the pipelines, which reach its tables through
    ``headwater.api`` (:mod:`headwater.engines`).

    On either engine, Delta becomes the format of a table written or created without one
    (``saveAsTable``, ``writeStream.toTable``, ``CREATE TABLE`` without ``USING``, CTAS, a
    read or write by path without ``format``), as on the known platform: Spark's
    ``spark.sql.sources.default`` is set to ``delta``. A session whose
    ``spark.sql.sources.default`` the user set (builder, ``session(conf=...)``,
    ``spark.conf.set`` before this call) keeps theirs.
    """
    from headwater import adapter
    from headwater.adapter import sessions
    from headwater.catalog import Catalog
    from headwater.delta.files.io_choice import bind_s3_to_connector

    _refuse_connect(spark)
    _workers_import_compiled_pyspark(spark)
    _configure_stores(spark)
    _local_files_without_checksums(spark)
    bind_s3_to_connector(spark)  # s3:// read by Spark itself where hadoop-aws is present
    engine = engines.detect(spark)
    root: str | None = None
    if engine == engines.HEADWATER:
        given = warehouse or spark.conf.get(WAREHOUSE_CONF, None)
        root = storage.normalize(str(given or spark.conf.get("spark.sql.warehouse.dir")))
    _prepare_state(spark, engine)
    adapter.install(delta_routing=engine == engines.HEADWATER)
    if root is not None:
        Catalog.attach(spark, root)
    # foreachBatch's clone of a query's session, newSession(): headwater's too
    sessions.follow(spark.sparkContext, functools.partial(_join, engine=engine, warehouse=root))
    return spark


# Set on a session's own state by install (a runtime setting, which clones copy with the
# data sources registered alongside it, and a newSession() starts without).
_PREPARED_CONF = "spark.headwater.sessionState"


def _prepare_state(spark: SparkSession, engine: engines.Engine) -> None:
    """What a session's own state needs: the settings headwater relies on and its data
    sources (``cloudFiles``, and ``delta`` on headwater's engine); the engine noted on the
    session."""
    from headwater.autoloader.source import CloudFilesDataSource
    from headwater.delta.read.source import DeltaDataSource

    for key, value in _REQUIRED_CONF.items():
        if key != "spark.sql.session.timeZone" or spark.conf.get(key, None) is None:
            spark.conf.set(key, value)
    if spark.conf.get(CHECKPOINT_MANAGER_CONF, None) is None:
        spark.conf.set(CHECKPOINT_MANAGER_CONF, CHECKPOINT_MANAGER)
    _answer_python_data_source_lookup(spark)
    spark.dataSource.register(CloudFilesDataSource)
    engines.default_to_delta(spark)
    if engine == engines.HEADWATER:
        spark.dataSource.register(DeltaDataSource)
    engines.record(spark, engine)
    spark.conf.set(_PREPARED_CONF, "prepared")


_LOOKUP_PREFIX = "pyspark_"  # the packages Spark's lookup imports (lookup_data_sources.py)


def _answer_python_data_source_lookup(spark: SparkSession) -> None:
    """Spark's answer to "which installed packages hold Python data sources", given before
    its first registration when this process already knows it is "none".

    Once per JVM, at the first registration of a Python data source, Spark starts a Python
    worker that lists every module on its path and imports those named ``pyspark_*``
    (``DataSourceManager.initialStaticDataSourceBuilders``), for an answer that is almost
    always empty: a session and a first query took 7.5 s and 10.2 CPU-s with it, 5.9 s and
    8.4 CPU-s without (2026-11-30, 2 cores). When the worker runs this interpreter, without
    files shipped to its path (``pyFiles``), the modules it would list are this process's,
    with the folders Spark adds to its ``PYTHONPATH``: if none of those is named
    ``pyspark_*``, Spark's lookup would find nothing and is told so. Otherwise, or with a
    Spark that keeps the answer elsewhere, Spark looks as it always does."""
    import pkgutil

    context = spark.sparkContext
    jvm = context._jvm
    assert jvm is not None  # a classic session's
    # the lookup's Python, as Spark picks it (PythonUtils.createPythonFunction); session()
    # names this one before the JVM starts
    environment = jvm.java.lang.System.getenv
    python = environment("PYSPARK_DRIVER_PYTHON") or environment("PYSPARK_PYTHON") or "python3"
    if python != sys.executable:
        return
    if context.getConf().get("spark.submit.pyFiles", "") or context._python_includes:
        return
    extra = [p for p in context.environment.get("PYTHONPATH", "").split(os.pathsep) if p]
    if any(m.name.startswith(_LOOKUP_PREFIX) for m in pkgutil.iter_modules([*sys.path, *extra])):
        return
    try:
        datasources = jvm.org.apache.spark.sql.execution.datasources
        manager = getattr(getattr(datasources, "DataSourceManager$"), "MODULE$")
        if not manager.dataSourceBuilders().isDefined():
            empty = getattr(getattr(jvm.scala.collection.immutable, "Map$"), "MODULE$").empty()
            getattr(manager, "dataSourceBuilders_$eq")(jvm.scala.Some(empty))
    except Exception:  # noqa: BLE001 - another Spark: its own lookup runs, as without this
        log.debug("Spark's Python data source lookup left to Spark", exc_info=True)


def _join(spark: SparkSession, engine: engines.Engine, warehouse: str | None) -> None:
    """A session Spark built on an installed context, as install left the installed one.
    A clone carries its parent's state (settings, data sources, temporary views) and is
    only given the engine and the catalog, at the cost of one setting read: foreachBatch
    builds one per micro-batch. A session with a state of its own gets it prepared."""
    from headwater.catalog import Catalog

    own_state = spark.conf.get(_PREPARED_CONF, None) is None
    with _active_in_jvm(spark) if own_state else contextlib.nullcontext():
        if own_state:
            _prepare_state(spark, engine)
        else:
            engines.record(spark, engine)
        if warehouse is not None:
            Catalog.join(spark, warehouse, own_state)


@contextlib.contextmanager
def _active_in_jvm(spark: SparkSession) -> Iterator[None]:
    """``spark`` as the JVM's active session for the block. Spark refuses to register a
    Python data source under a name the *active* session already has, though the session
    registering it has none: a ``newSession()`` of an installed session could not get
    ``cloudFiles`` otherwise."""
    jvm_sessions = SparkSession._get_j_spark_session_class(spark._jvm)
    previous = jvm_sessions.getActiveSession()
    jvm_sessions.setActiveSession(spark._jsparkSession)
    try:
        yield
    finally:
        if previous.isDefined():
            jvm_sessions.setActiveSession(previous.get())
        else:
            jvm_sessions.clearActiveSession()


def _workers_import_compiled_pyspark(spark: SparkSession) -> None:
    """Spark's Python workers started from here on (data sources registered after this,
    UDFs, streams) find :mod:`headwater.worker_site` first, which has them import PySpark
    compiled instead of from Spark's zip: a second of CPU less at each worker's start."""
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker_site")
    environment = spark.sparkContext.environment
    given = [p for p in environment.get("PYTHONPATH", "").split(os.pathsep) if p]
    if folder not in given:
        environment["PYTHONPATH"] = os.pathsep.join([folder, *given])


def _configure_stores(spark: SparkSession) -> None:
    """Object-store endpoints and credentials as Spark is configured with them
    (``spark.hadoop.fs.s3a.*``): given once, they reach delta-rs and pyarrow on the driver
    and, shipped by Spark with every Python function and data source registered after
    this, its Python workers on every host."""
    from headwater.storage import settings

    conf = dict(spark.sparkContext.getConf().getAll())
    conf.update(spark.conf.getAll)  # set at run time with spark.conf.set, then install()
    for bucket, found in settings.from_spark_conf(conf).items():
        settings.configure(found, bucket)
    spark.sparkContext.environment[settings.ENVIRONMENT_VARIABLE] = settings.encoded()


def _local_files_without_checksums(spark: SparkSession) -> None:
    """Hadoop's local file system in this JVM writes no ``.crc`` file beside each file.

    Those checksums are Hadoop's own (Parquet, Delta and Spark's logs neither need nor
    read them); each costs a second file, its rename and, without Hadoop's native library
    (a pip install has none), a ``chmod`` child process. Measured on a one-file Auto Loader
    batch into Delta (2 cores): the batch 299 -> 196 ms, the Parquet job 169 -> 133 ms and
    each of Spark's two checkpoint-log writes 13-17 -> 7-8 ms. The switch is on the
    process's cached local file system, which Spark's driver and local-mode tasks share;
    reading a file that has a ``.crc`` still checks it."""
    jvm_fs = spark._jvm.org.apache.hadoop.fs.FileSystem  # type: ignore[union-attr]
    jvm_fs.getLocal(spark._jsc.hadoopConfiguration()).setWriteChecksum(False)


def uninstall() -> None:
    """Put PySpark's own reader, writer and session methods back (every session of the
    process): Delta tables are then reachable through :mod:`headwater.api` only."""
    from headwater import adapter

    adapter.uninstall()


def _refuse_connect(spark: object) -> None:
    """The adapter wraps classic PySpark; a Spark Connect session's builders are other
    classes, which it would silently not reach."""
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        from headwater.errors import UnsupportedOperationError

        raise UnsupportedOperationError(
            "headwater runs on classic PySpark sessions, not on Spark Connect "
            "(sc://...): Delta reads and writes would reach Spark's own delta source, which "
            "this installation does not have. Build the session with headwater.session() "
            "(or SparkSession.builder.master(...)) instead of .remote(...)."
        )
