"""The pure logic of ``avg`` kept through exact sums and counts (no Spark): which value
types can be averaged incrementally, the bounds where an average derived from an exact sum
is Spark's own, and the plan that needs the kept state recorded and readable."""

from __future__ import annotations

from dataclasses import replace
from decimal import ROUND_HALF_UP, Decimal

import pytest

from headwater.pipelines.define.elements import RefreshPolicy
from headwater.pipelines.refresh import averages, avg_state
from headwater.pipelines.refresh.plan import (
    Aggregation,
    Change,
    Combine,
    Facts,
    Recorded,
    Shape,
    Technique,
    plan_refresh,
)


def test_integral_and_decimal_values_average_doubles_and_floats_do_not():
    assert averages.average_of("m", 0, "integer") == averages.Average("m", 0)
    assert averages.average_of("m", 1, "long").sum_type == "decimal(38,0)"
    price = averages.average_of("m", 2, "decimal", 10, 2)
    assert isinstance(price, averages.Average)
    assert price.sum_type == "decimal(20,2)"  # Spark's sum buffer of decimal(10, 2)
    assert (price.sum, price.count, price.magnitude) == ("__avg2_sum", "__avg2_count", "__avg2_abs")
    for kind in ("double", "float"):
        found = averages.average_of("m", 0, kind)
        assert isinstance(found, str) and "do not combine exactly" in found
    wide = averages.average_of("m", 0, "decimal", 38, 10)
    assert isinstance(wide, str) and "decimal(38,10)" in wide


@pytest.mark.parametrize(
    ("p1", "s1", "scale"),
    [(20, 2, 20), (28, 18, 28), (11, 0, 21), (38, 10, 10), (14, 4, 25), (38, 0, 6)],
)
def test_division_scale_is_sparks(p1, s1, scale):
    """decimal(p1, s1) / decimal(20, 0) as Spark types it (precision loss allowed)."""
    assert averages.division_scale(p1, s1) == scale


def test_a_decimal_average_rounds_once_while_the_count_is_under_its_limit():
    price = averages.average_of("m", 0, "decimal", 10, 2)
    assert isinstance(price, averages.Average)
    assert price.count_limit == 10**13
    assert averages.exact(price, None, 10**13 - 1) and not averages.exact(price, None, 10**13)
    # Rounding the quotient at scale 20 first, then at scale 6, equals rounding once at 6
    # for counts under the limit: the quotient is never within 10^-20 of a half unit.
    for total, count in [(Decimal("1.00"), 3), (Decimal("-2.50"), 8), (Decimal("0.01"), 16)]:
        once = (total / count).quantize(Decimal("1e-6"), ROUND_HALF_UP)
        twice = (total / count).quantize(Decimal("1e-20"), ROUND_HALF_UP)
        assert twice.quantize(Decimal("1e-6"), ROUND_HALF_UP) == once


def test_an_integral_average_is_exact_below_2_53():
    mean = averages.Average("m", 0)
    assert averages.exact(mean, 2**53 - 1, 5) and not averages.exact(mean, 2**53, 5)
    assert averages.exact(mean, None, None)  # (no value at all)


MEAN = averages.Average("mean", 0)
GROUPED = Aggregation(
    ("region",), {"mean": Combine.AVERAGE, "n": Combine.ADD}, rows="n", averages=(MEAN,)
)
APPENDED = Facts(
    policy=RefreshPolicy.AUTO,
    definition="d1",
    recorded=Recorded({"db.raw": 4}, "d1", version=7, state="/s/state/abc"),
    view_version=7,
    inputs={"db.raw": 5},
    changes={"db.raw": Change.APPENDS},
    deterministic=True,
    shape=Shape("the query aggregates", (), GROUPED),
)


def test_averages_merge_when_their_state_was_kept():
    plan = plan_refresh("db.gold", APPENDED)
    assert plan.technique == Technique.GROUP_AGGREGATE, plan.reason
    assert "(add, avg)" in plan.reason
    updated = replace(
        APPENDED, changes={"db.raw": Change.UPDATES}, change_feed=frozenset({"db.raw"})
    )
    assert plan_refresh("db.gold", updated).technique == Technique.GROUP_AGGREGATE


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"recorded": Recorded({"db.raw": 4}, "d1", version=7)}, "no refresh kept its averages'"),
        ({"state_readable": False}, "kept sums and counts are gone"),
    ],
)
def test_without_the_kept_state_averages_are_recomputed(change, reason):
    plan = plan_refresh("db.gold", replace(APPENDED, **change))
    assert plan.technique == Technique.FULL_RECOMPUTE
    assert reason in plan.reason, plan.reason


def _state(keys: list, rows: list, sums: list, counts: list, abs_: list):
    import pyarrow as pa

    a = averages.Average("m", 0)
    return pa.table(
        {
            "k": pa.array(keys, pa.int64()),
            averages.ROWS: pa.array(rows, pa.int64()),
            a.sum: pa.array([Decimal(s) for s in sums], pa.decimal128(38, 0)),
            a.count: pa.array(counts, pa.int64()),
            a.magnitude: pa.array([Decimal(s) for s in abs_], pa.decimal128(38, 0)),
        }
    )


def test_a_small_state_combines_on_the_driver_taking_rows_back_and_dropping_emptied_groups():
    old = _state([1, 2, None], [2, 1, 1], [10, 5, 7], [2, 1, 1], [10, 5, 7])
    # group 1 gains a row, group 2's only row is taken back, the NULL key gains one,
    # group 3 is new (the delta's rows are signed partial states, one group twice)
    delta = _state(
        [1, 2, None, 3, 3], [1, -1, 1, 1, 1], [4, -5, 1, 2, 3], [1, -1, 1, 1, 1], [4, -5, 1, 2, 3]
    )
    out = avg_state.combined(old.select(list(reversed(old.column_names))), delta, ["k"])
    assert out is not None and out.schema.names == delta.schema.names
    got = {
        r["k"]: (r[averages.ROWS], int(r["__avg0_sum"]), r["__avg0_count"]) for r in out.to_pylist()
    }
    assert got == {1: (3, 14, 3), None: (2, 8, 2), 3: (2, 5, 2)}  # group 2 is gone
    assert avg_state.exact(out, [averages.Average("m", 0)])
    past = _state([1], [1], [0], [1], [2**53])
    assert not avg_state.exact(avg_state.combined(out, past, ["k"]), [averages.Average("m", 0)])


def test_a_global_state_keeps_its_row_and_a_sum_past_its_precision_is_not_combined():
    old = _state([None], [1], [3], [1], [3]).drop(["k"])
    gone = _state([None], [-1], [-3], [-1], [-3]).drop(["k"])
    out = avg_state.combined(old, gone, [])
    assert out is not None and out.num_rows == 1 and out[averages.ROWS][0].as_py() == 0
    huge = _state([1], [1], [9 * 10**37], [1], [0])
    assert avg_state.combined(huge, huge, ["k"]) is None  # (Arrow's own sum would wrap)


def test_the_state_written_on_the_driver_reads_back_with_its_marker(tmp_path):
    state = _state([1, 2], [1, 1], [4, 5], [1, 1], [4, 5])
    path = str(tmp_path / "view_state" / "abc")
    avg_state.write(state, path)
    assert (tmp_path / "view_state" / "abc" / "_SUCCESS").exists()
    assert avg_state.read(path).equals(state)
    assert avg_state.state_bytes(path) > 0
    assert avg_state.key_type_on_driver("bigint") and avg_state.key_type_on_driver("decimal(5,2)")
    assert not avg_state.key_type_on_driver("double")
    assert not avg_state.key_type_on_driver("timestamp")
    assert not avg_state.key_type_on_driver("string collate UTF8_LCASE")


def test_the_changed_rows_state_in_arrow_is_sparks_partial_state():
    import pyarrow as pa

    a = averages.Average("mean", 0)
    rows = pa.table(
        {
            "region": pa.array(["eu", "eu", "us", None, None], pa.string()),
            "amount": pa.array([3, None, -5, 7, -9], pa.int32()),
        }
    )
    view = pa.schema([("r", pa.string()), ("mean", pa.float64())])
    state = avg_state.partial(rows, [("r", "region")], [(a, "amount")], view)
    got = {r["r"]: r for r in state.to_pylist()}
    assert {
        k: (r[averages.ROWS], r[a.sum], r[a.count], r[a.magnitude]) for k, r in got.items()
    } == {
        "eu": (2, Decimal(3), 1, Decimal(3)),
        "us": (1, Decimal(-5), 1, Decimal(5)),
        None: (2, Decimal(-2), 2, Decimal(16)),
    }
    assert state.schema.field(a.sum).type == pa.decimal128(38, 0)  # Spark's kept sum type
    taken = avg_state.negated(state, ["r"])
    assert taken.column("r") == state.column("r")
    assert [-v for v in state.column(averages.ROWS).to_pylist()] == taken[averages.ROWS].to_pylist()
    empty = avg_state.partial(rows.slice(0, 0), [("r", "region")], [(a, "amount")], view)
    assert empty.num_rows == 0 and empty.schema == state.schema


def test_sums_too_large_for_64_bits_are_summed_exactly_in_decimals():
    """The state sums in 64-bit integers only while no sum can pass 2**63; past that
    (and for -2**63, which has no 64-bit magnitude) in decimals: the same exact sums."""
    import pyarrow as pa

    a = averages.Average("mean", 0)
    view = pa.schema([("r", pa.string()), ("mean", pa.float64())])
    for values in ([2**62, 2**62, 2**62, -1], [-(2**63), 5, None, 2**63 - 1], [1, -2, 3, 4]):
        rows = pa.table({"r": ["x"] * 4, "amount": pa.array(values, pa.int64())})
        state = avg_state.partial(rows, [("r", "r")], [(a, "amount")], view).to_pylist()[0]
        present = [v for v in values if v is not None]
        assert state[a.sum] == Decimal(sum(present)), values
        assert state[a.magnitude] == Decimal(sum(abs(v) for v in present)), values
        assert (state[averages.ROWS], state[a.count]) == (4, len(present))


def test_averages_from_the_state_match_the_views_groups_null_keys_included():
    import pyarrow as pa

    a = averages.Average("mean", 0)
    state = pa.table(
        {
            "k": pa.array([2, None, 1, 9], pa.int64()),
            averages.ROWS: pa.array([1, 3, 2, 1], pa.int64()),
            a.sum: pa.array(
                [Decimal(7), Decimal(-4), Decimal(1), Decimal(0)], pa.decimal128(38, 0)
            ),
            a.count: pa.array([0, 3, 2, 0], pa.int64()),
        }
    )
    view = pa.table(
        {
            "k": pa.array([1, 2, None, 3], pa.int64()),
            "mean": pa.array([0.0, 0.0, 0.0, 0.0]),
            "total": pa.array([1, None, -4, 5], pa.int64()),
        }
    )
    out = avg_state.with_averages(view, state, [a], ["k"])
    assert out.schema == view.schema  # the view's columns and types, in its order
    got = {r["k"]: (r["mean"], r["total"]) for r in out.to_pylist()}
    # 1/2 as Spark's double division; a count of 0 is NULL; a group the state lacks (3)
    # gets NULL; a state group the view lacks (9) adds no row
    assert got == {1: (0.5, 1), 2: (None, None), None: (-4 / 3, -4), 3: (None, 5)}
    one = pa.table({"mean": pa.array([0.0]), "n": pa.array([4], pa.int64())})
    whole = state.slice(1, 1).drop_columns(["k"])
    assert avg_state.with_averages(one, whole, [a], []).to_pylist() == [{"mean": -4 / 3, "n": 4}]
