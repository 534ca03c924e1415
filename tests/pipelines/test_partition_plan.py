"""The *partition overwrite* decision from facts alone (no Spark): it applies when every
changed input changed only in partitions its log names and the view's partition column is
theirs unchanged, refuses with a reason otherwise, and a cost model chooses between it and
the group aggregate."""

from __future__ import annotations

from dataclasses import replace

from headwater.pipelines.define.elements import RefreshPolicy
from headwater.pipelines.refresh.partition_plan import Partitioned
from headwater.pipelines.refresh.plan import (
    Aggregation,
    Change,
    Combine,
    Facts,
    Join,
    Recorded,
    Shape,
    Sides,
    Technique,
    plan_refresh,
)

BY_DAY = Partitioned(
    "day",
    {"db.silver": "day"},
    touched={"db.silver": frozenset({"3", None})},
    rows_touched=100,
    rows_total=10_000,
    rows_changed=10,
)
GROUPS = Aggregation(
    ("day", "k"),
    {"total": Combine.SUM, "n": Combine.ADD, "xs": Combine.ADD},
    rows="n",
    sum_counts={"total": "xs"},
)
UPDATED = Facts(
    policy=RefreshPolicy.AUTO,
    definition="d1",
    recorded=Recorded({"db.silver": 4, "db.dim": 2}, "d1", version=7),
    view_version=7,
    inputs={"db.silver": 5, "db.dim": 2},
    changes={"db.silver": Change.UPDATES, "db.dim": Change.NONE},
    deterministic=True,
    shape=Shape("the query has a window function"),
    partitioned=BY_DAY,
)


def test_updates_in_a_few_partitions_recompute_just_those():
    plan = plan_refresh("db.gold", UPDATED)
    assert plan.technique == Technique.PARTITION_OVERWRITE, plan
    assert plan.overwrite is not None
    assert plan.overwrite.column == "day"
    assert plan.overwrite.values == (None, "3")  # NULL partitions too
    assert "only in partitions day = NULL, 3 (100 of 10,000 input rows)" in plan.reason
    chosen = [t for t in plan.to_details()["technique_information"] if t["is_chosen"]]
    assert [t["maintenance_type"] for t in chosen] == ["MAINTENANCE_TYPE_PARTITION_OVERWRITE"]


def test_shapes_that_cannot_follow_partitions_recompute_with_the_reason():
    cases = {
        "the view is not partitioned": Partitioned(None),
        "its column 'day' is computed": Partitioned(
            None, not_derived="its column 'day' is computed"
        ),
        "the partitions 'db.silver' changed in are unknown: no partitionValues": replace(
            BY_DAY, unreadable={"db.silver": "no partitionValues"}
        ),
        "touched every partition": replace(BY_DAY, rows_touched=10_000),
        "does not carry the partition column 'day'": replace(
            BY_DAY, fixed=frozenset({"db.silver"})
        ),
        "the view's partitions do not follow it": replace(BY_DAY, sources={"db.dim": "day"}),
    }
    for why, partitioned in cases.items():
        plan = plan_refresh("db.gold", replace(UPDATED, partitioned=partitioned))
        assert plan.technique == Technique.FULL_RECOMPUTE, (why, plan)
        considered = {c.technique: c for c in plan.considered}
        assert why in considered[Technique.PARTITION_OVERWRITE].reason, (why, plan)
    quarantined = plan_refresh("db.gold", replace(UPDATED, quarantines=True))
    assert quarantined.technique == Technique.FULL_RECOMPUTE


def test_not_deterministic_or_new_views_are_never_overwritten_by_partition():
    for change in ({"deterministic": False}, {"view_version": None}, {"definition": "d2"}):
        plan = plan_refresh("db.gold", replace(UPDATED, **change))  # type: ignore[arg-type]
        assert plan.technique == Technique.FULL_RECOMPUTE, change


def test_appends_to_a_row_wise_query_stay_appends():
    appended = replace(
        UPDATED, changes={"db.silver": Change.APPENDS, "db.dim": Change.NONE}, shape=Shape(None)
    )
    assert plan_refresh("db.gold", appended).technique == Technique.APPEND


def test_the_cost_model_chooses_between_group_aggregate_and_partition_overwrite():
    grouped = replace(
        UPDATED,
        shape=Shape("the query aggregates", aggregate=GROUPS),
        change_feed=frozenset({"db.silver"}),
    )
    appends = replace(grouped, changes={"db.silver": Change.APPENDS, "db.dim": Change.NONE})
    # Appends into big partitions: the new rows alone are read and merged.
    plan = plan_refresh(
        "db.gold", replace(appends, partitioned=replace(BY_DAY, rows_touched=5_000))
    )
    assert plan.technique == Technique.GROUP_AGGREGATE, plan
    assert "chosen over PARTITION_OVERWRITE" in plan.reason
    # Appends into a new partition (a new day): as many rows read, only it rewritten.
    new_day = replace(BY_DAY, rows_touched=10, rows_changed=10)
    plan = plan_refresh("db.gold", replace(appends, partitioned=new_day))
    assert plan.technique == Technique.PARTITION_OVERWRITE, plan
    assert "chosen over GROUP_AGGREGATE" in plan.reason
    # Updates in a few partitions: recomputed; across half the rows: taken back.
    assert plan_refresh("db.gold", grouped).technique == Technique.PARTITION_OVERWRITE
    wide = replace(BY_DAY, rows_touched=5_000)
    assert plan_refresh("db.gold", replace(grouped, partitioned=wide)).technique == (
        Technique.GROUP_AGGREGATE
    )
    # Updates that cannot be taken back (no change feed): recomputed by partition.
    unfed = replace(grouped, change_feed=frozenset(), partitioned=wide)
    assert plan_refresh("db.gold", unfed).technique == Technique.PARTITION_OVERWRITE


def test_a_join_whose_other_side_changed_is_recomputed():
    joined = replace(
        UPDATED,
        changes={"db.silver": Change.UPDATES, "db.dim": Change.UPDATES},
        shape=Shape(None, (Join(frozenset({"db.silver"}), frozenset({"db.dim"}), Sides.EITHER),)),
        partitioned=replace(BY_DAY, fixed=frozenset({"db.dim"})),
    )
    plan = plan_refresh("db.gold", joined)
    assert plan.technique == Technique.FULL_RECOMPUTE
    assert "'db.dim' changed on a join's side that does not carry" in plan.reason
    only_silver = replace(joined, changes={"db.silver": Change.UPDATES, "db.dim": Change.NONE})
    assert plan_refresh("db.gold", only_silver).technique == Technique.PARTITION_OVERWRITE
