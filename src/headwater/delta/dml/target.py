"""A table's rows as DML reads them: each with the file that holds it (and its position).

DELETE, UPDATE, MERGE and OPTIMIZE rewrite or mark only the files holding the rows they
touch, so they read the target with each row's file path (``_metadata.file_path`` on
Spark's native scan, a file column on the Python path) and, for deletion vectors, its
row position in that file (``_metadata.row_index``).
"""

from __future__ import annotations

from collections.abc import Iterable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from headwater.delta.dml import row_ids
from headwater.delta.files import change_data
from headwater.delta.files.data_files import local_path
from headwater.delta.log import protocol, replay
from headwater.delta.log.delta_log import DataFile, Snapshot
from headwater.delta.read.batch import native_eligible, python_read, read_snapshot
from headwater.errors import UnsupportedFeatureError

FILE_COL = "__hw_file"
ROW_INDEX_COL = "__hw_row_index"


def read_target(
    spark: SparkSession,
    snapshot: Snapshot,
    files: list[DataFile] | None = None,
    row_index: bool = False,
) -> DataFrame:
    """The table's rows (of ``files`` only, when given) with :data:`FILE_COL` (and, with
    ``row_index``, :data:`ROW_INDEX_COL`; native reads only). On a table keeping stable row
    ids, each row's id and commit version come too, in the hidden columns a rewrite must
    write again (:mod:`.row_ids`)."""
    snapshot.check_writable()
    if change_data.enabled(snapshot.configuration) or replay.has_vectors(snapshot):
        # Refused before any work rather than at commit: such commits remove files.
        protocol.check_writable(snapshot.protocol, snapshot.metadata, snapshot.root, True)
    files = snapshot.files if files is None else files
    if not files:
        extra = [*row_ids.hidden_fields(snapshot), StructField(FILE_COL, StringType())]
        if row_index:
            extra.append(StructField(ROW_INDEX_COL, LongType()))
        return spark.createDataFrame([], StructType([*snapshot.schema.fields, *extra]))
    if row_ids.names(snapshot) is not None:
        rows = row_ids.read(spark, snapshot, files, FILE_COL, ROW_INDEX_COL)
        return rows if row_index else rows.drop(ROW_INDEX_COL)
    if native_eligible(snapshot, with_vectors=True):
        rows = read_snapshot(spark, snapshot, files).withColumn(
            FILE_COL, F.col("_metadata.file_path")
        )
        return rows.withColumn(ROW_INDEX_COL, F.col("_metadata.row_index")) if row_index else rows
    if row_index:
        raise UnsupportedFeatureError(
            f"Row positions of {snapshot.root} can be read only on Spark's native scan."
        )
    rows = python_read(spark, snapshot, file_column=FILE_COL)
    if len(files) < len(snapshot.files):
        rows = rows.where(F.col(FILE_COL).isin([f.absolute(snapshot.root) for f in files]))
    return rows


def touched(rows: DataFrame) -> set[str]:
    """The files (as the scan names them) holding ``rows``."""
    return {r[0] for r in rows.select(FILE_COL).distinct().collect()}


def files_named(snapshot: Snapshot, uris: Iterable[str]) -> list[DataFile]:
    """The snapshot's files among ``uris`` (file paths as a scan names them)."""
    wanted = {local_path(p) for p in uris}
    return [f for f in snapshot.files if local_path(f.absolute(snapshot.root)) in wanted]


def live_rows(snapshot: Snapshot) -> dict[str, int | None]:
    """Live rows of each file: the log's numRecords less the rows its deletion vector
    deletes (None: the log does not count the file's rows)."""
    deleted = replay.deleted_counts(snapshot)
    return {
        f.path: None if n is None else int(n) - deleted.get(f.path, 0)
        for f, n in zip(
            snapshot.files, snapshot.add_actions.column("num_records").to_pylist(), strict=True
        )
    }


def known_rows(snapshot: Snapshot, files: list[DataFile]) -> int | None:
    """Live rows in ``files`` by the log (None: a file has no row count)."""
    counts = live_rows(snapshot)
    rows = [counts.get(f.path) for f in files]
    return None if any(r is None for r in rows) else sum(r for r in rows if r is not None)
