"""Row ids through rewrites: what keeps a row's id when UPDATE, DELETE, MERGE or OPTIMIZE
copies it to a new file, on tables with row tracking on (see
:mod:`headwater.delta.log.row_tracking` for what the log holds).

A rewrite reads the target with :func:`read` (each row's id and commit version in the
table's two hidden columns, named by its properties: the hidden value where a file has
one, else the fresh one, ``baseRowId`` plus the row's position, and the file's
``defaultRowCommitVersion``), and writes those columns again with :func:`carried`: a row
copied unchanged keeps both, a row an UPDATE or MERGE changes keeps its id and gets a null
commit version (the rewriting commit's), an inserted row gets nulls (fresh values).
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from headwater.delta.log import replay, row_tracking
from headwater.delta.log.delta_log import DataFile, DeltaLog, Snapshot
from headwater.delta.read import native_scan
from headwater.delta.read.batch import native_eligible, without_deleted_rows
from headwater.errors import CorruptLogError, UnsupportedFeatureError
from headwater.storage.paths import file_uri_spellings

_FILE, _BASE, _DEFAULT = "__hw_rt_file", "__hw_rt_base", "__hw_rt_default"


def names(snapshot: Snapshot) -> tuple[str, str] | None:
    """The hidden columns (row id, row commit version) a rewrite of the table must fill;
    None when its row ids need not survive rewrites."""
    return row_tracking.materialized(snapshot.configuration)


def hidden_fields(snapshot: Snapshot) -> list[StructField]:
    """The hidden columns as fields (empty when the table keeps no stable ids)."""
    found = names(snapshot)
    return [StructField(n, LongType()) for n in found] if found else []


def read(
    spark: SparkSession, snapshot: Snapshot, files: list[DataFile], file_col: str, index_col: str
) -> DataFrame:
    """The live rows of ``files`` with their file (``file_col``), position (``index_col``)
    and, in the hidden columns, their id and commit version."""
    found = names(snapshot)
    assert found is not None and files
    if not native_eligible(snapshot, with_vectors=True) or snapshot.physical_schema is not None:
        raise UnsupportedFeatureError(
            f"The table at {snapshot.root} keeps row ids (row tracking) and needs headwater's "
            "Python read path (column mapping or an odd file layout), where row ids cannot be "
            "read; UPDATE, DELETE, MERGE and OPTIMIZE of it are not supported. Run them with "
            "delta-spark."
        )
    row_id, version = found
    schema = StructType([*snapshot.schema.fields, *hidden_fields(snapshot)])
    df, uris = native_scan.scan(spark, snapshot, files, schema)
    df = without_deleted_rows(spark, snapshot, files, df, uris)
    df = df.withColumn(file_col, F.col("_metadata.file_path")).withColumn(
        index_col, F.col("_metadata.row_index")
    )
    if not uris:
        listed = native_scan.listed_files(spark, df)
        uris = {f.path: u for f in files if (u := listed.get(f.absolute(snapshot.root)))}
    bases = _bases(spark, snapshot, files, uris)
    df = df.join(F.broadcast(bases), F.col(file_col) == bases[_FILE], "left")
    return df.select(
        *[F.col(f"`{f.name}`") for f in snapshot.schema],
        F.coalesce(F.col(f"`{row_id}`"), F.col(_BASE) + F.col(index_col)).alias(row_id),
        F.coalesce(F.col(f"`{version}`"), F.col(_DEFAULT)).alias(version),
        F.col(file_col),
        F.col(index_col),
    )


def _bases(
    spark: SparkSession, snapshot: Snapshot, files: list[DataFile], uris: dict[str, str]
) -> DataFrame:
    """Each file's ``baseRowId`` and ``defaultRowCommitVersion``, by every spelling of the
    file's URI that ``_metadata.file_path`` may hold."""
    adds = replay.live_adds(DeltaLog(snapshot.root), snapshot.version, {f.path for f in files})
    spelled: list[str] = []
    bases: list[int] = []
    defaults: list[int] = []
    for f in files:
        add, uri = adds.get(f.path), uris.get(f.path)
        base = None if add is None else add.extra.get(row_tracking.BASE_ROW_ID)
        default = None if add is None else add.extra.get(row_tracking.DEFAULT_VERSION)
        if base is None or default is None or uri is None:
            raise CorruptLogError(
                f"The file {f.path} of {snapshot.root} has no row ids in the log (baseRowId, "
                "defaultRowCommitVersion), though the table keeps them; nothing was written."
            )
        for name in file_uri_spellings(uri):
            spelled.append(name)
            bases.append(int(base))
            defaults.append(int(default))
    return spark.createDataFrame(
        pa.table(
            {
                _FILE: pa.array(spelled, pa.string()),
                _BASE: pa.array(bases, pa.int64()),
                _DEFAULT: pa.array(defaults, pa.int64()),
            }
        )
    )


def carried(snapshot: Snapshot, changed: Column | None, prefix: str = "") -> list[Column]:
    """The hidden columns a rewrite writes for rows read by :func:`read` (``prefix``: the
    alias they are read under, with its dot): ids kept, commit versions kept where
    ``changed`` (None: no row changed) is false and null where it is true."""
    found = names(snapshot)
    if found is None:
        return []
    row_id, version = found
    kept = F.col(f"{prefix}`{version}`")
    return [
        F.col(f"{prefix}`{row_id}`").alias(row_id),
        (kept if changed is None else F.when(changed, F.lit(None)).otherwise(kept))
        .cast(LongType())
        .alias(version),
    ]
