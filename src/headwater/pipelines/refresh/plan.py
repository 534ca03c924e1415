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
appended) and *full recompute*.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from headwater.errors import PipelineDefinitionError
from headwater.pipelines.define.elements import RefreshPolicy


class Technique(str, Enum):
    NO_OP = "NO_OP"
    APPEND = "APPEND"
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


@dataclass(frozen=True)
class Shape:
    """How the query's rows follow from its inputs', from its analysed plan."""

    not_row_wise: str | None  # why the query's rows do not map from input rows one by one
    joins: tuple[Join, ...] = ()


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
        }


class NotIncrementalizable(PipelineDefinitionError):
    """``REFRESH POLICY INCREMENTAL STRICT`` and no incremental technique applies."""


def plan_refresh(view: str, facts: Facts) -> RefreshPlan:
    """The technique for this refresh of ``view`` (see the module's doc)."""
    initializing = _initialization(facts)
    no_op = _no_op(facts, initializing)
    if facts.policy == RefreshPolicy.FULL:
        full = Considered(Technique.FULL_RECOMPUTE, True, "the view's refresh policy is FULL")
        return RefreshPlan(Technique.FULL_RECOMPUTE, full.reason, (no_op, full), full.reason)
    if no_op.applicable:
        full = Considered(Technique.FULL_RECOMPUTE, True, "more work for the same rows")
        return RefreshPlan(Technique.NO_OP, no_op.reason, (no_op, full))
    append = _append(facts, initializing)
    if append.applicable:
        full = Considered(Technique.FULL_RECOMPUTE, True, "reads every row again")
        return RefreshPlan(Technique.APPEND, append.reason, (no_op, append, full))
    why = no_op.reason if initializing is not None else append.reason
    if facts.policy == RefreshPolicy.INCREMENTAL_STRICT and initializing is None:
        raise NotIncrementalizable(
            f"[MATERIALIZED_VIEW_NOT_INCREMENTALIZABLE] '{view}' has REFRESH POLICY "
            f"INCREMENTAL STRICT and cannot be refreshed incrementally: {why}. Use AUTO "
            "or INCREMENTAL to allow a full recompute."
        )
    full = Considered(Technique.FULL_RECOMPUTE, True, why)
    return RefreshPlan(Technique.FULL_RECOMPUTE, why, (no_op, append, full), why)


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

    blocked = _not_incremental(facts, initializing)
    if blocked is not None:
        return no(blocked)
    changes = {k: facts.changes.get(k, Change.UPDATES) for k in facts.inputs}
    changed = sorted(k for k, c in changes.items() if c != Change.NONE)
    updated = sorted(k for k in changed if changes[k] != Change.APPENDS)
    if updated:
        kinds = sorted({changes[k].value for k in updated})
        return no(f"input {_names(updated)} changed ({', '.join(kinds)})")
    if facts.shape.not_row_wise is not None:
        return no(f"input {_names(changed)} changed (appends), but {facts.shape.not_row_wise}")
    if facts.quarantines:
        return no("the view quarantines rows: its quarantine table cannot commit with it")
    for join in facts.shape.joins:
        left, right = join.left.intersection(changed), join.right.intersection(changed)
        if join.changeable == Sides.EITHER and left and right:
            return no(f"both sides of a join changed ({_names(sorted(left | right))})")
        if join.changeable == Sides.LEFT and right:
            return no(f"input {_names(sorted(right))} changed on a join's lookup side")
        if join.changeable == Sides.RIGHT and left:
            return no(f"input {_names(sorted(left))} changed on a join's lookup side")
    if not facts.appends_readable:
        return no("the appended files were rewritten since (OPTIMIZE): they cannot be read alone")
    return Considered(
        Technique.APPEND,
        True,
        f"rows were only appended to {_names(changed)} and the query maps rows one by one",
    )


def _names(keys: list[str]) -> str:
    return ", ".join(f"'{k}'" for k in keys)
