"""A materialized view's refresh plan from facts alone (no Spark): no-op only when nothing
an exact result depends on changed, a full recompute with its reason otherwise, and the
refresh policy as the known platform defines it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from headwater.errors import PipelineDefinitionError
from headwater.pipelines.define.elements import RefreshPolicy
from headwater.pipelines.refresh import key_plan
from headwater.pipelines.refresh.key_plan import Keyed
from headwater.pipelines.refresh.plan import (
    Aggregation,
    Change,
    Combine,
    Facts,
    Join,
    NotIncrementalizable,
    Recorded,
    Shape,
    Sides,
    Technique,
    plan_refresh,
)

UNCHANGED = Facts(
    policy=RefreshPolicy.AUTO,
    definition="d1",
    recorded=Recorded({"db.silver": 4, "db.dim": 2}, "d1", version=7),
    view_version=7,
    inputs={"db.silver": 4, "db.dim": 2},
    changes={"db.silver": Change.NONE, "db.dim": Change.NONE},
    deterministic=True,
)


def test_no_input_changed_is_a_no_op_and_says_so():
    plan = plan_refresh("db.gold", UNCHANGED)
    assert plan.technique == Technique.NO_OP
    assert plan.reason == "no input changed since the last refresh"
    details = plan.to_details()
    chosen = [t for t in details["technique_information"] if t["is_chosen"]]
    assert [t["maintenance_type"] for t in chosen] == ["MAINTENANCE_TYPE_NO_OP"]


def test_commits_that_change_no_data_still_leave_a_no_op():
    moved = replace(UNCHANGED, inputs={"db.silver": 9, "db.dim": 2})  # e.g. OPTIMIZE
    assert plan_refresh("db.gold", moved).technique == Technique.NO_OP


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"changes": {"db.silver": Change.APPENDS, "db.dim": Change.NONE}}, "'db.silver' changed (appends)"),
        ({"changes": {"db.silver": Change.UPDATES, "db.dim": Change.NONE}}, "'db.silver' changed (updates)"),
        ({"changes": {"db.silver": Change.RESET, "db.dim": Change.NONE}}, "'db.silver' was reset"),
        ({"deterministic": False}, "the query is not deterministic"),
        ({"unversioned": ("Relation [id] parquet",)}, "has no Delta version"),
        ({"definition": "d2"}, "the view's definition changed"),
        ({"view_version": 8}, "changed outside its refreshes"),
        ({"recorded": None}, "no earlier refresh recorded its inputs"),
        ({"view_version": None, "recorded": None}, "the view is created"),
        ({"inputs": {"db.silver": 4}}, "the view's inputs changed"),
    ],
)  # fmt: skip
def test_anything_else_is_a_full_recompute_with_its_reason(change, reason):
    plan = plan_refresh("db.gold", replace(UNCHANGED, **change))
    assert plan.technique == Technique.FULL_RECOMPUTE
    assert reason in plan.reason and plan.full_reason == plan.reason
    assert [c.technique for c in plan.considered if not c.applicable] == [
        Technique.NO_OP,
        Technique.APPEND,
        Technique.GROUP_AGGREGATE,
        Technique.PARTITION_OVERWRITE,
    ]


def test_policy_full_always_recomputes():
    plan = plan_refresh("db.gold", replace(UNCHANGED, policy=RefreshPolicy.FULL))
    assert plan.technique == Technique.FULL_RECOMPUTE
    assert plan.reason == "the view's refresh policy is FULL"


def test_incremental_strict_fails_rather_than_recompute_but_may_initialise():
    strict = replace(UNCHANGED, policy=RefreshPolicy.INCREMENTAL_STRICT)
    assert plan_refresh("db.gold", strict).technique == Technique.NO_OP
    changed = replace(strict, changes={"db.silver": Change.APPENDS, "db.dim": Change.NONE})
    with pytest.raises(
        NotIncrementalizable, match=r"MATERIALIZED_VIEW_NOT_INCREMENTALIZABLE.*'db.gold'.*appends"
    ):
        plan_refresh("db.gold", changed)
    created = replace(strict, recorded=None, view_version=None)
    assert plan_refresh("db.gold", created).technique == Technique.FULL_RECOMPUTE
    relaxed = replace(changed, policy=RefreshPolicy.INCREMENTAL)
    assert plan_refresh("db.gold", relaxed).technique == Technique.FULL_RECOMPUTE


@pytest.mark.parametrize(
    ("text", "policy"),
    [(None, RefreshPolicy.AUTO), ("AUTO", RefreshPolicy.AUTO), ("incremental", RefreshPolicy.INCREMENTAL),
     ("INCREMENTAL STRICT", RefreshPolicy.INCREMENTAL_STRICT), ("incremental_strict", RefreshPolicy.INCREMENTAL_STRICT),
     (" Full ", RefreshPolicy.FULL)],
)  # fmt: skip
def test_policies_as_sql_and_python_spell_them(text, policy):
    assert RefreshPolicy.parse(text) == policy


def test_an_unknown_policy_is_a_definition_error_naming_the_known_ones():
    with pytest.raises(
        PipelineDefinitionError, match="'sometimes' is not one of: auto, incremental"
    ):
        RefreshPolicy.parse("sometimes")


ROW_WISE = replace(
    UNCHANGED,
    shape=Shape(None, (Join(frozenset({"db.silver"}), frozenset({"db.dim"}), Sides.EITHER),)),
    changes={"db.silver": Change.APPENDS, "db.dim": Change.NONE},
    inputs={"db.silver": 6, "db.dim": 2},
)


def test_appends_to_a_row_wise_query_are_appended():
    plan = plan_refresh("db.gold", ROW_WISE)
    assert plan.technique == Technique.APPEND and plan.full_reason is None
    assert "only appended to 'db.silver'" in plan.reason
    chosen = [t for t in plan.to_details()["technique_information"] if t["is_chosen"]]
    assert [t["maintenance_type"] for t in chosen] == ["MAINTENANCE_TYPE_APPEND"]
    strict = replace(ROW_WISE, policy=RefreshPolicy.INCREMENTAL_STRICT)
    assert plan_refresh("db.gold", strict).technique == Technique.APPEND


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"shape": Shape("the query aggregates")}, "changed (appends), but the query aggregates"),
        ({"changes": {"db.silver": Change.APPENDS, "db.dim": Change.APPENDS}}, "both sides of a join"),
        ({"changes": {"db.silver": Change.APPENDS, "db.dim": Change.UPDATES}}, "'db.dim' changed (updates)"),
        ({"shape": Shape(None, (Join(frozenset({"db.silver"}), frozenset({"db.dim"}), Sides.RIGHT),))},
         "'db.silver' changed on a join's lookup side"),
        ({"quarantines": True}, "quarantine table cannot commit with it"),
        ({"appends_readable": False}, "rewritten since (OPTIMIZE)"),
        ({"deterministic": False}, "not deterministic"),
    ],
)  # fmt: skip
def test_append_only_where_it_is_exact(change, reason):
    plan = plan_refresh("db.gold", replace(ROW_WISE, **change))
    assert plan.technique == Technique.FULL_RECOMPUTE
    assert reason in plan.reason, plan.reason
    append = next(c for c in plan.considered if c.technique == Technique.APPEND)
    assert not append.applicable and reason in append.reason


def test_the_outer_side_of_a_left_join_may_grow():
    left = Shape(None, (Join(frozenset({"db.silver"}), frozenset({"db.dim"}), Sides.LEFT),))
    assert plan_refresh("db.gold", replace(ROW_WISE, shape=left)).technique == Technique.APPEND
    grown = replace(
        ROW_WISE, shape=left, changes={"db.silver": Change.NONE, "db.dim": Change.APPENDS}
    )
    assert plan_refresh("db.gold", grown).technique == Technique.FULL_RECOMPUTE


GROUPED = replace(
    ROW_WISE,
    shape=Shape("the query aggregates", (), Aggregation(("k",), {"n": Combine.ADD})),
    rows_appended=100,
    rows_in_inputs=1000,
)


def test_group_aggregate_merges_a_few_new_rows_and_recomputes_many():
    plan = plan_refresh("db.gold", GROUPED)
    assert plan.technique == Technique.GROUP_AGGREGATE and plan.aggregation is not None
    assert plan.merge  # a view of unknown size is merged (only a small one is rewritten)
    details = plan.to_details()
    assert details["rows_appended"] == 100 and details["input_rows"] == 1000
    many = plan_refresh("db.gold", replace(GROUPED, rows_appended=600))
    assert many.technique == Technique.FULL_RECOMPUTE
    assert "600 of the inputs' 1,000 rows are new" in many.reason


def test_a_large_view_is_merged_a_small_one_rewritten():
    small = replace(GROUPED, view_bytes=10_000, rewrite_up_to=1_000_000)
    large = replace(GROUPED, view_bytes=10_000_000, rewrite_up_to=1_000_000)
    assert not plan_refresh("db.gold", small).merge
    assert plan_refresh("db.gold", large).merge
    assert "MERGE of the touched groups" in plan_refresh("db.gold", large).reason


@pytest.mark.parametrize(
    ("aggregation", "reason"),
    [
        (Aggregation(("k",), {}, "its aggregate Average does not combine"), "Average does not combine"),
        (None, "not one GROUP BY"),
    ],
)  # fmt: skip
def test_group_aggregate_only_where_the_aggregates_combine(aggregation, reason):
    shape = Shape("the query aggregates", (), aggregation)
    plan = plan_refresh("db.gold", replace(GROUPED, shape=shape))
    assert plan.technique == Technique.FULL_RECOMPUTE
    grouped = next(c for c in plan.considered if c.technique == Technique.GROUP_AGGREGATE)
    assert reason in grouped.reason


UPDATED = replace(
    GROUPED,
    changes={"db.silver": Change.UPDATES, "db.dim": Change.NONE},
    shape=Shape(
        "the query aggregates",
        (),
        Aggregation(("k",), {"n": Combine.ADD, "s": Combine.SUM}, None, "n", {"s": "n"}),
    ),
    change_feed=frozenset({"db.silver"}),
    rows_appended=None,
)


def test_updates_are_taken_back_through_a_change_feed_or_the_files_and_retracting_aggregates():
    plan = plan_refresh("db.gold", UPDATED)
    assert plan.technique == Technique.GROUP_AGGREGATE and plan.retract
    assert "change data feed has them" in plan.reason
    derived = plan_refresh(
        "db.gold", replace(UPDATED, change_feed=frozenset(), derived=frozenset({"db.silver"}))
    )
    assert derived.technique == Technique.GROUP_AGGREGATE and derived.retract
    assert "the files its commits removed and added have them" in derived.reason
    unfed = plan_refresh("db.gold", replace(UPDATED, change_feed=frozenset()))
    assert unfed.technique == Technique.FULL_RECOMPUTE
    assert "the rows removed from 'db.silver' cannot be read back" in unfed.reason
    lossy = Aggregation(("k",), {"m": Combine.LEAST}, None, "n", {}, "min/max ('m') cannot")
    kept = plan_refresh("db.gold", replace(UPDATED, shape=Shape("agg", (), lossy)))
    assert kept.technique == Technique.FULL_RECOMPUTE and "min/max ('m')" in kept.reason
    appended = plan_refresh("db.gold", replace(GROUPED, shape=Shape("agg", (), lossy)))
    assert appended.technique == Technique.GROUP_AGGREGATE and not appended.retract


def test_an_update_touching_more_rows_than_a_recompute_reads_is_recomputed():
    """The cost model for updates: taking back reads the change feed's rows (an updated
    row twice), a recompute the inputs' rows; the cheaper is chosen, and the event shows
    both counts. Unknown counts (no metrics) are not weighed."""
    small = plan_refresh("db.gold", replace(UPDATED, rows_changed=200, rows_in_inputs=1000))
    assert small.technique == Technique.GROUP_AGGREGATE and small.retract
    assert small.to_details()["rows_changed"] == 200
    large = plan_refresh("db.gold", replace(UPDATED, rows_changed=1200, rows_in_inputs=1000))
    assert large.technique == Technique.FULL_RECOMPUTE
    assert "reads 1,200 changed rows" in large.reason and "the 1,000 a recompute" in large.reason
    details = large.to_details()
    assert details["rows_changed"] == 1200 and details["input_rows"] == 1000
    unknown = plan_refresh("db.gold", replace(UPDATED, rows_changed=None, rows_in_inputs=1000))
    assert unknown.technique == Technique.GROUP_AGGREGATE


def test_rows_a_take_back_reads_come_from_the_commits_metrics():
    from headwater.pipelines.refresh.inputs import rows_rewritten

    assert rows_rewritten({"operationMetrics": {"numUpdatedRows": "5"}}) == 10
    assert rows_rewritten({"operationMetrics": {"numDeletedRows": 3}}) == 3
    merged = {
        "numTargetRowsUpdated": "2",
        "numTargetRowsDeleted": "1",
        "numTargetRowsInserted": "4",
    }
    assert rows_rewritten({"operationMetrics": merged}) == 9
    assert rows_rewritten({"operationMetrics": {"numOutputRows": "7"}}) is None  # an overwrite
    assert rows_rewritten({}) is None


def keyed_update(keyed: Keyed, shape: str) -> Facts:
    """10 of 100 rows of ``db.silver`` updated (read back from its feed), ``db.dim`` as it
    was, under a view keyed by ``keyed`` whose ``shape`` has no other technique."""
    return replace(
        UNCHANGED,
        changes={"db.silver": Change.UPDATES, "db.dim": Change.NONE},
        shape=Shape(shape),
        change_feed=frozenset({"db.silver"}),
        rows_changed=10,
        rows_in_inputs=100,
        keyed=keyed,
    )


def test_affected_keys_are_recomputed_where_the_keys_come_from_the_changed_input():
    """(Spark-free) A view keyed by input columns is refreshed by recomputing the touched
    keys, named by its shape, unless a join's keyless side or an input the keys do not come
    from changed, the removed rows cannot be read back, or they outnumber the input's."""
    updated = keyed_update(
        Keyed(("k",), {"db.silver": ("key",)}, frozenset({"db.dim"}), key_plan.WINDOW),
        "the query has a window",
    )
    plan = plan_refresh("db.gold", updated)
    assert plan.technique == Technique.WINDOW_FUNCTION and plan.keyed == updated.keyed
    assert "keyed by k" in plan.reason and "(10 changed rows of 100)" in plan.reason
    assert plan.to_details()["chosen"] == "WINDOW_FUNCTION"
    grouped = replace(updated, keyed=replace(updated.keyed, kind=key_plan.GROUPS))
    assert plan_refresh("db.gold", grouped).technique == Technique.GROUP_AGGREGATE
    for facts, why in (
        (replace(updated, changes={"db.silver": Change.NONE, "db.dim": Change.APPENDS}),
         "'db.dim' changed on a join's side that carries no key"),
        (replace(updated, keyed=replace(updated.keyed, sources={}, fixed=frozenset())),
         "the view's keys do not come from it"),
        (replace(updated, change_feed=frozenset()), "cannot be read back"),
        (replace(updated, rows_changed=101), "more than the 100 a recompute reads"),
        (replace(updated, keyed=Keyed(not_keyed="no key here")), "no key here"),
    ):  # fmt: skip
        plan = plan_refresh("db.gold", facts)
        assert plan.technique == Technique.FULL_RECOMPUTE and why in plan.reason, (why, plan)


def test_affected_keys_merge_into_a_large_view_and_rewrite_a_small_one_or_one_with_rules():
    keyed = Keyed(("k",), {"db.silver": ("key",)}, frozenset(), key_plan.GROUPS)
    updated = replace(keyed_update(keyed, "the query has a min"), rewrite_up_to=1_000_000)
    large, small = (replace(updated, view_bytes=b) for b in (10_000_000, 10_000))
    assert plan_refresh("db.gold", large).merge and plan_refresh("db.gold", large).keyed
    assert not plan_refresh("db.gold", small).merge
    assert not plan_refresh("db.gold", replace(large, expectations=True)).merge
