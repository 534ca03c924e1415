"""Where a session's optional JVM jars come from: delta-spark's, and Hadoop's S3 connector.

The pinned, checksummed copies ``scripts/fetch-jars.sh <tier>`` leaves in the cache
(``$HEADWATER_JAR_CACHE`` or ``~/.cache/headwater/jars``) when they are there — nothing is
resolved at start-up; else Spark resolves them from Maven Central at the session's start
(``spark.jars.packages``, into Ivy's cache: once), as ``configure_spark_with_delta_pip``
does for delta-spark; and where the caller already names them, nothing is added.

Hadoop's S3 connector (``hadoop-aws``) is added only when the user asks
(``headwater.session(s3_connector=True)`` or ``$HEADWATER_S3_CONNECTOR=1``): its AWS SDK is
about 650 MB. Its version must be the Hadoop client's of the installed pyspark
(:func:`hadoop_version`), which users of ``--packages`` often get wrong.
"""

from __future__ import annotations

import os
import re
import uuid

from pyspark.sql import SparkSession

from headwater import storage
from headwater.errors import OptionError
from headwater.storage import paths as storage_paths

CACHE_ENV = "HEADWATER_JAR_CACHE"


def delta_spark_version() -> str:
    import importlib.metadata  # here: only sessions on delta-spark ask (13 ms to import)

    try:
        return importlib.metadata.version("delta-spark")
    except importlib.metadata.PackageNotFoundError:
        raise OptionError(
            "delta_engine='delta-spark' needs delta-spark's Python package: "
            "pip install 'headwater[delta-spark]' (it brings pyspark 4.2)."
        ) from None


def cached_jars(version: str) -> list[str]:
    """The cached delta-spark jars of ``version`` (empty: none, or another version)."""
    return cached_tier("delta-spark", f"delta-spark_2.13-{version}.jar")


def cached_tier(tier: str, wanted: str) -> list[str]:
    """The jars ``scripts/fetch-jars.sh <tier>`` left in the cache, if ``wanted`` (the
    main jar, of the version needed) is among them; else none."""
    root = os.environ.get(CACHE_ENV) or os.path.join(
        os.path.expanduser("~"), ".cache", "headwater", "jars"
    )
    folder = storage.join(storage.normalize(root), tier)
    found = storage.list_files(folder, recursive=False) if storage.is_dir(folder) else []
    jars = sorted(storage_paths.local_path(f.path) for f in found if f.path.endswith(".jar"))
    return jars if any(j.endswith("/" + wanted) for j in jars) else []


def session_conf(existing: dict[str, str]) -> dict[str, str]:
    """The settings that put delta-spark's jars on a new session's classpath (none when the
    caller already gave ``spark.jars`` or ``spark.jars.packages`` naming delta-spark)."""
    given = existing.get("spark.jars", "") + "," + existing.get("spark.jars.packages", "")
    if "delta-spark" in given:
        return {}
    version = delta_spark_version()
    jars = cached_jars(version)
    if jars:
        listed = [j for j in existing.get("spark.jars", "").split(",") if j]
        return {"spark.jars": ",".join(listed + jars)}
    packages = [p for p in existing.get("spark.jars.packages", "").split(",") if p]
    return {"spark.jars.packages": ",".join([*packages, f"io.delta:delta-spark_2.13:{version}"])}


S3_CONNECTOR_ENV = "HEADWATER_S3_CONNECTOR"


def s3_connector_wanted(asked: bool | None) -> bool:
    """``session(s3_connector=...)``, else ``$HEADWATER_S3_CONNECTOR`` (1/true/yes)."""
    if asked is not None:
        return asked
    return os.environ.get(S3_CONNECTOR_ENV, "").strip().lower() in ("1", "true", "yes")


def hadoop_version() -> str:
    """The Hadoop client version of the installed pyspark (its ``hadoop-client-api`` jar),
    which ``hadoop-aws`` must match."""
    import pyspark

    folders = [os.path.join(os.path.dirname(pyspark.__file__), "jars")]
    if os.environ.get("SPARK_HOME"):
        folders.append(os.path.join(os.environ["SPARK_HOME"], "jars"))
    for folder in map(storage.normalize, folders):
        files = storage.list_files(folder, recursive=False) if storage.is_dir(folder) else []
        for name in sorted(f.base_name for f in files):
            found = re.fullmatch(r"hadoop-client-api-(\d+\.\d+\.\d+)\.jar", name)
            if found:
                return found.group(1)
    raise OptionError(
        "s3_connector=True: no hadoop-client-api jar in pyspark's jars, so the S3 "
        "connector's version is unknown: add org.apache.hadoop:hadoop-aws:<Spark's Hadoop "
        "version> to spark.jars.packages yourself."
    )


def s3_connector_conf(existing: dict[str, str]) -> dict[str, str]:
    """The settings that put Hadoop's S3 connector on a new session's classpath: the cached
    ``s3a`` jars of the pyspark's Hadoop version, else ``hadoop-aws`` of that version from
    Maven Central (none when the caller already names ``hadoop-aws``)."""
    given = existing.get("spark.jars", "") + "," + existing.get("spark.jars.packages", "")
    if "hadoop-aws" in given:
        return {}
    version = hadoop_version()
    jars = cached_tier("s3a", f"hadoop-aws-{version}.jar")
    if jars:
        listed = [j for j in existing.get("spark.jars", "").split(",") if j]
        return {"spark.jars": ",".join(listed + jars)}
    packages = [p for p in existing.get("spark.jars.packages", "").split(",") if p]
    return {"spark.jars.packages": ",".join([*packages, f"org.apache.hadoop:hadoop-aws:{version}"])}


def metastore_conf(warehouse: str, existing: dict[str, str]) -> dict[str, str]:
    """A persistent session catalog for a local delta-spark session: Spark's Hive catalog
    on an embedded Derby metastore kept in the warehouse, so names outlive the process as
    headwater's own catalog keeps them (a pipeline's second update finds its tables).
    Nothing when the caller chose a catalog or a metastore, or the warehouse is remote."""
    chosen = ("spark.sql.catalogImplementation", "spark.hadoop.hive.metastore.uris")
    if any(key in existing for key in chosen) or storage.is_remote(warehouse):
        return {}
    folder = storage_paths.local_path(warehouse)
    # Derby opens its log file as the JVM starts: in a warehouse not made yet it prints a
    # FileNotFoundException, then its banner, on the terminal.
    storage.make_dir(folder)
    set_aside_unfinished_metastore(storage.join(folder, "metastore_db"))
    java = existing.get("spark.driver.extraJavaOptions", "")
    return {
        "spark.sql.catalogImplementation": "hive",
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={folder}/metastore_db;create=true"
        ),
        "spark.driver.extraJavaOptions": f"{java} -Dderby.stream.error.file={folder}/derby.log",
    }


def set_aside_unfinished_metastore(database: str) -> None:
    """A Derby database whose creation a crash cut short (``kill -9`` while the first
    session started) is a folder without ``service.properties``: Derby then refuses to
    create it again ("Directory ... already exists") and every later session fails. It holds
    no name yet; it is moved aside, kept for a look, and created anew."""
    if storage.is_dir(database) and not storage.exists(
        storage.join(database, "service.properties")
    ):
        storage.move(database, f"{database}.unfinished-{uuid.uuid4().hex[:8]}")


# The embedded Hive metastore's loggers whose errors are a step Spark recovers from, never
# the user's concern: replacing a Delta table's definition (a materialized view's refresh
# by saveAsTable overwrite) has Spark try to alter its schema in a Hive-compatible way
# first, which the metastore refuses for a Delta table and logs at ERROR ("Failed to alter
# table"), then store it in Spark's own format. A failure that remains reaches the caller
# as Spark's exception.
RECOVERED_LOGGERS = ("org.apache.hadoop.hive.metastore.HiveAlterHandler",)


def quiet_recovered_errors(spark: SparkSession) -> None:
    """Silence :data:`RECOVERED_LOGGERS` in the session's JVM (a local session on the
    embedded Derby metastore of :func:`metastore_conf`)."""
    jvm = spark.sparkContext._jvm
    if jvm is None:
        return
    level = jvm.org.apache.logging.log4j.Level.OFF
    for name in RECOVERED_LOGGERS:
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, level)
