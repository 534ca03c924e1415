"""A materialized view's refresh plan, from facts alone (no Spark, no I/O).

The facts: the view's refresh policy, what its last refresh recorded (the versions of its
inputs, its definition, its own version then), the inputs' versions now and the kind of
change in between, whether its query is deterministic and whether it reads only
versioned inputs. The plan names the technique, why, and every technique considered —
what the event log's ``planning_information`` event and the progress lines show, so a
user can always see why a view was recomputed.

Techniques are used only where they are provably exact. Built so far: *no-op* (nothing an
exact result depends on changed), *append* (only rows were appended to inputs whose rows
map to the view's rows one by one: the query runs on the new rows and its result is
appended), *group aggregate* (only rows were appended to the inputs of one GROUP BY whose
aggregates combine — sum, count, min, max, count_if, and avg of integral or decimal values
through an exact sum and count kept beside the view (:mod:`.averages`): the query runs on
the new rows and its groups merge into the view's; or rows were also updated or deleted in
inputs whose change data feed has them, and the aggregates can take rows back — counts,
exact sums and such averages, with a ``count(*)`` to tell when a group empties: the query
runs on the removed rows too, and their groups are subtracted), *partition overwrite*
(the inputs changed only in partitions their logs name, and the view's partition column
is theirs carried unchanged: those partitions are recomputed and replaced,
:mod:`.partition_plan`) and *full recompute*. Where both the group aggregate and the
partition overwrite apply, a cost model chooses (:func:`.partition_plan.prefer`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import Enum

from headwater.errors import PipelineDefinitionError
from headwater.pipelines.define.elements import RefreshPolicy
from headwater.pipelines.refresh import key_plan, partition_plan
from headwater.pipelines.refresh.averages import Average
from headwater.pipelines.refresh.key_plan import Keyed
from headwater.pipelines.refresh.partition_plan import Overwrite, Partitioned


class Technique(str, Enum):
    NO_OP = "NO_OP"
    APPEND = "APPEND"
    GROUP_AGGREGATE = "GROUP_AGGREGATE"
    PARTITION_OVERWRITE = "PARTITION_OVERWRITE"
    WINDOW_FUNCTION = "WINDOW_FUNCTION"  # windows' partitions recomputed (affected keys)
    FULL_RECOMPUTE = "FULL_RECOMPUTE"


class Change(str, Enum):
    """What happened to one input between two versions, from its log."""

    NONE = "none"  # no commit changed data (e.g. OPTIMIZE, VACUUM, or no commit at all)
    APPENDS = "appends"  # only rows added
    UPDATES = "updates"  # rows removed or rewritten (UPDATE, DELETE, MERGE, overwrite)
    RESET = "reset"  # its schema or definition changed, or its history is gone


@dataclass(frozen=True)
class Recorded:
    """What a view's refresh recorded in its own commit."""

    inputs: Mapping[str, int]  # input key -> version read
    definition: str  # a digest of the view's query and schema
    version: int | None = None  # the view's version that commit made (read from the log)
    state: str | None = None  # where its averages' sums and counts were kept (if any)


class Sides(str, Enum):
    """Which side of a join may change while its new rows stay the join of the changed
    side's new rows with the other side's rows."""

    EITHER = "either"  # inner and cross joins: one side at a time
    LEFT = "left"  # left outer, semi and anti joins: the right side must not change
    RIGHT = "right"  # right outer joins: the left side must not change


@dataclass(frozen=True)
class Join:
    left: frozenset[str]  # the inputs read under each side
    right: frozenset[str]
    changeable: Sides


class Combine(str, Enum):
    """How a view's aggregate column and the same aggregate of new rows make the new
    value (each exact for appended rows)."""

    SUM = "sum"  # NULL when both are (no non-null value yet)
    ADD = "add"  # counts
    LEAST = "least"  # min (NULLs ignored, as min ignores them)
    GREATEST = "greatest"  # max
    AVERAGE = "avg"  # derived from a kept exact sum and count (:mod:`.averages`)


@dataclass(frozen=True)
class Aggregation:
    """A query that is one GROUP BY over row-wise inputs."""

    keys: tuple[str, ...]  # the view's grouping columns
    columns: Mapping[str, Combine]  # the view's aggregate columns, when all combine
    not_mergeable: str | None = None  # why the aggregates cannot combine, if they cannot
    # Taking rows back (updates, deletes): the column counting a group's rows (count(*)),
    # for each sum the count column that says whether it is NULL (no non-null value left),
    # and why rows cannot be taken back, if they cannot.
    rows: str | None = None
    sum_counts: Mapping[str, str] | None = None
    not_retractable: str | None = None
    averages: tuple[Average, ...] = ()  # the avg columns (kept through sums and counts)


@dataclass(frozen=True)
class Shape:
    """How the query's rows follow from its inputs', from its analysed plan."""

    not_row_wise: str | None  # why the query's rows do not map from input rows one by one
    joins: tuple[Join, ...] = ()  # (under the aggregate, for one)
    aggregate: Aggregation | None = None


@dataclass(frozen=True)
class Facts:
    policy: RefreshPolicy
    definition: str
    recorded: Recorded | None
    view_version: int | None  # the view's latest version now (None: no table yet)
    inputs: Mapping[str, int | None]  # input key -> version now (None: not a Delta table)
    changes: Mapping[str, Change]  # input key -> change since recorded (known inputs)
    deterministic: bool
    unversioned: tuple[str, ...] = ()  # what the query reads that has no version
    shape: Shape = Shape("its plan was not analysed")
    appends_readable: bool = True  # the appended rows can be read alone (not compacted away)
    quarantines: bool = False  # the view sets failing rows aside in a table of their own
    expectations: bool = False  # the view checks its rows against expectations
    view_bytes: int | None = None  # the view's data files' size now
    rewrite_up_to: int = 256 * 1024 * 1024  # bytes: a view this small is rewritten, not merged
    rows_appended: int | None = None  # rows the appended inputs gained (None: not counted)
    rows_in_inputs: int | None = None  # rows the changed inputs hold now
    # With rows updated or deleted: the rows a take-back reads (updates' old and new
    # images, deleted rows, appended rows) by the commits' metrics (None: not known).
    rows_changed: int | None = None
    # Inputs whose change data feed holds every row changed since the recorded version.
    change_feed: frozenset[str] = frozenset()
    # Inputs without it whose removed and added rows are read back from the files their
    # commits removed and added (still there) and their deletion vectors.
    derived: frozenset[str] = frozenset()
    state_readable: bool = True  # the recorded averages' state is still there
    # The view's partitions against its inputs' (partition overwrite; None: not analysed).
    partitioned: Partitioned | None = None
    # The view's rows keyed by input columns (affected keys, :mod:`.key_plan`; None: not
    # analysed, as only a refresh no other technique can do asks).
    keyed: Keyed | None = None


@dataclass(frozen=True)
class Considered:
    technique: Technique
    applicable: bool
    reason: str


@dataclass(frozen=True)
class RefreshPlan:
    technique: Technique
    reason: str
    considered: tuple[Considered, ...]
    full_reason: str | None = None  # why not incremental, when it is a full recompute
    aggregation: Aggregation | None = None  # the groups to merge (group aggregate)
    # group aggregate or affected keys by MERGE (a large view), else the view rewritten
    merge: bool = False
    retract: bool = False  # group aggregate: rows were removed too (read from the change feed)
    view_version: int | None = None  # the view's version the plan was made on
    rows_appended: int | None = None  # (as in the facts: what the event log shows)
    rows_in_inputs: int | None = None
    rows_changed: int | None = None
    # What runs the technique: "spark" (jobs), or "arrow" (a small change on the driver,
    # :mod:`.arrow_refresh`); and why not Arrow, when a group aggregate could not.
    executor: str = "spark"
    executor_reason: str | None = None
    # A view with avg (:mod:`.averages`): the aggregation whose sums and counts are kept,
    # the state read (an incremental refresh) and the one written (every refresh but NO_OP).
    kept: Aggregation | None = None
    state_from: str | None = None
    state_to: str | None = None
    overwrite: Overwrite | None = None  # the partitions to recompute (partition overwrite)
    keyed: Keyed | None = None  # the keys to recompute (affected keys, :mod:`.key_plan`)

    def named(self, written: Mapping[str, str]) -> RefreshPlan:
        """This plan with each input's key in its reasons replaced by ``written[key]``: a
        Delta table outside the pipeline is keyed by its location, and the user knows it
        by the name they read it by (``src.orders``, not ``delta.`/warehouse/...```)."""

        def say(text: str | None) -> str | None:
            return named_text(text, written) if text else text

        return replace(
            self,
            reason=say(self.reason) or self.reason,
            considered=tuple(replace(c, reason=say(c.reason) or c.reason) for c in self.considered),
            full_reason=say(self.full_reason),
            executor_reason=say(self.executor_reason),
        )

    def to_details(self) -> dict[str, object]:
        """``details.planning_information`` of the event log."""
        return {
            "technique_information": [
                {
                    "maintenance_type": f"MAINTENANCE_TYPE_{c.technique.value}",
                    "is_chosen": c.technique == self.technique,
                    "is_applicable": c.applicable,
                    "reason": c.reason,
                }
                for c in self.considered
            ],
            "chosen": self.technique.value,
            "reason": self.reason,
            **({"rows_appended": self.rows_appended} if self.rows_appended is not None else {}),
            **({"input_rows": self.rows_in_inputs} if self.rows_in_inputs is not None else {}),
            **({"rows_changed": self.rows_changed} if self.rows_changed is not None else {}),
            **({"executor": self.executor} if self.technique != Technique.NO_OP else {}),
            **({"executor_reason": self.executor_reason} if self.executor_reason else {}),
        }


def named_text(text: str, written: Mapping[str, str]) -> str:
    """``text`` with each input's key replaced by ``written[key]``, the name the query read
    it by (:meth:`RefreshPlan.named`)."""
    for key, name in written.items():
        text = text.replace(key, name)
    return text


class NotIncrementalizable(PipelineDefinitionError):
    """``REFRESH POLICY INCREMENTAL STRICT`` and no incremental technique applies."""


def plan_refresh(view: str, facts: Facts) -> RefreshPlan:
    """The technique for this refresh of ``view`` (see the module's doc)."""
    plan = _plan(view, facts)
    return replace(
        plan,
        rows_appended=facts.rows_appended,
        rows_in_inputs=facts.rows_in_inputs,
        rows_changed=facts.rows_changed,
    )


def _plan(view: str, facts: Facts) -> RefreshPlan:
    initializing = _initialization(facts)
    no_op = _no_op(facts, initializing)
    if facts.policy == RefreshPolicy.FULL:
        full = Considered(Technique.FULL_RECOMPUTE, True, "the view's refresh policy is FULL")
        return RefreshPlan(Technique.FULL_RECOMPUTE, full.reason, (no_op, full), full.reason)
    if no_op.applicable:
        full = Considered(Technique.FULL_RECOMPUTE, True, "more work for the same rows")
        return RefreshPlan(Technique.NO_OP, no_op.reason, (no_op, full))
    append = _append(facts, initializing)
    grouped = _group_aggregate(facts, initializing)
    partitions, overwrite = _partition_overwrite(facts, initializing)
    considered = (no_op, append, grouped, partitions)
    if overwrite is not None and not append.applicable:
        chosen = partitions
        if grouped.applicable:
            better, why = partition_plan.prefer(facts.partitioned, bool(_changed(facts)[1]))
            chosen = partitions if better else grouped
            chosen = replace(
                chosen, reason=f"{chosen.reason} (chosen over {_other(chosen)}: {why})"
            )
        if chosen.technique == Technique.PARTITION_OVERWRITE:
            full = Considered(Technique.FULL_RECOMPUTE, True, "reads every row again")
            return RefreshPlan(
                chosen.technique,
                chosen.reason,
                (*considered, full),
                view_version=facts.view_version,
                overwrite=overwrite,
            )
        grouped = chosen
    for chosen in (append, grouped):
        if chosen.applicable:
            full = Considered(Technique.FULL_RECOMPUTE, True, "reads every row again")
            return RefreshPlan(
                chosen.technique,
                chosen.reason,
                (*considered, full),
                aggregation=facts.shape.aggregate if chosen is grouped else None,
                merge=chosen is grouped and _merges(facts),
                retract=chosen is grouped and bool(_changed(facts)[1]),
                view_version=facts.view_version,
            )
    keyed = _affected_keys(facts, initializing)
    if keyed is not None and keyed.applicable:
        assert facts.keyed is not None
        full = Considered(Technique.FULL_RECOMPUTE, True, "reads every row again")
        listed: tuple[Considered, ...] = considered + (keyed,)
        if keyed.technique == Technique.GROUP_AGGREGATE:  # (in the aggregate's place)
            if facts.shape.aggregate is not None:  # (why its groups do not combine)
                keyed = replace(keyed, reason=f"{grouped.reason}; {keyed.reason}")
            listed = tuple(keyed if c is grouped else c for c in considered)
        return RefreshPlan(
            keyed.technique,
            keyed.reason,
            (*listed, full),
            view_version=facts.view_version,
            keyed=facts.keyed,
            # a large view's keys replaced by MERGE; expectations check whole rows
            merge=_merges(facts) and not facts.expectations,
        )
    if initializing is not None:
        why = no_op.reason
    else:  # the reason of the technique the query's shape was closest to
        why = grouped.reason if facts.shape.aggregate is not None else append.reason
        if _partitioned(facts):
            why = f"{why}; {partitions.reason}"
        if keyed is not None:
            why = f"{why}; {keyed.reason}"
    if facts.policy == RefreshPolicy.INCREMENTAL_STRICT and initializing is None:
        raise NotIncrementalizable(
            f"[MATERIALIZED_VIEW_NOT_INCREMENTALIZABLE] '{view}' has REFRESH POLICY "
            f"INCREMENTAL STRICT and cannot be refreshed incrementally: {why}. Use AUTO "
            "or INCREMENTAL to allow a full recompute."
        )
    full = Considered(Technique.FULL_RECOMPUTE, True, why)
    return RefreshPlan(Technique.FULL_RECOMPUTE, why, (*considered, full), why)


def _affected_keys(facts: Facts, initializing: str | None) -> Considered | None:
    """Whether the keys the changes touched can be recomputed alone (:mod:`.key_plan`;
    None: the view's keys were not analysed)."""
    if facts.keyed is None:
        return None
    technique = (
        Technique.WINDOW_FUNCTION
        if facts.keyed.kind == key_plan.WINDOW
        else Technique.GROUP_AGGREGATE
    )
    blocked = _not_incremental(facts, initializing)
    if blocked is not None:
        return Considered(technique, False, blocked)
    changed, updated = _changed(facts)
    applies, why = key_plan.decide(
        facts.keyed,
        changed,
        _kinds(facts, changed),
        unread=[k for k in updated if k not in facts.change_feed and k not in facts.derived],
        rows_read=facts.rows_changed if updated else facts.rows_appended,
        rows_total=facts.rows_in_inputs,
        quarantines=facts.quarantines,
        expectations=facts.expectations,
        appends_readable=facts.appends_readable,
    )
    return Considered(technique, applies, why)


def _partition_overwrite(
    facts: Facts, initializing: str | None
) -> tuple[Considered, Overwrite | None]:
    """Whether the changed partitions can be recomputed alone (:mod:`.partition_plan`)."""
    blocked = _not_incremental(facts, initializing)
    if blocked is not None:
        return Considered(Technique.PARTITION_OVERWRITE, False, blocked), None
    changed, _ = _changed(facts)
    found, why = partition_plan.overwrite(facts.partitioned, changed, quarantines=facts.quarantines)
    if found is None:
        return Considered(Technique.PARTITION_OVERWRITE, False, why), None
    assert facts.partitioned is not None
    why = partition_plan.reason(found, facts.partitioned, changed, _kinds(facts, changed))
    return Considered(Technique.PARTITION_OVERWRITE, True, why), found


def _partitioned(facts: Facts) -> bool:
    """The view has a partition column (a failed partition overwrite is worth a reason)."""
    return facts.partitioned is not None and (
        facts.partitioned.column is not None or facts.partitioned.not_derived is not None
    )


def _other(chosen: Considered) -> str:
    if chosen.technique == Technique.PARTITION_OVERWRITE:
        return Technique.GROUP_AGGREGATE.value
    return Technique.PARTITION_OVERWRITE.value


def _initialization(facts: Facts) -> str | None:
    """Why the view must be (re)built from scratch whatever its policy, if it must."""
    recorded = facts.recorded
    if facts.view_version is None:
        return "the view is created"
    if recorded is None:
        return "no earlier refresh recorded its inputs (first refresh, or a full refresh)"
    if recorded.definition != facts.definition:
        return "the view's definition changed"
    if recorded.version is not None and recorded.version != facts.view_version:
        return f"the view was changed outside its refreshes (version {facts.view_version})"
    reset = sorted(k for k, c in facts.changes.items() if c == Change.RESET)
    if reset:
        return f"input {_names(reset)} was reset or changed schema"
    return None


def _no_op(facts: Facts, initializing: str | None) -> Considered:
    blocked = _not_incremental(facts, initializing)
    if blocked is not None:
        return Considered(Technique.NO_OP, False, blocked)
    changed = sorted(k for k in facts.inputs if facts.changes.get(k, Change.UPDATES) != Change.NONE)
    if changed:
        kinds = sorted({facts.changes.get(k, Change.UPDATES).value for k in changed})
        return Considered(
            Technique.NO_OP, False, f"input {_names(changed)} changed ({', '.join(kinds)})"
        )
    return Considered(Technique.NO_OP, True, "no input changed since the last refresh")


def _not_incremental(facts: Facts, initializing: str | None) -> str | None:
    """Why no technique but a recompute can be exact, whatever changed, if so."""
    if initializing is not None:
        return initializing
    if not facts.deterministic:
        return "the query is not deterministic"
    if facts.unversioned:
        return f"the query reads {_names(list(facts.unversioned))}, which has no Delta version"
    assert facts.recorded is not None
    if set(facts.inputs) != set(facts.recorded.inputs):
        return "the view's inputs changed"
    return None


def _append(facts: Facts, initializing: str | None) -> Considered:
    def no(reason: str) -> Considered:
        return Considered(Technique.APPEND, False, reason)

    changed, blocked = _appended(facts, initializing)
    if blocked is not None:
        return no(blocked)
    if facts.shape.not_row_wise is not None:
        return no(f"input {_names(changed)} changed (appends), but {facts.shape.not_row_wise}")
    if facts.quarantines:
        return no("the view quarantines rows: its quarantine table cannot commit with it")
    blocked = _joins_block(facts, changed) or _unreadable(facts)
    if blocked is not None:
        return no(blocked)
    return Considered(
        Technique.APPEND,
        True,
        f"rows were only appended to {_names(changed)} and the query maps rows one by one",
    )


def _group_aggregate(facts: Facts, initializing: str | None) -> Considered:
    def no(reason: str) -> Considered:
        return Considered(Technique.GROUP_AGGREGATE, False, reason)

    blocked = _not_incremental(facts, initializing)
    if blocked is not None:
        return no(blocked)
    changed, updated = _changed(facts)
    aggregate = facts.shape.aggregate
    if aggregate is None:
        return no("the query is not one GROUP BY over its inputs' rows")
    what = f"input {_names(changed)} changed ({_kinds(facts, changed)})"
    if aggregate.not_mergeable is not None:
        return no(f"{what}, but {aggregate.not_mergeable}")
    if updated:
        blocked = _unretractable(facts, updated, aggregate)
        if blocked is not None:
            return no(f"{what}, but {blocked}")
    if aggregate.averages:
        blocked = _unkept(facts)
        if blocked is not None:
            return no(f"{what}, but {blocked}")
    if facts.expectations or facts.quarantines:
        return no("the view's expectations are checked on whole rows, not on merged groups")
    new, total = facts.rows_appended, facts.rows_in_inputs
    if not updated and new is not None and total and new * 2 > total:
        return no(
            f"{new:,} of the inputs' {total:,} rows are new: aggregating them all costs "
            "little more than the new ones and saves combining the groups"
        )
    read, total = facts.rows_changed, facts.rows_in_inputs
    if updated and read is not None and total is not None and read > total:
        return no(
            f"taking the change back reads {read:,} changed rows (updates' old and new "
            f"images, deleted and added rows), more than the {total:,} a recompute reads"
        )
    blocked = _joins_block(facts, changed) or _unreadable(facts)
    if blocked is not None:
        return no(blocked)
    kinds = ", ".join(sorted({c.value for c in aggregate.columns.values()}))
    how = (
        "by a MERGE of the touched groups"
        if _merges(facts)
        else "in one rewrite of the view, smaller than a MERGE's fixed cost"
    )
    if updated:
        fed = [k for k in updated if k in facts.change_feed]
        source = (
            "its change data feed has them"
            if len(fed) == len(updated)
            else "the files its commits removed and added have them"
            if not fed
            else f"the change data feed of {_names(fed)} and the files the others' commits "
            "removed and added have them"
        )
        return Considered(
            Technique.GROUP_AGGREGATE,
            True,
            f"rows of {_names(updated)} were updated or deleted and {source}: the removed "
            f"rows' aggregates ({kinds}) are taken back from their groups and the added "
            f"rows' added, {how}; groups left with no row are deleted",
        )
    return Considered(
        Technique.GROUP_AGGREGATE,
        True,
        f"rows were only appended to {_names(changed)}; their groups' aggregates ({kinds}) "
        f"merge into the view's {how}",
    )


def _unretractable(facts: Facts, updated: list[str], aggregate: Aggregation) -> str | None:
    """Why the rows removed from ``updated`` cannot be taken back from the view's groups,
    if they cannot: their change feed does not have them, or an aggregate cannot lose rows."""
    unread = [k for k in updated if k not in facts.change_feed and k not in facts.derived]
    if unread:
        return (
            f"the rows removed from {_names(unread)} cannot be read back: no change data "
            "feed has them and a file its commits removed is gone (VACUUM) or counts no rows"
        )
    return aggregate.not_retractable


def _unkept(facts: Facts) -> str | None:
    """Why the view's averages' sums and counts cannot be read back, if they cannot."""
    assert facts.recorded is not None
    if facts.recorded.state is None:
        return "no refresh kept its averages' sums and counts yet (this recompute keeps them)"
    if not facts.state_readable:
        return "its averages' kept sums and counts are gone (this recompute keeps them again)"
    return None


def _kinds(facts: Facts, keys: list[str]) -> str:
    return ", ".join(sorted({facts.changes.get(k, Change.UPDATES).value for k in keys}))


def _changed(facts: Facts) -> tuple[list[str], list[str]]:
    """The inputs that changed, and those of them changed by more than appends."""
    changes = {k: facts.changes.get(k, Change.UPDATES) for k in facts.inputs}
    changed = sorted(k for k, c in changes.items() if c != Change.NONE)
    return changed, [k for k in changed if changes[k] != Change.APPENDS]


def _merges(facts: Facts) -> bool:
    """The cost model between the group aggregate's two commits: a view up to
    ``rewrite_up_to`` bytes is rewritten whole with its groups combined (a MERGE's fixed
    cost — measuring the source, pruning, a join per touched file — is seconds, a rewrite
    of a few hundred MB of groups is less); larger views are merged, rewriting only the
    touched files."""
    return facts.view_bytes is None or facts.view_bytes > facts.rewrite_up_to


def _appended(facts: Facts, initializing: str | None) -> tuple[list[str], str | None]:
    """The inputs that changed, and why no technique for appended rows applies whatever
    the query (a recompute is needed, or the change is not appends alone), if none does."""
    blocked = _not_incremental(facts, initializing)
    if blocked is not None:
        return [], blocked
    changed, updated = _changed(facts)
    if not updated:
        return changed, None
    return changed, f"input {_names(updated)} changed ({_kinds(facts, updated)})"


def _joins_block(facts: Facts, changed: list[str]) -> str | None:
    """Why the query's joins make appended rows not enough, if they do: the new rows of a
    join are those of the changed side's new rows joined with the other side only while
    that side did not change."""
    for join in facts.shape.joins:
        left, right = join.left.intersection(changed), join.right.intersection(changed)
        if join.changeable == Sides.EITHER and left and right:
            return f"both sides of a join changed ({_names(sorted(left | right))})"
        if join.changeable == Sides.LEFT and right:
            return f"input {_names(sorted(right))} changed on a join's lookup side"
        if join.changeable == Sides.RIGHT and left:
            return f"input {_names(sorted(left))} changed on a join's lookup side"
    return None


def _unreadable(facts: Facts) -> str | None:
    if not facts.appends_readable:
        return "the appended files were rewritten since (OPTIMIZE): they cannot be read alone"
    return None


def _names(keys: list[str]) -> str:
    return ", ".join(f"'{k}'" for k in keys)
