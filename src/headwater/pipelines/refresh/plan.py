"""A materialized view's refresh plan, from facts alone (no Spark, no I/O).

The facts: the view's refresh policy, what its last refresh recorded (the versions of its
inputs, its definition, its own version then), the inputs' versions now and the kind of
change in between, whether its query is deterministic and whether it reads only
versioned inputs. The plan names the technique, why, and every technique considered —
what the event log's ``planning_information`` event and the progress lines show, so a
user can always see why a view was recomputed.

Techniques are used only where they are provably exact. Built so far: *no-op* (nothing an
exact result depends on changed) and *full recompute*.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from headwater.errors import PipelineDefinitionError
from headwater.pipelines.define.elements import RefreshPolicy


class Technique(str, Enum):
    NO_OP = "NO_OP"
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
    why = no_op.reason  # (the initialisation's reason, when there is one)
    if facts.policy == RefreshPolicy.INCREMENTAL_STRICT and initializing is None:
        raise NotIncrementalizable(
            f"[MATERIALIZED_VIEW_NOT_INCREMENTALIZABLE] '{view}' has REFRESH POLICY "
            f"INCREMENTAL STRICT and cannot be refreshed incrementally: {why}. Use AUTO "
            "or INCREMENTAL to allow a full recompute."
        )
    full = Considered(Technique.FULL_RECOMPUTE, True, why)
    return RefreshPlan(Technique.FULL_RECOMPUTE, why, (no_op, full), why)


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
    def no(reason: str) -> Considered:
        return Considered(Technique.NO_OP, False, reason)

    if initializing is not None:
        return no(initializing)
    if not facts.deterministic:
        return no("the query is not deterministic")
    if facts.unversioned:
        return no(f"the query reads {_names(list(facts.unversioned))}, which has no Delta version")
    recorded = facts.recorded
    assert recorded is not None
    if set(facts.inputs) != set(recorded.inputs):
        return no("the view's inputs changed")
    changed = sorted(k for k in facts.inputs if facts.changes.get(k, Change.UPDATES) != Change.NONE)
    if changed:
        kinds = sorted({facts.changes.get(k, Change.UPDATES).value for k in changed})
        return no(
            f"input {_names(changed)} changed ({', '.join(kinds)}); no incremental technique "
            "for that change is built yet"
        )
    return Considered(Technique.NO_OP, True, "no input changed since the last refresh")


def _names(keys: list[str]) -> str:
    return ", ".join(f"'{k}'" for k in keys)
