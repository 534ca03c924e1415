"""Who moves a table's bytes: Spark's native Parquet I/O or pyarrow on the executors.

Spark reads a table's files fastest itself, but only on stores its Hadoop classpath has a
filesystem for: the pyspark wheel has ``file:`` but no S3 connector, while a cluster with
``hadoop-aws`` has ``s3a:``. Writes differ: Spark's writer publishes by renaming out of a
temporary folder, which an object store does as a copy, and our staging adds a second
copy; pyarrow writes each file once, straight to its place. Measured on the local S3 server
(``bench/bench_s3.py``, 5M rows): a Delta write through Spark's writer on ``s3a://`` took
1.82x Spark's own Parquet write, through pyarrow 1.06x. So object stores are always
written by pyarrow, and read by Spark where it can. The choice is made once per scheme and
session and reported once, so a slow path is never a silent surprise.

Hadoop names no filesystem ``s3:`` of its own, but its S3 connector (``hadoop-aws``) serves
that scheme as well as ``s3a:`` once ``fs.s3.impl`` names it. :func:`bind_s3_to_connector`
sets that in the session's Hadoop configuration when the connector is on the classpath and
nothing else serves ``s3:`` (``headwater.install`` calls it, for both Delta engines): then
``s3://`` tables are scanned by Spark like ``s3a://`` ones, the same ``spark.hadoop.fs.s3a.*``
settings apply, and Spark names their files ``s3://`` as the user wrote them
(``input_file_name()``, ``_metadata.file_path``). Measured (``bench/bench_s3.py``): the
Python source's scan + aggregate of ``s3://`` was 5-13x Spark's Parquet scan.
"""

from __future__ import annotations

import logging
import threading

from pyspark.sql import SparkSession

from headwater import storage

log = logging.getLogger("headwater")
_known: dict[str, bool] = {}
_lock = threading.Lock()


def writes_natively(spark: SparkSession, path: str) -> bool:
    """Whether Spark's own Parquet writer writes the new files of a table at ``path``
    (local filesystems); otherwise pyarrow writes them in place (object stores)."""
    return not storage.is_remote(path) or (
        not storage.parse(path).is_s3 and spark_has_filesystem(spark, path)
    )


# Hadoop's S3 connector and the scheme it serves under its own name.
S3A_SCHEME = "s3a"
# The S3 scheme Hadoop has no filesystem for until one is bound to it.
S3_SCHEME = "s3"


def bind_s3_to_connector(spark: SparkSession) -> bool:
    """Let Hadoop's S3 connector serve ``s3://`` (``fs.s3.impl``) when it is on Spark's
    classpath and nothing serves that scheme yet (the user's own ``fs.s3.impl`` is kept).
    Whether it was bound here. Set on the session's Hadoop configuration, which every scan
    copies to its tasks, so executors use it too."""
    conf = spark._jsc.hadoopConfiguration()
    if _filesystem_class(spark, S3_SCHEME) is not None:
        return False
    connector = _filesystem_class(spark, S3A_SCHEME)
    if connector is None:
        return False
    conf.set(f"fs.{S3_SCHEME}.impl", connector)
    log.info("headwater: s3:// is served by Hadoop's S3 connector (fs.s3.impl=%s).", connector)
    with _lock:
        _known.pop(S3_SCHEME, None)
    return True


def unbind_s3(spark: SparkSession) -> None:
    """Undo :func:`bind_s3_to_connector`: ``s3://`` is read by pyarrow again, as on a
    pip-only install, while ``s3a://`` keeps the connector (the benchmark measures both
    paths against the connector's scan in one session)."""
    spark._jsc.hadoopConfiguration().unset(f"fs.{S3_SCHEME}.impl")
    with _lock:
        _known.pop(S3_SCHEME, None)


def has_filesystem(spark: SparkSession, scheme: str) -> bool:
    """Whether Spark has a Hadoop filesystem for ``scheme`` (``s3a``: the S3 connector)."""
    return _filesystem_class(spark, scheme) is not None


def _filesystem_class(spark: SparkSession, scheme: str) -> str | None:
    """The class of Spark's Hadoop filesystem for ``scheme``; None when it has none."""
    jvm = spark._jvm
    assert jvm is not None  # a classic session always has one
    try:
        found = jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass(
            scheme, spark._jsc.hadoopConfiguration()
        )
    except Exception:  # py4j's error for UnsupportedFileSystemException
        return None
    return str(found.getName())


def spark_has_filesystem(spark: SparkSession, path: str) -> bool:
    """Whether Spark's Hadoop filesystems can read ``path`` (then Spark scans its files)."""
    location = storage.parse(path)
    if location.is_local:
        return True
    with _lock:
        if location.scheme in _known:
            return _known[location.scheme]
    found = has_filesystem(spark, location.scheme)
    with _lock:
        _known[location.scheme] = found
    log.warning(
        "headwater: %s:// Delta files are %s.",
        location.scheme,
        "read by Spark's native Parquet scan and written by pyarrow straight to their place"
        if found
        else "read and written by pyarrow on the executors (Spark has no filesystem for this "
        "scheme; for Spark's own Parquet scan of s3:// and s3a://, start the session with "
        "headwater.session(s3_connector=True) or HEADWATER_S3_CONNECTOR=1)",
    )
    return found
