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


def spark_has_filesystem(spark: SparkSession, path: str) -> bool:
    """Whether Spark's Hadoop filesystems can read ``path`` (then Spark scans its files)."""
    location = storage.parse(path)
    if location.is_local:
        return True
    with _lock:
        if location.scheme in _known:
            return _known[location.scheme]
    jvm = spark._jvm
    assert jvm is not None  # a classic session always has one
    try:
        jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass(
            location.scheme,
            spark._jsc.hadoopConfiguration(),
        )
        found = True
    except Exception:  # py4j's error for UnsupportedFileSystemException
        found = False
    with _lock:
        _known[location.scheme] = found
    log.warning(
        "headwater: %s:// Delta files are %s.",
        location.scheme,
        "read by Spark's native Parquet scan and written by pyarrow straight to their place"
        if found
        else "read and written by pyarrow on the executors (Spark has no filesystem for this "
        "scheme: put a connector such as hadoop-aws on Spark's classpath and use s3a:// "
        "for Spark's own Parquet scan)",
    )
    return found
