"""AUTO CDC execution: each micro-batch of change events becomes one MERGE into the target.

Events apply per key in ``sequence_by`` order, whatever order they arrive in, because
what a batch writes is computed from everything known about its keys, not from the batch
alone:

* **SCD type 1** keeps, beside the target, a state table of each key's last applied
  sequence value and whether it was deleted (a tombstone, kept for
  ``pipelines.cdc.tombstoneGCThresholdInSeconds``). A batch's events older than that are
  ignored; per key the newest remaining event wins (with ``ignore_null_updates``, each
  column takes its newest non-null value since the last delete).
* **SCD type 2** rebuilds the whole history of each key the batch touches: the versions
  in the target (an upsert at each ``__START_AT``), the deletes in the state table, and
  the batch's events, ordered by sequence. A change to a tracked column opens a version,
  identical repeats and untracked changes do not (untracked columns take the newest
  value), a delete closes the open version. Only the versions that differ from the
  target's are written: a late event splits or prepends history without touching the
  rest.

The target's MERGE commits first, then the state's write, both under the flow's Delta
transaction id with the batch id as version: after a crash between them, Spark replays the
batch, the target's MERGE is skipped (already recorded), and the state catches up, so no
batch is ever applied twice or lost. The state's write is a MERGE only when it holds every
key's sequence (SCD1 whose target does not keep it); tombstones and SCD2's deletes are
appended, cheaper than a MERGE (a join and two jobs), and read as the newest per key.

What a batch costs beside the target's MERGE (which reads and rewrites the target as a
user's own MERGE would): SCD2 reads the touched keys' versions with one scan of the target
(the batch's keys broadcast when few, so the target is not shuffled) and rebuilds their
history with one shuffle, the same that sorts the events, the versions and the target rows
to compare, key by key.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.datasource import IsNotNull, LessThan
from pyspark.sql.types import BooleanType, StructField, StructType, TimestampType

from headwater import api
from headwater.delta.log import DeltaLog
from headwater.delta.pruning import keep_files
from headwater.pipelines.auto_cdc import END_AT, START_AT, CdcPlan, expression

SEQ = "__hw_seq"
OP = "__hw_op"
UPSERT, DELETE = 0, 1
STATE_SEQ = "__sequence"
STATE_DELETED = "__deleted"
STATE_AT = "__deleted_at"
PRIOR = "__hw_prior"  # SCD2: 0 for what the target and the state know, 1 for arrivals
WAS = "__hw_was"  # SCD2: a target row's own values (non-key columns, __END_AT)
OPENS = "__hw_opens"  # SCD2: the event opens a version
CHANGE = "__hw_change"
# SCD2: a batch of at most this many events broadcasts its keys to the target's scan (as
# MERGE broadcasts such a source): the target's rows then stay where they are read.
BROADCAST_EVENTS = 2_000_000
NULL_SEQUENCE = (
    "[PIPELINE_AUTO_CDC_NULL_SEQUENCE] AUTO CDC from '{source}': an event has a NULL "
    "sequence_by value ({sequence}), so it cannot be ordered. Filter such events out "
    "(where=...), or give sequence_by a value for every event."
)
NULL_KEY = (
    "[PIPELINE_AUTO_CDC_NULL_KEY] AUTO CDC from '{source}': an event has a NULL key ({keys})."
)


@dataclass
class CdcResult:
    """What one batch did to the target."""

    upserted: int = 0
    deleted: int = 0
    committed: bool = True  # False: the batch was already applied


class CdcApplier:
    """Applies the batches of one AUTO CDC flow to ``target``; ``state`` is the path of
    its state table; ``app_id`` names the flow's transactions."""

    def __init__(
        self,
        spark: SparkSession,
        plan: CdcPlan,
        target: api.Table,
        state: str,
        app_id: str,
        tombstone_seconds: int,
    ) -> None:
        self.spark = spark
        self.plan = plan
        self.target = target
        self.state = api.for_path(spark, state)
        self.app_id = app_id
        self.tombstone_seconds = tombstone_seconds

    # -- state --------------------------------------------------------------------------------

    def state_schema(self) -> StructType:
        fields = [self.plan.schema[k] for k in self.plan.keys]
        return StructType(
            [
                *fields,
                StructField(STATE_SEQ, self.plan.sequence_type, True),
                StructField(STATE_DELETED, BooleanType(), True),
                StructField(STATE_AT, TimestampType(), True),
            ]
        )

    def prepare(self) -> None:
        """Create the state table; forget tombstones older than the retention (SCD1)."""
        if not self.state.exists():
            # Deletion vectors: a batch's MERGE writes only the keys it changed, never
            # rewriting the files of the others.
            empty = self.spark.createDataFrame([], self.state_schema())
            vectors = {"delta.enableDeletionVectors": "true"}
            self.state.write(empty, api.WriteSpec(mode="append", configuration=vectors))
        elif not self.plan.scd2 and self._may_expire():
            self.state.delta_table().delete(
                F.col(STATE_DELETED)
                & (
                    F.col(STATE_AT)
                    < F.current_timestamp() - F.expr(f"INTERVAL {self.tombstone_seconds} SECONDS")
                )
            )

    def _may_expire(self) -> bool:
        """Whether a tombstone may be older than the retention, by the state's log stats
        (min ``__deleted_at`` per file): most updates have none to forget, and a DELETE
        finding nothing still costs a scan and a Spark job."""
        try:
            cutoff = datetime.now(timezone.utc) - timedelta(seconds=self.tombstone_seconds)
        except OverflowError:  # a retention longer than the calendar: nothing expires
            return False
        snapshot = DeltaLog(self.state.location).snapshot()
        return bool(keep_files(snapshot, [IsNotNull((STATE_AT,)), LessThan((STATE_AT,), cutoff)]))

    def _state_rows(self) -> DataFrame | None:
        """The state's rows; None when it has none (no deletes yet, a first batch), so the
        batch is not joined with an empty table."""
        if not DeltaLog(self.state.location).snapshot().files:
            return None
        return self.state.read()

    # -- one batch ----------------------------------------------------------------------------

    def events(self, batch: DataFrame) -> DataFrame:
        """The batch as events: the target's columns, ``SEQ`` and ``OP``. Truncates become
        deletes of every live key older than them (SCD1)."""
        spec, plan = self.plan.spec, self.plan
        seq = expression(spec, "sequence_by")
        assert seq is not None
        where = expression(spec, "where")
        if where is not None:
            batch = batch.filter(where)
        deletes = expression(spec, "apply_as_deletes")
        truncates = expression(spec, "apply_as_truncates")
        keys_text = ", ".join(plan.keys)
        checked_seq = F.when(
            seq.isNull(),
            F.raise_error(
                F.lit(NULL_SEQUENCE.format(source=spec.source, sequence=spec.sequence_by))
            ),
        ).otherwise(seq)
        any_null_key = reduce(lambda a, b: a | b, [F.col(f"`{k}`").isNull() for k in plan.keys])
        op = F.lit(UPSERT)
        if deletes is not None:
            op = F.when(F.coalesce(deletes, F.lit(False)), F.lit(DELETE)).otherwise(op)
        truncate = F.coalesce(truncates, F.lit(False)) if truncates is not None else F.lit(False)
        events = batch.select(
            *[F.col(f"`{c}`") for c in plan.columns],
            checked_seq.alias(SEQ),
            op.alias(OP),
            truncate.alias("__hw_truncate"),
        )
        events = events.filter(
            F.col("__hw_truncate")
            | F.when(
                any_null_key,
                F.raise_error(F.lit(NULL_KEY.format(source=spec.source, keys=keys_text))),
            ).otherwise(F.lit(True))
        )
        if truncates is None:
            return events.drop("__hw_truncate")
        return self._truncates_as_deletes(events)

    def _truncates_as_deletes(self, events: DataFrame) -> DataFrame:
        last = events.filter("__hw_truncate").agg(F.max(SEQ)).first()
        rows = events.filter(~F.col("__hw_truncate")).drop("__hw_truncate")
        if last is None or last[0] is None:
            return rows
        live = self.state.read().filter(~F.col(STATE_DELETED))
        live = live.filter(F.col(STATE_SEQ) < F.lit(last[0]))
        synthetic = live.select(
            *[
                F.col(f"`{c}`")
                if c in self.plan.keys
                else F.lit(None).cast(self.plan.schema[c].dataType).alias(c)
                for c in self.plan.columns
            ],
            F.lit(last[0]).alias(SEQ),
            F.lit(DELETE).alias(OP),
        )
        return rows.filter(F.col(SEQ) > F.lit(last[0])).unionByName(synthetic)

    def apply(self, batch: DataFrame, batch_id: int) -> CdcResult:
        events = self.events(batch)
        if not self.plan.scd2:  # read once, into the changes (which are kept)
            return self._apply_scd1(events, batch_id)
        events = events.persist()  # read for the keys, the history and the state
        try:
            return self._apply_scd2(events, batch_id)
        finally:
            events.unpersist()

    def _keys_equal(self, left: str, right: str) -> str:
        return " AND ".join(f"{left}.`{k}` = {right}.`{k}`" for k in self.plan.keys)

    def _commit(
        self,
        changes: DataFrame,
        batch_id: int,
        on: str,
        clauses: list[api.Clause],
        state_rows: DataFrame,
        state_clauses: list[api.Clause] | None = None,
    ) -> CdcResult:
        """MERGE ``changes`` into the target, then ``state_rows`` into the state (MERGE on
        the keys with ``state_clauses``; without, appended), each at most once per batch
        (the flow's transaction id, the batch id as version)."""
        txn = (self.app_id, batch_id)
        merged = self.target.merge(changes.alias("s"), on, clauses, txn, "t")
        if state_clauses is None:
            self.state.write(state_rows, api.WriteSpec(mode="append", txn=txn))
        else:
            on_keys = self._keys_equal("t", "s")
            self.state.merge(state_rows.alias("s"), on_keys, state_clauses, txn, "t")
        m = merged.metrics
        return CdcResult(
            upserted=m.get("numTargetRowsInserted", 0) + m.get("numTargetRowsUpdated", 0),
            deleted=m.get("numTargetRowsDeleted", 0),
            committed=merged.version is not None,
        )

    # -- SCD type 1 ---------------------------------------------------------------------------

    def _apply_scd1(self, events: DataFrame, batch_id: int) -> CdcResult:
        plan = self.plan
        keys = list(plan.keys)
        # When the target keeps the sequence column (nulls are values, no truncates), its
        # rows say how new each live key is: the MERGE compares with them, the state holds tombstones only.
        spec = plan.spec  # (truncates need every live key's sequence in the state)
        fast = not spec.ignore_null_updates and not spec.apply_as_truncates
        in_target = plan.sequence_column if fast else None
        state = self._state_rows()
        if state is None:  # nothing known yet: every event is newer
            prev, gone = F.lit(None).cast(plan.sequence_type), F.lit(None).cast("boolean")
            events = events.select("*", prev.alias("__hw_prev"), gone.alias("__hw_gone"))
        elif in_target:  # a key deleted in several batches has several: the newest counts
            state = (
                state.where(F.col(STATE_DELETED))
                .groupBy(*keys)
                .agg(F.max(STATE_SEQ).alias("__hw_prev"), F.lit(True).alias("__hw_gone"))
            )
        else:
            state = state.select(
                *keys, F.col(STATE_SEQ).alias("__hw_prev"), F.col(STATE_DELETED).alias("__hw_gone")
            )
        known = events if state is None else events.join(state, keys, "left")
        newer = known.filter(F.col("__hw_prev").isNull() | (F.col(SEQ) > F.col("__hw_prev")))
        data = [c for c in plan.columns if c not in keys]
        order = F.struct(F.col(SEQ), F.col(OP))  # on a tie, a delete wins (as in SDP)
        values: list[Column] = []
        if spec.ignore_null_updates:  # each column's newest non-null value since a delete
            by_key = Window.partitionBy(*keys)
            last_delete = F.max(F.when(F.col(OP) == DELETE, F.col(SEQ))).over(by_key)
            newer = newer.withColumn("__hw_last_delete", last_delete)
            since = F.col("__hw_last_delete").isNull() | (F.col(SEQ) > F.col("__hw_last_delete"))
            for c in data:
                usable = (F.col(OP) == UPSERT) & F.col(f"`{c}`").isNotNull() & since
                values.append(F.max_by(F.col(f"`{c}`"), F.when(usable, F.col(SEQ))).alias(c))
        else:
            values = [F.max_by(F.col(f"`{c}`"), order).alias(c) for c in data]
        changes = (
            newer.groupBy(*keys)
            .agg(
                *values,
                F.max(SEQ).alias(SEQ),
                F.max_by(F.col(OP), order).alias(OP),
                # after a delete (in this batch or before), a null column is null, not "unchanged"
                (
                    F.max(F.when(F.col(OP) == DELETE, F.lit(1))).isNotNull()
                    | F.coalesce(F.max(F.col("__hw_gone").cast("int")) == 1, F.lit(False))
                ).alias("__hw_reset"),
            )
            .persist()
        )
        try:
            newer_than = f" AND s.{SEQ} > t.`{in_target}`" if in_target else ""
            clauses = [
                api.Clause("matched", "delete", f"s.{OP} = {DELETE}{newer_than}"),
                api.Clause(
                    "matched",
                    "update",
                    f"s.{OP} = {UPSERT}{newer_than}",
                    {f"`{c}`": self._updated(c) for c in data},
                ),
                api.Clause(
                    "not_matched",
                    "insert",
                    f"s.{OP} = {UPSERT}",
                    {f"`{c}`": F.col(f"s.`{c}`") for c in plan.columns},
                ),
            ]

            state = changes.select(
                *keys,
                F.col(SEQ).alias(STATE_SEQ),
                (F.col(OP) == DELETE).alias(STATE_DELETED),
                F.when(F.col(OP) == DELETE, F.current_timestamp())
                .cast("timestamp")
                .alias(STATE_AT),
            )
            on = self._keys_equal("t", "s")
            if in_target:  # tombstones only, appended: each is newer than its key's before
                tombstones = state.where(F.col(STATE_DELETED))  # (older events were dropped)
                return self._commit(changes, batch_id, on, clauses, tombstones)
            upsert = [api.Clause("matched", "update"), api.Clause("not_matched", "insert")]
            return self._commit(changes, batch_id, on, clauses, state, upsert)
        finally:
            changes.unpersist()

    def _updated(self, column: str) -> Column:
        if not self.plan.spec.ignore_null_updates:
            return F.col(f"s.`{column}`")
        return F.when(F.col("s.__hw_reset"), F.col(f"s.`{column}`")).otherwise(
            F.coalesce(F.col(f"s.`{column}`"), F.col(f"t.`{column}`"))
        )

    # -- SCD type 2 ---------------------------------------------------------------------------

    def _apply_scd2(self, events: DataFrame, batch_id: int) -> CdcResult:
        plan = self.plan
        keys = list(plan.keys)
        touched = events.select(*keys)  # (duplicates do not change a semi join)
        if events.count() <= BROADCAST_EVENTS:
            touched = F.broadcast(touched)
        rest = [c for c in [*plan.columns, END_AT] if c not in keys]
        old = self.target.read().join(touched, keys, "left_semi")
        history = old.select(
            *[F.col(f"`{c}`") for c in plan.columns],
            F.col(START_AT).alias(SEQ),
            F.lit(UPSERT).alias(OP),
            F.lit(0).alias(PRIOR),
            F.struct(*[F.col(f"`{c}`") for c in rest]).alias(WAS),
        )
        none = F.lit(None).cast(history.schema[WAS].dataType).alias(WAS)
        known = history
        state = self._state_rows()
        if state is not None:  # the deletes known before
            gone = state.filter(F.col(STATE_DELETED)).join(touched, keys, "left_semi")
            deletes = gone.select(
                *[
                    F.col(f"`{c}`")
                    if c in keys
                    else F.lit(None).cast(plan.schema[c].dataType).alias(c)
                    for c in plan.columns
                ],
                F.col(STATE_SEQ).alias(SEQ),
                F.lit(DELETE).alias(OP),
                F.lit(0).alias(PRIOR),
                none,
            )
            known = known.unionByName(deletes)
        arrived = events.select("*", F.lit(1).alias(PRIOR), none)
        rows = self._ordered(known.unionByName(arrived))
        diff = self._diff(rows).persist()
        try:
            found = events.filter(F.col(OP) == DELETE).select(*keys, SEQ).distinct()
            state = found.select(
                *keys,
                F.col(SEQ).alias(STATE_SEQ),
                F.lit(True).alias(STATE_DELETED),
                F.current_timestamp().cast("timestamp").alias(STATE_AT),
            )
            on = self._keys_equal("t", "s") + f" AND t.`{START_AT}` = s.`{START_AT}`"
            every = [f"`{c}`" for c in [*plan.columns, START_AT, END_AT]]
            clauses = [
                api.Clause("matched", "delete", f"s.{CHANGE} = 'delete'"),
                api.Clause(
                    "matched",
                    "update",
                    f"s.{CHANGE} = 'update'",
                    {c: F.col(f"s.{c}") for c in every},
                ),
                api.Clause(
                    "not_matched",
                    "insert",
                    f"s.{CHANGE} = 'insert'",
                    {c: F.col(f"s.{c}") for c in every},
                ),
            ]
            # the deletes are appended: one seen again later is read twice, counted once
            return self._commit(diff, batch_id, on, clauses, state)
        finally:
            diff.unpersist()

    def _ordered(self, events: DataFrame) -> DataFrame:
        """Each key's events in sequence order, each marked with whether it opens a version
        (``OPENS``) and the version it belongs to; every window shares the one shuffle by
        key and the one sort."""
        plan = self.plan
        keys = list(plan.keys)
        # one event per key, sequence value and kind: a known version over an arrival
        order = Window.partitionBy(*keys).orderBy(SEQ, OP, PRIOR)
        upto = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
        repeat = F.lag(SEQ).over(order).eqNullSafe(F.col(SEQ)) & F.lag(OP).over(order).eqNullSafe(
            F.col(OP)
        )
        events = events.withColumn("__hw_repeat", repeat).filter(~F.col("__hw_repeat"))
        if plan.spec.ignore_null_updates:  # a null takes the value before it, since a delete
            events = events.withColumn(
                "__hw_era", F.sum((F.col(OP) == DELETE).cast("int")).over(upto)
            )
            era = (
                Window.partitionBy(*keys, "__hw_era")
                .orderBy(SEQ, OP)
                .rowsBetween(Window.unboundedPreceding, Window.currentRow)
            )
            data = [c for c in plan.columns if c not in keys]
            events = events.select(
                *[
                    F.last(F.col(f"`{c}`"), ignorenulls=True).over(era).alias(c)
                    if c in data
                    else F.col(f"`{c}`")
                    for c in plan.columns
                ],
                SEQ,
                OP,
                PRIOR,
                WAS,
            )
        tracked = F.struct(*[F.col(f"`{c}`") for c in plan.tracked]) if plan.tracked else F.lit(1)
        events = events.withColumn("__hw_tracked", tracked)
        opens = (F.col(OP) == UPSERT) & (
            F.lag(OP).over(order).isNull()
            | (F.lag(OP).over(order) == DELETE)
            | ~F.lag("__hw_tracked").over(order).eqNullSafe(F.col("__hw_tracked"))
        )
        events = events.withColumn(OPENS, opens)
        return events.withColumn("__hw_version", F.sum(F.col(OPENS).cast("int")).over(upto))

    def _diff(self, rows: DataFrame) -> DataFrame:
        """The rows to write, from the ordered events: each version (its columns from its
        events; open until a delete or the next version) that is new or differs from the
        target's row at its start, and a delete of each target row that no longer starts
        a version (a late event before it, with the same tracked values, absorbed it).
        Both come out of one aggregate: a second pass over ``rows`` would scan and shuffle
        the target's rows again."""
        plan = self.plan
        keys = list(plan.keys)
        rest = [c for c in [*plan.columns, END_AT] if c not in keys]
        untracked = [c for c in plan.columns if c not in keys and c not in plan.tracked]
        upsert_seq = F.when(F.col(OP) == UPSERT, F.col(SEQ))
        versions = (
            rows.filter("__hw_version > 0")  # deletes before any version: no row
            .groupBy(*keys, "__hw_version")
            .agg(
                *[F.min_by(F.col(f"`{c}`"), upsert_seq).alias(c) for c in plan.tracked],
                *[F.max_by(F.col(f"`{c}`"), upsert_seq).alias(c) for c in untracked],
                F.min(upsert_seq).alias(START_AT),
                F.min(F.when(F.col(OP) == DELETE, F.col(SEQ))).alias("__hw_closed"),
                # the target's row at the version's start: its opening event's, if known
                F.max_by(F.col(WAS), F.col(OPENS).cast("int")).alias(WAS),
                # the starts of the target's rows absorbed into this version
                F.collect_list(F.when(F.col(WAS).isNotNull() & ~F.col(OPENS), F.col(SEQ))).alias(
                    "__hw_absorbed"
                ),
            )
        )
        by_start = Window.partitionBy(*keys).orderBy(START_AT)
        versions = versions.withColumn(
            END_AT, F.coalesce(F.col("__hw_closed"), F.lead(START_AT).over(by_start))
        )
        same = reduce(
            lambda a, b: a & b,
            [F.col(f"`{c}`").eqNullSafe(F.col(WAS).getField(c)) for c in rest],
            F.lit(True),
        )
        change = F.when(F.col(WAS).isNull(), F.lit("insert")).when(~same, F.lit("update"))
        written = F.when(
            change.isNotNull(),
            F.struct(F.col(START_AT), *[F.col(f"`{c}`") for c in rest], change.alias(CHANGE)),
        )
        absorbed = F.transform(
            F.col("__hw_absorbed"),
            lambda start: F.struct(
                start.alias(START_AT),
                *[F.lit(None).cast(plan.schema[c].dataType).alias(c) for c in rest],
                F.lit("delete").alias(CHANGE),
            ),
        )
        out = versions.select(
            *[F.col(f"`{k}`") for k in keys],
            F.explode(F.concat(F.array(written), absorbed)).alias("__hw_row"),
        )
        return out.filter(F.col("__hw_row").isNotNull()).select(
            *[F.col(f"`{k}`") for k in keys], "__hw_row.*"
        )
