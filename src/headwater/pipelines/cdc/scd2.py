"""AUTO CDC SCD type 2: each batch re-decides the history of the keys it touches from every
event those keys ever had, so the target equals applying all events in sequence order
whatever order they arrive in.

The rules, per key, over its events in ``sequence_by`` order (on one value an upsert
before a delete; an event seen again counts once): an upsert opens a version when no
version is open or a tracked column differs from the open one's; otherwise it updates
the open version's untracked columns in place (an identical repeat changes nothing); a
delete closes the open version. With ``ignore_null_updates`` a NULL takes the value
before it, since the last delete; so does a column an event does not carry (named in its
``unavailable_columns``), which the log keeps the names of. :func:`history` states them over plain values.

Every event counts again when a late one lands before it: an event absorbed into a
version (an identical repeat, an untracked change) opens one of its own if the late event
changed the tracked values before it. So each batch rebuilds the touched keys' history
from three sources: the state's log (:mod:`.state`: deletes, absorbed events, and the
events opening versions whose rows hold other values than theirs), the target's rows of
those keys (any other version's row is the event that opened it) and the batch. The
rebuild is one shuffle of those rows by key and one sort; the target's rows ride along in
it, so the versions that differ from them come out of the same aggregate, with the events
the log must now keep (:func:`kept_in_log` over plain values).

The state's log commits before the target: a batch replayed after a crash between the
two finds its events in the log (the log's append is skipped) and rebuilds the same
history against the target as it was, so the target's MERGE is the same. (In the other
order, the replay would read back a target that already absorbed the batch.)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from headwater import api
from headwater.pipelines.cdc.events import DELETE, OP, SEQ, UNAVAILABLE, UPSERT, available
from headwater.pipelines.cdc.state import (
    STATE_AT,
    STATE_DELETED,
    STATE_SEQ,
    STATE_UNAVAILABLE,
    CdcResult,
    CdcState,
    append_state,
    commit_target,
    keys_equal,
)
from headwater.pipelines.define.auto_cdc import END_AT, START_AT, CdcPlan

# -- the rules over plain values ------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    """One event of a key: its sequence value, whether it deletes, its non-key values."""

    seq: Any
    delete: bool
    values: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Version:
    """One row of a key's history: its values, from ``start`` until ``end`` (None: open)."""

    start: Any
    end: Any
    values: tuple[Any, ...]


def in_order(events: Iterable[Event]) -> list[Event]:
    """The events by sequence value (an upsert before a delete on one value), each
    (sequence value, kind) once: the first seen counts."""
    seen: dict[tuple[Any, bool], Event] = {}
    for e in events:
        seen.setdefault((e.seq, e.delete), e)
    return sorted(seen.values(), key=lambda e: (e.seq, e.delete))


def history(
    events: Iterable[Event], tracked: Sequence[int], ignore_null_updates: bool = False
) -> list[Version]:
    """A key's versions from all its events (``tracked``: the positions of the values
    whose change opens a version)."""
    out: list[Version] = []
    open_: Version | None = None
    live: tuple[Any, ...] | None = None  # the values since the last delete
    for e in in_order(events):
        if e.delete:
            if open_ is not None:
                out.append(Version(open_.start, e.seq, open_.values))
            open_, live = None, None
            continue
        values = e.values
        if ignore_null_updates and live is not None:
            values = tuple(v if v is not None else was for v, was in zip(values, live, strict=True))
        live = values
        if open_ is not None and all(values[i] == open_.values[i] for i in tracked):
            open_ = Version(open_.start, None, values)  # untracked columns take the newest
            continue
        if open_ is not None:
            out.append(Version(open_.start, e.seq, open_.values))
        open_ = Version(e.seq, None, values)
    if open_ is not None:
        out.append(open_)
    return out


def kept_in_log(
    events: Iterable[Event], tracked: Sequence[int], ignore_null_updates: bool = False
) -> list[Event]:
    """The events the target's rows cannot give back, which the state's log keeps: every
    delete, every upsert absorbed into a version, and each upsert opening a version whose
    row holds other values than the event's own (a newer event's untracked values, NULLs
    filled)."""
    ordered = in_order(events)
    versions = {v.start: v for v in history(ordered, tracked, ignore_null_updates)}
    return [
        e
        for e in ordered
        if e.delete or e.seq not in versions or versions[e.seq].values != e.values
    ]


# -- the same rules over DataFrames ----------------------------------------------------------

SRC = "__hw_src"  # where a row comes from:
LOGGED, HELD, ARRIVED = 0, 1, 2  # the state's log, the target, the batch
EVENT = "__hw_event"  # the row is an event (not one seen again)
WAS = "__hw_was"  # a target row's own values (non-key columns, __END_AT)
OPENS = "__hw_opens"  # the event opens a version
VERSION = "__hw_version"  # the version (per key, counting from 1) the row belongs to
CLOSED = "__hw_closed"
HELD_ROWS = "__hw_held"
NEW_EVENTS = "__hw_new"
CHANGE = "__hw_change"
# A batch of at most this many events broadcasts its keys to the target's scan (as MERGE
# broadcasts such a source): the target's rows then stay where they are read.
BROADCAST_EVENTS = 2_000_000


def filled(column: str) -> str:
    return f"__hw_filled_{column}"


def apply_scd2(
    plan: CdcPlan,
    state: CdcState,
    target: api.TableDoor,
    app_id: str,
    events: DataFrame,
    batch_id: int,
) -> CdcResult:
    """Apply one batch (``events``, persisted by the caller: read for the keys and the
    history)."""
    versions = with_ends(plan, aggregate(plan, ordered(plan, known(plan, state, target, events))))
    versions = versions.persist()
    try:
        txn = (app_id, batch_id)
        append_state(state, log_rows(plan, versions), txn)
        on = keys_equal(plan, "t", "s") + f" AND t.`{START_AT}` = s.`{START_AT}`"
        return commit_target(target, diff(plan, versions), txn, on, merge_clauses(plan))
    finally:
        versions.unpersist()


def merge_clauses(plan: CdcPlan) -> list[api.Clause]:
    every = [f"`{c}`" for c in [*plan.columns, START_AT, END_AT]]
    return [
        api.Clause("matched", "delete", f"s.{CHANGE} = 'delete'"),
        api.Clause(
            "matched", "update", f"s.{CHANGE} = 'update'", {c: F.col(f"s.{c}") for c in every}
        ),
        api.Clause(
            "not_matched", "insert", f"s.{CHANGE} = 'insert'", {c: F.col(f"s.{c}") for c in every}
        ),
    ]


def data_columns(plan: CdcPlan) -> list[str]:
    return [c for c in plan.columns if c not in plan.keys]


def known(plan: CdcPlan, state: CdcState, target: api.TableDoor, events: DataFrame) -> DataFrame:
    """The touched keys' rows from the three sources, as events (``SEQ``, ``OP``,
    ``SRC``), the target's with their own values in ``WAS``."""
    keys = list(plan.keys)
    touched = events.select(*keys)  # (duplicates do not change a semi join)
    if events.count() <= BROADCAST_EVENTS:
        touched = F.broadcast(touched)
    columns = [F.col(f"`{c}`") for c in plan.columns]
    rest = [*data_columns(plan), END_AT]
    held = target.read().join(touched, keys, "left_semi")
    rows = held.select(
        *columns,
        F.col(START_AT).alias(SEQ),
        F.lit(UPSERT).alias(OP),
        F.lit(HELD).alias(SRC),
        F.struct(*[F.col(f"`{c}`") for c in rest]).alias(WAS),
    )
    none = F.lit(None).cast(rows.schema[WAS].dataType).alias(WAS)
    carries: list[Column] = []  # the names of the columns each event does not carry
    if plan.unavailable:
        rows = rows.withColumn(UNAVAILABLE, F.lit(None).cast("array<string>"))
        carries = [F.col(UNAVAILABLE)]
    log = state.rows()
    if log is not None:
        logged = log.join(touched, keys, "left_semi")
        present = set(logged.columns)  # a log from before it kept values has deletes only
        rows = rows.unionByName(
            logged.select(
                *[
                    F.col(f"`{c}`")
                    if c in present
                    else F.lit(None).cast(plan.schema[c].dataType).alias(c)
                    for c in plan.columns
                ],
                F.col(STATE_SEQ).alias(SEQ),
                F.when(F.col(STATE_DELETED), F.lit(DELETE)).otherwise(F.lit(UPSERT)).alias(OP),
                F.lit(LOGGED).alias(SRC),
                none,
                *(
                    [
                        F.col(STATE_UNAVAILABLE).alias(UNAVAILABLE)
                        if STATE_UNAVAILABLE in present
                        else F.lit(None).cast("array<string>").alias(UNAVAILABLE)
                    ]
                    if plan.unavailable
                    else []
                ),
            )
        )
    arrived = events.select(*columns, SEQ, OP, F.lit(ARRIVED).alias(SRC), none, *carries)
    return rows.unionByName(arrived)


def ordered(plan: CdcPlan, rows: DataFrame) -> DataFrame:
    """Each key's rows in sequence order, each event marked with whether it opens a
    version (``OPENS``) and every row with the version it belongs to (``VERSION``, 0
    before any); every window shares the one shuffle by key and the one sort."""
    keys = list(plan.keys)
    data = data_columns(plan)
    # on one sequence value and kind: the log's event, else the target's, else the batch's
    order = Window.partitionBy(*keys).orderBy(SEQ, OP, SRC)
    before = order.rowsBetween(Window.unboundedPreceding, -1)
    upto = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    repeat = F.lag(SEQ).over(order).eqNullSafe(F.col(SEQ)) & F.lag(OP).over(order).eqNullSafe(
        F.col(OP)
    )
    rows = rows.withColumn(EVENT, ~repeat)
    is_upsert = F.col(EVENT) & (F.col(OP) == UPSERT)
    values: dict[str, Column] = {c: F.col(f"`{c}`") for c in data}
    if plan.spec.ignore_null_updates or plan.unavailable:
        # a null (an unavailable value) takes the value before it, since a delete
        deletes = (F.col(EVENT) & (F.col(OP) == DELETE)).cast("int")
        rows = rows.withColumn("__hw_era", F.sum(deletes).over(upto))
        era = (
            Window.partitionBy(*keys, "__hw_era")
            .orderBy(SEQ, OP, SRC)
            .rowsBetween(Window.unboundedPreceding, Window.currentRow)
        )
        values = {c: carried(plan, c, v, is_upsert, era) for c, v in values.items()}
    rows = rows.select("*", *[v.alias(filled(c)) for c, v in values.items()])
    tracked = F.struct(*[F.col(filled(c)) for c in plan.tracked]) if plan.tracked else F.lit(1)
    prev_op = F.last(F.when(F.col(EVENT), F.col(OP)), ignorenulls=True).over(before)
    prev_tracked = F.last(F.when(F.col(EVENT), tracked), ignorenulls=True).over(before)
    opens = is_upsert & (prev_op.isNull() | (prev_op == DELETE) | ~prev_tracked.eqNullSafe(tracked))
    rows = rows.withColumn(OPENS, opens)
    return rows.withColumn(VERSION, F.sum(F.col(OPENS).cast("int")).over(upto))


def carried(plan: CdcPlan, c: str, v: Column, is_upsert: Column, era: Any) -> Column:
    """Column ``c``'s value at each row: the newest of the era's upserts that carry it (a
    NULL is not carried with ``ignore_null_updates``, an unavailable value never is)."""
    if not plan.unavailable:
        return F.last(F.when(is_upsert, v), ignorenulls=True).over(era)
    usable = is_upsert & available(plan, c)
    if plan.spec.ignore_null_updates:
        usable = usable & v.isNotNull()
    # (wrapped: a NULL an event carries is a value to take, not one last() skips)
    return F.last(F.when(usable, F.struct(v.alias("v"))), ignorenulls=True).over(era)["v"]


def aggregate(plan: CdcPlan, rows: DataFrame) -> DataFrame:
    """One row per key and version: its values (the tracked ones of its first event, the
    others of its newest), its start and the delete closing it, the target's rows in it
    and the events not yet in the log."""
    keys = list(plan.keys)
    data = data_columns(plan)
    upsert_seq = F.when(F.col(EVENT) & (F.col(OP) == UPSERT), F.col(SEQ))
    raw = F.struct(
        *[F.col(f"`{c}`") for c in data],
        F.col(SEQ).alias(SEQ),
        F.col(OP).alias(OP),
        F.col(OPENS).alias(OPENS),
        *([F.col(UNAVAILABLE).alias(UNAVAILABLE)] if plan.unavailable else []),
    )
    held = F.struct(F.col(SEQ).alias(START_AT), F.col(WAS).alias(WAS))
    return rows.groupBy(*keys, VERSION).agg(
        *[
            (F.min_by if c in plan.tracked else F.max_by)(F.col(filled(c)), upsert_seq).alias(c)
            for c in data
        ],
        F.min(upsert_seq).alias(START_AT),
        F.min(F.when(F.col(EVENT) & (F.col(OP) == DELETE), F.col(SEQ))).alias(CLOSED),
        F.collect_list(F.when(F.col(SRC) == HELD, held)).alias(HELD_ROWS),
        F.collect_list(F.when(F.col(EVENT) & (F.col(SRC) != LOGGED), raw)).alias(NEW_EVENTS),
    )


def with_ends(plan: CdcPlan, versions: DataFrame) -> DataFrame:
    """Each version's end: the delete closing it, else the next version's start."""
    by_start = Window.partitionBy(*plan.keys).orderBy(START_AT)
    end = F.coalesce(F.col(CLOSED), F.lead(START_AT).over(by_start))
    return versions.withColumn(END_AT, end)


def all_equal(pairs: Iterable[tuple[Column, Column]]) -> Column:
    return reduce(lambda a, b: a & b, [x.eqNullSafe(y) for x, y in pairs], F.lit(True))


def diff(plan: CdcPlan, versions: DataFrame) -> DataFrame:
    """The target's rows to write: each version new or different from the target's row at
    its start, and a delete of each target row no version starts at any more."""
    keys = list(plan.keys)
    rest = [*data_columns(plan), END_AT]
    start = F.col(START_AT)
    at_start = F.filter(F.col(HELD_ROWS), lambda h: h[START_AT] == start)
    was = F.try_element_at(at_start, F.lit(1)).getField(WAS)
    same = all_equal((F.col(f"`{c}`"), was.getField(c)) for c in rest)
    change = (
        F.when(start.isNull(), F.lit(None))
        .when(was.isNull(), F.lit("insert"))
        .when(~same, F.lit("update"))
    )
    written = F.when(
        change.isNotNull(),
        F.struct(start, *[F.col(f"`{c}`") for c in rest], change.alias(CHANGE)),
    )
    gone = F.transform(
        F.filter(F.col(HELD_ROWS), lambda h: ~h[START_AT].eqNullSafe(start)),
        lambda h: F.struct(
            h[START_AT].alias(START_AT),
            *[F.lit(None).cast(plan.schema[c].dataType).alias(c) for c in rest],
            F.lit("delete").alias(CHANGE),
        ),
    )
    out = versions.select(
        *[F.col(f"`{k}`") for k in keys],
        F.explode(F.concat(F.array(written), gone)).alias("__hw_row"),
    )
    return out.filter(F.col("__hw_row").isNotNull()).select(
        *[F.col(f"`{k}`") for k in keys], "__hw_row.*"
    )


def log_rows(plan: CdcPlan, versions: DataFrame) -> DataFrame:
    """The events the log must now keep (as :func:`kept_in_log` decides): the batch's and
    the target's rows' events not yet in it that are deletes, absorbed into a version, or
    the start of a version holding other values than theirs (its untracked columns took a
    newer event's, or NULLs were filled)."""
    keys = list(plan.keys)
    data = data_columns(plan)
    e = F.col("__hw_e")
    equal = all_equal((e.getField(c), F.col(f"`{c}`")) for c in data)
    needed = (e.getField(OP) == DELETE) | ~e.getField(OPENS) | ~equal
    if plan.unavailable:  # its row cannot tell which of its values it did not carry
        needed = needed | (F.size(F.coalesce(e.getField(UNAVAILABLE), F.array())) > 0)
    found = versions.select(
        *[F.col(f"`{c}`") for c in plan.columns], F.explode(NEW_EVENTS).alias("__hw_e")
    ).filter(needed)
    return found.select(
        *[F.col(f"`{k}`") for k in keys],
        *[e.getField(c).alias(c) for c in data],
        e.getField(SEQ).alias(STATE_SEQ),
        (e.getField(OP) == DELETE).alias(STATE_DELETED),
        F.current_timestamp().cast("timestamp").alias(STATE_AT),
        *([e.getField(UNAVAILABLE).alias(STATE_UNAVAILABLE)] if plan.unavailable else []),
    )
