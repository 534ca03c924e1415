"""AUTO CDC events: a micro-batch of the source as the events SCD1 and SCD2 apply.

Each event has the target's columns, its ``sequence_by`` value (``SEQ``) and whether it is
an upsert or a delete (``OP``); ``where`` drops rows first. A NULL sequence value or key
fails the batch with a named error (such an event has no place in any order). A truncate
becomes a delete of every live key older than it, and events older than a truncate already
applied are dropped (SCD1 only). With ``unavailable_columns`` each event also carries the
names of the columns it does not have (``UNAVAILABLE``): :func:`available` tells SCD1 and
SCD2 which values to take and which to carry forward from before the event.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from headwater.pipelines.cdc.state import STATE_DELETED, STATE_SEQ, CdcState
from headwater.pipelines.define.auto_cdc import (
    CHANGE_TYPE,
    COMMIT_VERSION,
    CdcPlan,
    expression,
)

SEQ = "__hw_seq"
OP = "__hw_op"
UPSERT, DELETE = 0, 1  # on one sequence value an upsert sorts before a delete
TRUNCATE = "__hw_truncate"
UNAVAILABLE = "__hw_unavailable"
NULL_SEQUENCE = (
    "[PIPELINE_AUTO_CDC_NULL_SEQUENCE] AUTO CDC from '{source}': an event has a NULL "
    "sequence_by value ({sequence}), so it cannot be ordered. Filter such events out "
    "(where=...), or give sequence_by a value for every event."
)
NULL_KEY = (
    "[PIPELINE_AUTO_CDC_NULL_KEY] AUTO CDC from '{source}': an event has a NULL key ({keys})."
)


def batch_events(plan: CdcPlan, state: CdcState, batch: DataFrame) -> DataFrame:
    """The batch as events: the target's columns, ``SEQ`` and ``OP``."""
    spec = plan.spec
    seq = expression(spec, "sequence_by")
    assert seq is not None
    where = expression(spec, "where")
    if where is not None:
        batch = batch.filter(where)
    deletes = expression(spec, "apply_as_deletes")
    if plan.change_feed:
        batch, deletes = feed_changes(plan, batch, deletes)
    truncates = expression(spec, "apply_as_truncates")
    keys_text = ", ".join(plan.keys)
    checked_seq = F.when(
        seq.isNull(),
        F.raise_error(F.lit(NULL_SEQUENCE.format(source=spec.source, sequence=spec.sequence_by))),
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
        truncate.alias(TRUNCATE),
        *([F.col(f"`{plan.unavailable}`").alias(UNAVAILABLE)] if plan.unavailable else []),
    )
    events = events.filter(
        F.col(TRUNCATE)
        | F.when(
            any_null_key,
            F.raise_error(F.lit(NULL_KEY.format(source=spec.source, keys=keys_text))),
        ).otherwise(F.lit(True))
    )
    if truncates is None:
        return events.drop(TRUNCATE)
    return truncates_as_deletes(plan, state, events)


def feed_changes(
    plan: CdcPlan, batch: DataFrame, deletes: Column | None
) -> tuple[DataFrame, Column]:
    """A Delta table's change feed as events: the pre-images of updates dropped (the
    post-image is the row), deletes from ``_change_type`` unless ``apply_as_deletes``
    says otherwise, and a delete dropped when its commit also inserts the key (an
    overwrite, which the feed shows as the old rows deleted and the new ones inserted):
    in one commit the row written is what stands."""
    change = F.col(f"`{CHANGE_TYPE}`")
    batch = batch.filter(change != F.lit("update_preimage"))
    if deletes is None:
        deletes = change == F.lit("delete")
    commit = Window.partitionBy(*[F.col(f"`{k}`") for k in plan.keys], F.col(f"`{COMMIT_VERSION}`"))
    written = F.max((~F.coalesce(deletes, F.lit(False))).cast("int")).over(commit) == 1
    batch = batch.withColumn("__hw_written", written)
    kept = batch.filter(~(F.coalesce(deletes, F.lit(False)) & F.col("__hw_written")))
    return kept.drop("__hw_written"), deletes


def truncates_as_deletes(plan: CdcPlan, state: CdcState, events: DataFrame) -> DataFrame:
    """The events after the last truncate applied, and a delete at the batch's last
    truncate of each key the state knows live and older than it.

    A truncate has no key, so the state remembers it as a row of NULL keys (no event has
    one) deleted at the truncate's sequence value: an event older than it that arrives in
    a later batch, of a key no event named before, is dropped as the truncate would have
    dropped it. The row is a tombstone and is forgotten with the others."""
    known = state.read()
    no_key = reduce(lambda a, b: a & b, [F.col(f"`{k}`").isNull() for k in plan.keys])
    applied = known.filter(no_key).agg(F.max(STATE_SEQ)).first()
    if applied is not None and applied[0] is not None:
        events = events.filter(F.col(SEQ) > F.lit(applied[0]))
    last = events.filter(TRUNCATE).agg(F.max(SEQ)).first()
    rows = events.filter(~F.col(TRUNCATE)).drop(TRUNCATE)
    if last is None or last[0] is None:
        return rows
    live = known.filter(~F.col(STATE_DELETED) & (F.col(STATE_SEQ) < F.lit(last[0])))
    marker = known.sparkSession.range(1).select(
        *[F.lit(None).cast(plan.schema[k].dataType).alias(k) for k in plan.keys]
    )
    synthetic = live.unionByName(marker, allowMissingColumns=True).select(
        *[
            F.col(f"`{c}`")
            if c in plan.keys
            else F.lit(None).cast(plan.schema[c].dataType).alias(c)
            for c in plan.columns
        ],
        F.lit(last[0]).alias(SEQ),
        F.lit(DELETE).alias(OP),
        *([F.lit(None).cast("array<string>").alias(UNAVAILABLE)] if plan.unavailable else []),
    )
    return rows.filter(F.col(SEQ) > F.lit(last[0])).unionByName(synthetic)


def available(plan: CdcPlan, column: str, names: Column | None = None) -> Column:
    """Whether an event carries ``column``: not among the names in ``names`` (default:
    the events' ``UNAVAILABLE``; always true without ``unavailable_columns``)."""
    if plan.unavailable is None:
        return F.lit(True)
    listed = F.coalesce(names if names is not None else F.col(UNAVAILABLE), F.array())
    return ~F.exists(listed, lambda name: F.lower(name) == F.lit(column.lower()))
