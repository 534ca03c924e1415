"""AUTO CDC key state: what a flow keeps beside its target so that events apply in
``sequence_by`` order whatever order they arrive in, and the commit of one batch to both.

* **SCD type 1** keeps each key's last applied sequence value and whether it was deleted
  (a tombstone, forgotten after ``pipelines.cdc.tombstoneGCThresholdInSeconds``). When the
  target keeps the sequence column itself, the state holds the tombstones only.
* **SCD type 2** keeps a log of the events its target cannot give back: deletes, events
  absorbed into a version (an identical repeat, an untracked change), and the event
  opening a version whose row now holds other values (a later event's untracked ones).
  Any other version's row is the event that opened it, so the target stands for it. The
  log and the target together hold every event applied, which is what lets a late event
  re-decide the history of its key (see :mod:`.scd2`). The log has the target's
  columns; a log written before it held deletes only gains them when first appended to.

Each batch commits to the target and to the state under the flow's Delta transaction id,
the batch id as version, so a batch replayed after a crash commits nothing twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.datasource import IsNotNull, LessThan
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from headwater import api
from headwater.pipelines.define.auto_cdc import CdcPlan

STATE_SEQ = "__sequence"
STATE_DELETED = "__deleted"
STATE_AT = "__deleted_at"
LAST_DELETE = "__last_delete"  # SCD1 with ignore_null_updates (see .scd1_nulls)
STATE_UNAVAILABLE = "__unavailable"  # SCD2 with unavailable_columns: what an event lacked


def column_seq(column: str) -> str:
    """SCD1 with ``ignore_null_updates``: the state's column holding the sequence value
    of the event whose value of ``column`` the target holds."""
    return f"__seq__{column}"


@dataclass
class CdcResult:
    """What one batch did to the target."""

    upserted: int = 0
    deleted: int = 0
    committed: bool = True  # False: the batch was already applied


def state_schema(plan: CdcPlan) -> StructType:
    """The state table's columns: the keys, (SCD2) the target's other columns, then the
    sequence value, whether the event is a delete and when the delete was applied (SCD1
    with ``ignore_null_updates``: then the newest delete and each column's clock)."""
    names = plan.columns if plan.scd2 else plan.keys
    seq = plan.sequence_type
    by_column = []
    if not plan.scd2 and plan.spec.ignore_null_updates:
        data = [c for c in plan.columns if c not in plan.keys]
        by_column = [StructField(n, seq, True) for n in [LAST_DELETE, *map(column_seq, data)]]
    if plan.scd2 and plan.unavailable:
        by_column = [StructField(STATE_UNAVAILABLE, ArrayType(StringType()), True)]
    return StructType(
        [
            *[plan.schema[c] for c in names],
            StructField(STATE_SEQ, seq, True),
            StructField(STATE_DELETED, BooleanType(), True),
            StructField(STATE_AT, TimestampType(), True),
            *by_column,
        ]
    )


def keys_equal(plan: CdcPlan, left: str, right: str) -> str:
    """The MERGE condition matching ``left``'s and ``right``'s keys."""
    return " AND ".join(f"{left}.`{k}` = {right}.`{k}`" for k in plan.keys)


class CdcState:
    """The state table of one flow at ``path``."""

    def __init__(
        self, spark: SparkSession, plan: CdcPlan, path: str, tombstone_seconds: int
    ) -> None:
        self.spark = spark
        self.plan = plan
        self.table = api.for_path(spark, path)
        self.tombstone_seconds = tombstone_seconds

    def prepare(self) -> None:
        """Create the state table; forget tombstones older than the retention (SCD1)."""
        if not self.table.exists():
            # Deletion vectors: a batch's MERGE writes only the keys it changed, never
            # rewriting the files of the others.
            empty = self.spark.createDataFrame([], state_schema(self.plan))
            vectors = {"delta.enableDeletionVectors": "true"}
            self.table.write(empty, api.WriteSpec(mode="append", configuration=vectors))
        elif not self.plan.scd2 and self.may_expire():
            self.table.delta_table().delete(
                F.col(STATE_DELETED)
                & (
                    F.col(STATE_AT)
                    < F.current_timestamp() - F.expr(f"INTERVAL {self.tombstone_seconds} SECONDS")
                )
            )

    def may_expire(self) -> bool:
        """Whether a tombstone may be older than the retention, by the state's log stats
        (min ``__deleted_at`` per file): most updates have none to forget, and a DELETE
        finding nothing still costs a scan and a Spark job."""
        try:
            cutoff = datetime.now(timezone.utc) - timedelta(seconds=self.tombstone_seconds)
        except OverflowError:  # a retention longer than the calendar: nothing expires
            return False
        log = self.table.log()
        deleted = [IsNotNull((STATE_AT,)), LessThan((STATE_AT,), cutoff)]
        return bool(log.files_matching(log.snapshot(), deleted))

    def rows(self) -> DataFrame | None:
        """The state's rows; None when it has none (no deletes yet, a first batch), so the
        batch is not joined with an empty table."""
        if not self.table.log().snapshot().files:
            return None
        return self.table.read()

    def read(self) -> DataFrame:
        return self.table.read()


def commit_target(
    target: api.TableDoor,
    changes: DataFrame,
    txn: tuple[str, int],
    on: str,
    clauses: list[api.Clause],
) -> CdcResult:
    """MERGE ``changes`` into the target, at most once per ``txn``."""
    merged = target.merge(changes.alias("s"), on, clauses, txn, "t")
    m = merged.metrics
    return CdcResult(
        upserted=m.get("numTargetRowsInserted", 0) + m.get("numTargetRowsUpdated", 0),
        deleted=m.get("numTargetRowsDeleted", 0),
        committed=merged.version is not None,
    )


def append_state(state: CdcState, rows: DataFrame, txn: tuple[str, int]) -> None:
    """Append ``rows`` to the state, at most once per ``txn`` (a state written before
    SCD2's log kept its columns gains them)."""
    state.table.write(rows, api.WriteSpec(mode="append", txn=txn, merge_schema=True))


def merge_state(
    state: CdcState, rows: DataFrame, txn: tuple[str, int], clauses: list[api.Clause]
) -> None:
    """MERGE ``rows`` into the state on the keys, at most once per ``txn``."""
    on = keys_equal(state.plan, "t", "s")
    state.table.merge(rows.alias("s"), on, clauses, txn, "t")
