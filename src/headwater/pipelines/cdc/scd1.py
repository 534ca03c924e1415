"""AUTO CDC SCD type 1: one batch of events becomes one MERGE of each key's newest row.

A batch's events no newer than what the state (or the target's sequence column) knows of
their key are dropped; per key the newest remaining event wins (with
``ignore_null_updates`` each column keeps its own clock instead: :mod:`.scd1_nulls`). With
``unavailable_columns`` a column an event does not carry takes the newest value of the
key's batch events since their last delete that carry it, else (no delete in the batch)
the target's own. The target commits first, then the state: a batch replayed after a crash
between the two skips the target's MERGE (already recorded) and the state catches up.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from headwater import api
from headwater.pipelines.cdc import scd1_nulls
from headwater.pipelines.cdc.events import DELETE, OP, SEQ, UPSERT, available
from headwater.pipelines.cdc.state import (
    STATE_AT,
    STATE_DELETED,
    STATE_SEQ,
    CdcResult,
    CdcState,
    append_state,
    commit_target,
    keys_equal,
    merge_state,
)
from headwater.pipelines.define.auto_cdc import CdcPlan


def sequence_in_target(plan: CdcPlan) -> str | None:
    """The target's column telling how new each live key is, when it can: the target
    keeps the sequence column, nulls are values (no ``ignore_null_updates``) and there are
    no truncates (which need every live key's sequence in the state). The state then
    holds tombstones only, appended."""
    spec = plan.spec
    if spec.ignore_null_updates or spec.apply_as_truncates:
        return None
    return plan.sequence_column


def apply_scd1(
    plan: CdcPlan,
    state_table: CdcState,
    target: api.TableDoor,
    app_id: str,
    events: DataFrame,
    batch_id: int,
) -> CdcResult:
    if plan.spec.ignore_null_updates:
        return apply_ignoring_nulls(plan, state_table, target, (app_id, batch_id), events)
    keys = list(plan.keys)
    in_target = sequence_in_target(plan)
    state = state_table.rows()
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
    data = list(plan.data)
    order = F.struct(F.col(SEQ), F.col(OP))  # on a tie, a delete wins (as in SDP)
    values = [F.max_by(F.col(f"`{c}`"), order).alias(c) for c in data]
    if plan.unavailable:
        newer, values = carried_forward(plan, newer, order)
    changes = (
        newer.groupBy(*keys)
        .agg(
            *values,
            F.max(SEQ).alias(SEQ),
            F.max_by(F.col(OP), order).alias(OP),
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
                {f"`{c}`": updated(plan, i, c) for i, c in enumerate(data)},
            ),
            api.Clause(
                "not_matched",
                "insert",
                f"s.{OP} = {UPSERT}",
                {f"`{c}`": F.col(f"s.`{c}`") for c in plan.columns},
            ),
        ]
        rows = changes.select(
            *keys,
            F.col(SEQ).alias(STATE_SEQ),
            (F.col(OP) == DELETE).alias(STATE_DELETED),
            F.when(F.col(OP) == DELETE, F.current_timestamp()).cast("timestamp").alias(STATE_AT),
        )
        txn = (app_id, batch_id)
        result = commit_target(target, changes, txn, keys_equal(plan, "t", "s"), clauses)
        if in_target:  # tombstones only, appended: each is newer than its key's before
            append_state(state_table, rows.where(F.col(STATE_DELETED)), txn)
        else:
            upsert = [api.Clause("matched", "update"), api.Clause("not_matched", "insert")]
            merge_state(state_table, rows, txn, upsert)
        return result
    finally:
        changes.unpersist()


def carried_forward(
    plan: CdcPlan, events: DataFrame, order: Column
) -> tuple[DataFrame, list[Column]]:
    """``unavailable_columns``: each column's value is the newest of the key's events
    (after its last delete in the batch) that carry it, and ``__hw_keep_<i>`` whether none
    does and the batch deleted nothing, so the target keeps its own value."""
    last_delete = F.max(F.when(F.col(OP) == DELETE, F.col(SEQ))).over(
        Window.partitionBy(*plan.keys)
    )
    events = events.withColumn("__hw_ld", last_delete)
    after = F.col("__hw_ld").isNull() | (F.col(SEQ) > F.col("__hw_ld"))
    values = []
    for i, c in enumerate(plan.data):
        usable = (F.col(OP) == UPSERT) & available(plan, c) & after
        values.append(F.max_by(F.col(f"`{c}`"), F.when(usable, order)).alias(c))
        found = F.max(usable.cast("int")) == 1
        values.append((~found & F.max("__hw_ld").isNull()).alias(f"__hw_keep_{i}"))
    return events, values


def updated(plan: CdcPlan, i: int, c: str) -> Column:
    """The MERGE's new value of the target's column ``c`` (the ``i``-th data column)."""
    if not plan.unavailable:
        return F.col(f"s.`{c}`")
    return F.when(F.col(f"s.__hw_keep_{i}"), F.col(f"t.`{c}`")).otherwise(F.col(f"s.`{c}`"))


def apply_ignoring_nulls(
    plan: CdcPlan,
    state_table: CdcState,
    target: api.TableDoor,
    txn: tuple[str, int],
    events: DataFrame,
) -> CdcResult:
    """A batch with ``ignore_null_updates``: each column on its own clock (see
    :mod:`.scd1_nulls`); the state holds every key, merged."""
    found = scd1_nulls.changes(plan, events, state_table.rows()).persist()
    try:
        on = keys_equal(plan, "t", "s")
        result = commit_target(target, found, txn, on, scd1_nulls.target_clauses(plan))
        upsert = [api.Clause("matched", "update"), api.Clause("not_matched", "insert")]
        rows = scd1_nulls.state_rows(plan, found)
        on_state = keys_equal(plan, "t", "s")
        state_table.table.merge(rows.alias("s"), on_state, upsert, txn, "t", evolve=True)
        return result
    finally:
        found.unpersist()
