"""AUTO CDC SCD type 1 with ``ignore_null_updates``: each column on its own clock.

With ``ignore_null_updates`` an upsert's NULL means "unchanged", so a key's row is not the
newest event's: each column holds the newest non-null value since the key's last delete.
An event that arrives late (older than what was applied for its key) may still own a
column: its non-null value is newer than that column's, or a late delete is newer than it.
So the state keeps, per key, the newest event applied, the newest delete, and per column
the sequence value of the event whose value the target holds (``__seq__<column>``); a
batch is folded into that per column, exactly as applying every event in sequence order:

* a column takes the batch's newest usable value (an upsert, non-null, after the last
  delete) when it is newer than the column's own sequence value; else it keeps the
  target's value if that is still after the last delete; else it is NULL;
* the key is deleted when its newest delete is at least as new as its newest upsert (on
  a tie the delete wins, as in Spark's pipelines);
* keys the batch changes nothing about are left out of both commits.

A state written before it kept these columns reads as "every column as new as its key".
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from headwater import api
from headwater.pipelines.cdc.events import DELETE, OP, SEQ, UPSERT, available
from headwater.pipelines.cdc.state import (
    LAST_DELETE,
    STATE_AT,
    STATE_DELETED,
    STATE_SEQ,
    column_seq,
)
from headwater.pipelines.define.auto_cdc import CdcPlan

KEEP, TAKE, CLEAR = 0, 1, 2  # a column's new value: the target's, the batch's, NULL


def data_columns(plan: CdcPlan) -> list[str]:
    return [c for c in plan.columns if c not in plan.keys]


def _state_column(state: DataFrame, name: str, fallback: Column) -> Column:
    return F.col(f"`{name}`") if name in state.columns else fallback


def known_state(plan: CdcPlan, state: DataFrame | None) -> DataFrame | None:
    """The state as the columns :func:`changes` joins: ``__hw_prev`` (newest event),
    ``__hw_gone``, ``__hw_prev_delete`` and ``__hw_pseq_<i>`` per data column."""
    if state is None:
        return None
    live_seq = F.when(~F.col(STATE_DELETED), F.col(STATE_SEQ))
    return state.select(
        *plan.keys,
        F.col(STATE_SEQ).alias("__hw_prev"),
        F.col(STATE_DELETED).alias("__hw_gone"),
        _state_column(state, LAST_DELETE, F.when(F.col(STATE_DELETED), F.col(STATE_SEQ))).alias(
            "__hw_prev_delete"
        ),
        *[
            _state_column(state, column_seq(c), live_seq).alias(f"__hw_pseq_{i}")
            for i, c in enumerate(data_columns(plan))
        ],
    )


def changes(plan: CdcPlan, events: DataFrame, state: DataFrame | None) -> DataFrame:
    """One row per key the batch changes: the keys, each data column's batch value and
    what to do with it (``__hw_take_<i>``: :data:`KEEP`, :data:`TAKE` or :data:`CLEAR`),
    the key's newest sequence value (``SEQ``), ``OP`` (a delete or an upsert) and the
    state's new columns (``__hw_last_delete``, ``__hw_cseq_<i>``)."""
    keys = list(plan.keys)
    data = data_columns(plan)
    seq_type = plan.sequence_type
    known = known_state(plan, state)
    if known is None:
        nothing = F.lit(None).cast(seq_type)
        events = events.select(
            "*",
            nothing.alias("__hw_prev"),
            F.lit(None).cast("boolean").alias("__hw_gone"),
            nothing.alias("__hw_prev_delete"),
            *[nothing.alias(f"__hw_pseq_{i}") for i in range(len(data))],
        )
    else:
        events = events.join(known, keys, "left")
    by_key = Window.partitionBy(*keys)
    batch_delete = F.max(F.when(F.col(OP) == DELETE, F.col(SEQ))).over(by_key)
    events = events.withColumn("__hw_ld", F.greatest(batch_delete, F.col("__hw_prev_delete")))
    after_delete = F.col("__hw_ld").isNull() | (F.col(SEQ) > F.col("__hw_ld"))
    values: list[Column] = []
    for i, c in enumerate(data):
        carried = available(plan, c)  # an unavailable value is left out as a NULL is
        usable = (F.col(OP) == UPSERT) & F.col(f"`{c}`").isNotNull() & carried & after_delete
        at = F.when(usable, F.col(SEQ))
        values += [F.max_by(F.col(f"`{c}`"), at).alias(c), F.max(at).alias(f"__hw_bseq_{i}")]
    folded = events.groupBy(*keys).agg(
        *values,
        F.max(SEQ).alias("__hw_latest"),
        F.max(F.when(F.col(OP) == UPSERT, F.col(SEQ))).alias("__hw_upsert"),
        F.first("__hw_ld").alias("__hw_last_delete"),
        F.first("__hw_prev").alias("__hw_prev"),
        F.first("__hw_gone").alias("__hw_gone"),
        F.first("__hw_prev_delete").alias("__hw_prev_delete"),
        *[F.first(f"__hw_pseq_{i}").alias(f"__hw_pseq_{i}") for i in range(len(data))],
    )
    last_delete = F.col("__hw_last_delete")
    live_before = F.when(~F.coalesce(F.col("__hw_gone"), F.lit(False)), F.col("__hw_prev"))
    newest_upsert = F.greatest(F.col("__hw_upsert"), live_before)
    deleted = last_delete.isNotNull() & (newest_upsert.isNull() | (last_delete >= newest_upsert))
    takes, seqs, moved = [], [], []
    for i in range(len(data)):
        batch_seq, kept_seq = F.col(f"__hw_bseq_{i}"), F.col(f"__hw_pseq_{i}")
        kept = kept_seq.isNotNull() & (last_delete.isNull() | (kept_seq > last_delete))
        newer = batch_seq.isNotNull() & (~kept | (batch_seq > kept_seq))
        take = F.when(newer, F.lit(TAKE)).when(kept, F.lit(KEEP)).otherwise(F.lit(CLEAR))
        takes.append(F.when(deleted, F.lit(CLEAR)).otherwise(take).alias(f"__hw_take_{i}"))
        seq = F.when(newer, batch_seq).when(kept, kept_seq)
        seqs.append(
            F.when(deleted, F.lit(None)).otherwise(seq).cast(seq_type).alias(f"__hw_cseq_{i}")
        )
        moved.append(newer | (~kept & kept_seq.isNotNull()))
    prev, prev_delete = F.col("__hw_prev"), F.col("__hw_prev_delete")
    delete_moved = last_delete.isNotNull() & (prev_delete.isNull() | (last_delete > prev_delete))
    was_gone = F.coalesce(F.col("__hw_gone"), F.lit(False))
    conditions = [prev.isNull(), F.col("__hw_latest") > prev, delete_moved, deleted != was_gone]
    changed = reduce(lambda a, b: a | b, [*conditions, *moved])
    return folded.where(changed).select(
        *keys,
        *[F.col(f"`{c}`") for c in data],
        *takes,
        *seqs,
        F.greatest(F.col("__hw_latest"), prev).alias(SEQ),
        F.when(deleted, F.lit(DELETE)).otherwise(F.lit(UPSERT)).alias(OP),
        last_delete.alias("__hw_last_delete"),
    )


def target_clauses(plan: CdcPlan) -> list[api.Clause]:
    """The target's MERGE: a deleted key goes, a live one takes each column as decided."""

    def taken(i: int, c: str) -> Column:
        return F.when(F.col(f"s.__hw_take_{i}") == TAKE, F.col(f"s.`{c}`"))

    def value(i: int, c: str) -> Column:
        return taken(i, c).when(F.col(f"s.__hw_take_{i}") == KEEP, F.col(f"t.`{c}`"))

    data = data_columns(plan)
    return [
        api.Clause("matched", "delete", f"s.{OP} = {DELETE}"),
        api.Clause(
            "matched",
            "update",
            f"s.{OP} = {UPSERT}",
            {f"`{c}`": value(i, c) for i, c in enumerate(data)},
        ),
        api.Clause(
            "not_matched",
            "insert",
            f"s.{OP} = {UPSERT}",
            {
                **{f"`{k}`": F.col(f"s.`{k}`") for k in plan.keys},
                **{f"`{c}`": taken(i, c) for i, c in enumerate(data)},
            },
        ),
    ]


def state_rows(plan: CdcPlan, found: DataFrame) -> DataFrame:
    """The state's new row of each changed key."""
    return found.select(
        *plan.keys,
        F.col(SEQ).alias(STATE_SEQ),
        (F.col(OP) == DELETE).alias(STATE_DELETED),
        F.when(F.col(OP) == DELETE, F.current_timestamp()).cast("timestamp").alias(STATE_AT),
        F.col("__hw_last_delete").alias(LAST_DELETE),
        *[F.col(f"__hw_cseq_{i}").alias(column_seq(c)) for i, c in enumerate(data_columns(plan))],
    )
