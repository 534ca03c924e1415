"""Spark's own Parquet scan of exactly a snapshot's files, at the cost of a folder scan.

Handing Spark the snapshot's files as explicit paths is exact but slow: Spark checks each
path and, past 32 paths, lists them with a Spark job of one task per path — about 5 ms a
file, minutes for tens of thousands. A scan of the table's folder lists it once, as
``spark.read.parquet(folder)`` does; but the folder also holds files no longer in the
snapshot (removed by later versions, not yet vacuumed) and files of versions after it. So
the folder is scanned and the files Spark lists are compared with the snapshot's: when
they are the same the scan is used as it is, otherwise it keeps only the snapshot's files
with a filter on ``_metadata.file_path``, which Spark applies to the file list before any
file is opened. Explicit paths remain for a few files on a local filesystem, for files
outside the folder, and for folders Spark cannot list as one table (mixed directory layouts).

On an object store (``s3a://``, and ``s3://`` where Hadoop's S3 connector serves it:
``delta/files/io_choice.py``) every explicit path costs the driver one LIST and two
HEAD requests, one after another, and the scan built from them runs slower too: measured on
the local S3 server (``bench/bench_s3.py``), 30 files took 92 requests and 0.49 s to plan
against 11 requests and 0.08 s for the folder, whose listing costs one request per 1,000
keys. So there the folder is scanned whatever the number of files.
"""

from __future__ import annotations

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from headwater import storage
from headwater.delta.log.delta_log import DataFile, Snapshot
from headwater.storage.paths import file_uri_spellings, local_path

# Below this many files explicit paths are listed serially on the driver (Spark's
# spark.sql.sources.parallelPartitionDiscovery.threshold): cheaper than a folder listing,
# on a local filesystem only.
EXPLICIT_PATHS_UP_TO = 32


def scan(
    spark: SparkSession, snapshot: Snapshot, files: list[DataFile], schema: StructType
) -> tuple[DataFrame, dict[str, str]]:
    """Spark's scan of ``files`` (with ``schema``), and each file's URI as Spark lists it
    (keyed by relative path; empty when the scan was built from explicit paths)."""
    reader = spark.read.schema(schema).option("basePath", snapshot.root)
    many = len(files) > EXPLICIT_PATHS_UP_TO or storage.is_remote(snapshot.root)
    if many and all(f.path.endswith(".parquet") for f in files):
        try:
            folder = reader.option("pathGlobFilter", "*.parquet").parquet(snapshot.root)
        except AnalysisException:  # e.g. files of an old partitioning beside the new one
            folder = None
        if folder is not None:
            listed = listed_files(spark, folder)
            uris = {f.path: listed.get(local_path(f.absolute(snapshot.root))) for f in files}
            if all(uris.values()):
                kept = _only(folder, set(listed.values()), {u for u in uris.values() if u})
                return kept, {p: u for p, u in uris.items() if u}
    return reader.parquet(*[f.absolute(snapshot.root) for f in files]), {}


def listed_files(spark: SparkSession, df: DataFrame) -> dict[str, str]:
    """The files a file-source DataFrame scans, as Spark names them (``file:///...``),
    keyed by plain path. One JVM call, not one per file."""
    jvm = spark._jvm
    assert jvm is not None  # a classic session always has one
    joined = jvm.org.apache.hadoop.util.StringUtils.join("\n", df._jdf.inputFiles())
    return {local_path(uri): uri for uri in str(joined).split("\n") if uri}


def _only(folder: DataFrame, listed: set[str], wanted: set[str]) -> DataFrame:
    """``folder`` restricted to the files ``wanted`` (a filter Spark applies to its file
    list), naming whichever set is shorter: the wanted files or the others."""
    others = listed - wanted
    if not others:
        return folder
    keep = len(wanted) <= len(others)
    named = sorted(wanted if keep else others)
    literals = ", ".join(_literal(s) for uri in named for s in file_uri_spellings(uri))
    test = "IN" if keep else "NOT IN"
    return folder.where(F.expr(f"_metadata.file_path {test} ({literals})"))


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def restricted(
    spark: SparkSession, df: DataFrame, snapshot: Snapshot, kept: list[DataFile]
) -> DataFrame:
    """``df`` (a scan of ``snapshot``'s files, perhaps filtered) reading only ``kept``: a
    filter on ``_metadata.file_path``, applied by Spark to its file list before any file is
    opened; ``df`` unchanged when the scan does not list a kept file."""
    if not kept:
        return df.where(F.lit(False))  # Spark plans no scan at all
    listed = listed_files(spark, df)
    wanted = {listed.get(local_path(f.absolute(snapshot.root))) for f in kept}
    if None in wanted:
        return df
    return _only(df, set(listed.values()), {u for u in wanted if u})
