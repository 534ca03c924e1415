"""The group aggregate's arithmetic in Arrow (no Spark): the changed rows' groups and the
view's combined as Spark's recompute would give them — NULL keys as a group, NULL sums
where no value is left, counts never NULL, groups left with no row gone, a global
aggregate's one row kept, sums in the view's wider types."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa

from headwater.pipelines.refresh.arrow_combine import ArrowQuery, Measure, combine, partial_groups
from headwater.pipelines.refresh.plan import Aggregation, Combine

QUERY = ArrowQuery(
    "db.raw",
    (("region", "r"),),
    (
        Measure("total", "sum", "amount"),
        Measure("amounts", "count", "amount"),
        Measure("value", "sum", "price"),
        Measure("n", "count_rows", None),
        Measure("flagged", "count_if", "flag"),
        Measure("low", "min", "amount"),
    ),
)
VIEW = pa.schema(
    [
        ("region", pa.string()),
        ("total", pa.int64()),
        ("amounts", pa.int64()),
        ("value", pa.decimal128(20, 2)),
        ("n", pa.int64()),
        ("flagged", pa.int64()),
        ("low", pa.int32()),
    ]
)
SUMS = {"total": Combine.SUM, "value": Combine.SUM}
COUNTS = dict.fromkeys(("amounts", "n", "flagged"), Combine.ADD)
TAKES_BACK = Aggregation(
    ("region",), {**SUMS, **COUNTS}, rows="n", sum_counts={"total": "amounts", "value": "n"}
)


def raw(*rows: tuple) -> pa.Table:
    names = ["r", "amount", "price", "flag"]
    types = [pa.string(), pa.int32(), pa.decimal128(10, 2), pa.bool_()]
    columns = list(zip(*rows, strict=True)) if rows else [[] for _ in names]
    return pa.table([pa.array(c, t) for c, t in zip(columns, types, strict=True)], names=names)


def by_region(table: pa.Table) -> dict:
    return {row.pop("region"): row for row in table.to_pylist()}


def test_partial_groups_follow_sparks_semantics():
    rows = raw(
        ("eu", 5, Decimal("1.50"), True),
        ("eu", None, Decimal("2.25"), None),
        (None, 7, None, False),  # a NULL key is a group
        (None, 7, None, False),  # duplicates count twice
        ("us", None, None, None),  # no value: NULL sum and min, counts 0
    )
    got = by_region(partial_groups(rows, QUERY, VIEW))
    assert got["eu"] == {
        "total": 5, "amounts": 1, "value": Decimal("3.75"), "n": 2, "flagged": 1, "low": 5,
    }  # fmt: skip
    assert got[None] == {"total": 14, "amounts": 2, "value": None, "n": 2, "flagged": 0, "low": 7}
    assert got["us"] == {
        "total": None,
        "amounts": 0,
        "value": None,
        "n": 1,
        "flagged": 0,
        "low": None,
    }
    assert partial_groups(raw(), QUERY, VIEW).schema == VIEW


def test_appended_groups_combine_with_the_views():
    aggregation = Aggregation(("region",), {**SUMS, **COUNTS, "low": Combine.LEAST})
    view = partial_groups(raw(("eu", 5, None, True), ("us", None, None, None)), QUERY, VIEW)
    added = partial_groups(
        raw(("eu", 2, None, None), ("us", None, None, None), ("asia", 1, None, True)), QUERY, VIEW
    )
    got = by_region(combine(view, added, None, aggregation, VIEW))
    assert got["eu"] == {"total": 7, "amounts": 2, "value": None, "n": 2, "flagged": 1, "low": 2}
    assert got["us"] == {
        "total": None,
        "amounts": 0,
        "value": None,
        "n": 2,
        "flagged": 0,
        "low": None,
    }
    assert got["asia"]["n"] == 1 and len(got) == 3


def test_removed_groups_are_taken_back():
    view = partial_groups(
        raw(("eu", 5, Decimal("1.00"), True), ("eu", 3, None, None), ("us", 4, None, None)),
        QUERY,
        VIEW,
    )
    no_low = pa.schema([f for f in VIEW if f.name != "low"])
    view = view.select(no_low.names)
    added = partial_groups(raw(("eu", None, Decimal("1.00"), None)), QUERY, VIEW).select(
        no_low.names
    )
    removed = partial_groups(
        raw(("eu", 5, Decimal("1.00"), True), ("eu", 3, None, None), ("us", 4, None, None)),
        QUERY,
        VIEW,
    ).select(no_low.names)
    got = by_region(combine(view, added, removed, TAKES_BACK, no_low))
    # eu: its values all gone (NULL sum), one row left; us: no row left, gone
    assert got == {
        "eu": {"total": None, "amounts": 0, "value": Decimal("1.00"), "n": 1, "flagged": 0}
    }


def test_a_global_aggregate_keeps_its_row():
    query = ArrowQuery(
        "db.raw",
        (),
        (
            Measure("total", "sum", "amount"),
            Measure("n", "count_rows", None),
            Measure("amounts", "count", "amount"),
        ),
    )
    schema = pa.schema([("total", pa.int64()), ("n", pa.int64()), ("amounts", pa.int64())])
    aggregation = Aggregation(
        (),
        {"total": Combine.SUM, "n": Combine.ADD, "amounts": Combine.ADD},
        rows="n",
        sum_counts={"total": "amounts"},
    )
    view = partial_groups(raw(("eu", 5, None, None)), query, schema)
    removed = partial_groups(raw(("eu", 5, None, None)), query, schema)
    got = combine(view, partial_groups(raw(), query, schema), removed, aggregation, schema)
    assert got.to_pylist() == [{"total": None, "n": 0, "amounts": 0}]
