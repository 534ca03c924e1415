"""AUTO CDC SCD type 2 (and both types) with events arriving out of order across updates:
the target equals applying every event in sequence order, whatever the arrival order. An
event that changed nothing (an identical repeat, an untracked change) becomes significant
again when a late event lands before it, and no later version ever vanishes."""

from __future__ import annotations

import pytest

from tests.pipelines.auto_cdc_cases import EXAMPLE, SCD1, SCD2, cdc, ordered, target

# A whole file of pipeline updates (minutes in CI): with the crash and benchmark files, it
# runs in one of the three parts scripts/test.sh takes in turn, a part per commit.
pytestmark = pytest.mark.slow


@pytest.mark.parametrize("scd", [1, 2])
def test_events_split_across_updates_in_any_order_give_the_same_table(project, scd):
    project.source("p.py", cdc(scd))
    for i, event in enumerate(reversed(EXAMPLE)):  # one update per event, newest first
        project.land(f"{i}.json", [event], folder="users")
        if i % 3 == 0 or i == len(EXAMPLE) - 1:
            result = project.run()
            assert result.ok, result.failed()
    assert target(project) == ordered(SCD1 if scd == 1 else SCD2)


def test_scd2_late_events_split_close_and_reopen_history(project):
    project.source("p.py", cdc(2))
    project.land("1.json", EXAMPLE, folder="users")
    assert project.run().ok
    project.land(
        "2.json",
        [  # 124 changes at 3 and 8: history splits; 123 comes back after its delete at 6
            {"userId": 124, "name": "Raul", "city": "Puebla", "operation": "UPDATE", "sequenceNum": 8},
            {"userId": 124, "name": "Raul", "city": "Leon", "operation": "UPDATE", "sequenceNum": 3},
            {"userId": 123, "name": "Isabel", "city": "Merida", "operation": "UPDATE", "sequenceNum": 9},
            {"userId": 126, "name": "Lily", "city": "Cancun", "operation": "UPDATE", "sequenceNum": 4},
            {"userId": 126, "name": None, "city": None, "operation": "DELETE", "sequenceNum": 7},
        ],
        folder="users",
    )  # fmt: skip
    assert project.run().ok
    expected = [r for r in SCD2 if r[0] not in (124, 126)] + [
        (123, "Isabel", "Merida", 9, None),
        (124, "Raul", "Oaxaca", 1, 3),
        (124, "Raul", "Leon", 3, 8),
        (124, "Raul", "Puebla", 8, None),
        (126, "Lily", "Cancun", 2, 7),  # an identical repeat adds nothing; the delete closes
    ]
    assert target(project) == ordered(expected)


def test_scd2_a_late_event_absorbs_the_later_version_it_equals(project):
    """A late event with the values of the next version starts that version earlier: the
    target's row at the old start is replaced, not kept beside it."""
    project.source("p.py", cdc(2))
    project.land("1.json", EXAMPLE, folder="users")
    assert project.run().ok
    late = {"userId": 125, "name": "Mercedes", "city": "Mexicali", "operation": "UPDATE"}
    project.land("2.json", [{**late, "sequenceNum": 4}], folder="users")
    assert project.run().ok
    expected = [r for r in SCD2 if r[0] != 125] + [
        (125, "Mercedes", "Tijuana", 2, 4),
        (125, "Mercedes", "Mexicali", 4, 6),
        (125, "Mercedes", "Guadalajara", 6, None),
    ]
    assert target(project) == ordered(expected)


@pytest.mark.parametrize(
    "untracked",
    ['track_history_except_column_list=["city"],', 'track_history_column_list=["name"],'],
)
def test_a_late_untracked_change_keeps_the_newer_value(project, untracked):
    project.source("p.py", cdc(2, untracked))
    project.land("1.json", [e for e in EXAMPLE if e["userId"] == 125], folder="users")
    assert project.run().ok
    assert target(project) == [(125, "Mercedes", "Guadalajara", 2, None)]
    late = {"userId": 125, "name": "Mercedes", "city": "Ensenada", "operation": "UPDATE"}
    project.land("2.json", [{**late, "sequenceNum": 3}], folder="users")
    assert project.run().ok
    assert target(project) == [(125, "Mercedes", "Guadalajara", 2, None)]  # 6 is newer than 3


def test_a_late_event_revives_an_absorbed_repeat_and_keeps_later_versions(project):
    project.source("p.py", cdc(2))
    arrivals = [  # (sequence value, tier or None for a delete), one update each
        (2154448, "silver"),
        (2615537, "silver"),  # identical: absorbed into the version at 2154448
        (3405848, "silver"),
        (4317957, "bronze"),
        (2916429, None),  # late delete
        (2302993, "gold"),  # late: 2615537 now opens a version again
    ]
    for i, (seq, tier) in enumerate(arrivals):
        op = "DELETE" if tier is None else "UPDATE"
        event = {"userId": 7, "name": tier, "city": "x", "operation": op, "sequenceNum": seq}
        project.land(f"{i}.json", [event], folder="users")
        result = project.run()
        assert result.ok, result.failed()
    assert target(project) == ordered(
        [
            (7, "silver", "x", 2154448, 2302993),
            (7, "gold", "x", 2302993, 2615537),
            (7, "silver", "x", 2615537, 2916429),
            (7, "silver", "x", 3405848, 4317957),
            (7, "bronze", "x", 4317957, None),
        ]
    )
