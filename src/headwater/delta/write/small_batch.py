"""A stream's small micro-batch collected to the driver in Arrow and appended with no Spark
write job.

Why: writing a micro-batch through Spark is a job of its own (planning, a task, the
commit protocol, Hadoop's configuration shipped to it). For a batch of one small file from
Auto Loader it measured about 230 ms, against about 115 ms to collect the same batch as
Arrow. A live landing folder's batches are a few small files each, and that job was most
of the time from a file landing to its rows being visible. Here such a batch is collected
(:meth:`DataFrame.toArrow`, one job that only reads), written with pyarrow as one Parquet
file and committed with the stream's transaction id, through
:func:`headwater.delta.write.arrow_append.append`: the same commit, conflict checks and
exactly-once rule as the Spark path.

Which batches: those the driver can tell are small before running them. The batch handed
to the sink is an RDD (Spark runs ``foreachBatch`` over the query's own RDD), so its
lineage is read: a chain of one-to-one steps straight from the source's input partitions
(no shuffle, so no state store runs and running it again replays the same offsets), where
every partition says how many bytes it reads (``input_bytes()``: Auto Loader's files, a
Delta table's files), at most :data:`SMALL_BATCH_BYTES` in all. The table must take an
Arrow append as it is (:func:`~headwater.delta.write.arrow_append.why_not`: the batch's
own schema, no partitions, constraints, generated or identity columns, column mapping).
Anything else, or anything in Spark's internals not as expected, is written through Spark
as before.
"""

from __future__ import annotations

import logging
import pickle
from collections.abc import Iterable
from typing import Any

from pyspark.sql import DataFrame

from headwater.delta.log.delta_log import Snapshot
from headwater.delta.log.follow import FollowedLog
from headwater.delta.log.operations import Operation
from headwater.delta.options import WriteSpec
from headwater.delta.schema import column_mapping as mapping
from headwater.delta.schema import table_schema as schemas
from headwater.delta.write import arrow_append
from headwater.delta.write.batch import WriteResult
from headwater.errors import TableNotFoundError

log = logging.getLogger(__name__)

# The most bytes of input a batch collected to the driver reads: a few small files, where
# a write job's fixed cost is most of the batch; above it the job's cost is shared out.
SMALL_BATCH_BYTES = 1 << 20
# Codecs pyarrow writes as Spark's writer names them.
CODECS = {"snappy": "snappy", "gzip": "gzip", "zstd": "zstd", "none": "none"}
CODECS["uncompressed"] = "none"
# RDDs between the batch and its source that map each partition to one partition.
_ONE_TO_ONE = {
    "org.apache.spark.sql.execution.SQLExecutionRDD",
    "org.apache.spark.rdd.MapPartitionsRDD",
}
_SOURCE_RDD = "org.apache.spark.sql.execution.datasources.v2.DataSourceRDD"


def append(
    df: DataFrame, follow: FollowedLog, spec: WriteSpec, operation: Operation
) -> WriteResult | None:
    """The batch ``df`` appended in Arrow with ``spec``'s transaction id, when it is small
    and the table takes it (its result, ``version`` None when the transaction id was
    already committed); None when it must be written through Spark (nothing written)."""
    codec = CODECS.get(spec.compression.lower())
    if (
        spec.mode != "append"
        or spec.txn is None
        or spec.partition_by
        or spec.cluster_by is not None
        or spec.replace_where
        or spec.max_records_per_file
        or not spec.data_change
        or codec is None
    ):
        return None
    size = input_bytes(df)
    if size is None or size > SMALL_BATCH_BYTES:
        return None
    try:
        snapshot = follow.snapshot()
    except TableNotFoundError:
        return None  # the first batch creates the table through Spark
    if type(snapshot) is not Snapshot:
        return None  # a log headwater replays itself: the Spark path's checks
    app, batch = spec.txn
    done = snapshot.table.transaction_version(app)
    if done is not None and done >= batch:
        return WriteResult(version=None)
    if not _takes(snapshot, df, spec):
        return None
    rows = df.toArrow()
    return arrow_append.append(
        follow.log,
        snapshot,
        rows,
        lambda txn: txn.commit(),
        user_metadata=spec.user_metadata,
        operation=operation,
        app_version=spec.txn,
        compression=codec,
    )


def _takes(snapshot: Snapshot, df: DataFrame, spec: WriteSpec) -> bool:
    """Whether the batch's rows go into the table as they are (the Spark path would neither
    evolve the schema nor reorder, cast or check a column)."""
    data_schema = mapping.without_mapping(schemas.as_nullable(df.schema))
    why = arrow_append.why_not(snapshot, data_schema)
    if why is not None:
        log.debug("batch into %s written through Spark: %s", snapshot.root, why)
    return why is None


def input_bytes(df: DataFrame) -> int | None:
    """The bytes ``df`` (a micro-batch) reads from its source, when its rows come straight
    from input partitions that say so; None when that cannot be told (a shuffle, a source
    whose partitions do not say, Spark's internals not as expected). Counting stops past
    :data:`SMALL_BATCH_BYTES`."""
    try:
        return _input_bytes(df)
    except Exception:  # (another Spark's internals: such a batch is written through Spark)
        log.debug("a micro-batch's input size could not be read", exc_info=True)
        return None


def _input_bytes(df: DataFrame) -> int | None:
    leaves = df._jdf.queryExecution().executedPlan().collectLeaves()
    if leaves.size() != 1 or not leaves.head().getClass().getName().endswith(".RDDScanExec"):
        return None
    rdd = leaves.head().rdd()
    while rdd.getClass().getName() in _ONE_TO_ONE:
        deps = rdd.dependencies()
        if deps.size() != 1:
            return None
        rdd = deps.head().rdd()
    if rdd.getClass().getName() != _SOURCE_RDD:
        return None
    total = 0
    for part in rdd.partitions():
        for picked in _picked(part):
            sized = getattr(pickle.loads(bytes(picked)), "input_bytes", None)
            if sized is None:
                return None
            total += int(sized())
            if total > SMALL_BATCH_BYTES:
                return total
    return total


def _picked(part: Any) -> Iterable[Any]:
    """The pickled Python input partitions of one ``DataSourceRDDPartition`` (Spark 4 keeps
    an ``Option``; a partition of another source has no pickled form and raises)."""
    found = part.inputPartition()
    return [found.get().pickedPartition()] if found.isDefined() else []
