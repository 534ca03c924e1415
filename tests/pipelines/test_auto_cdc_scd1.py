"""AUTO CDC SCD type 1: tombstones, ignore_null_updates, column lists, truncates, and a
target that keeps the sequence column, with events arriving late in later updates."""

from __future__ import annotations

import pytest

from tests.pipelines.auto_cdc_cases import EXAMPLE, SCD1, USERS, cdc, ordered, target

# A whole file of pipeline updates (minutes in CI): with the crash and benchmark files, it
# runs in one of the three parts scripts/test.sh takes in turn, a part per commit.
pytestmark = pytest.mark.slow


def test_scd1_delete_leaves_a_tombstone_and_a_newer_upsert_brings_the_key_back(project):
    project.source("p.py", cdc(1))
    project.land("1.json", EXAMPLE, folder="users")
    assert project.run().ok
    late = {"userId": 123, "name": "Isabel", "city": "Puebla", "operation": "UPDATE"}
    project.land("2.json", [{**late, "sequenceNum": 4}], folder="users")  # older than the delete
    assert project.run().ok
    assert target(project) == ordered(SCD1)
    project.land("3.json", [{**late, "sequenceNum": 7}], folder="users")  # newer: back
    assert project.run().ok
    assert target(project) == ordered([*SCD1, (123, "Isabel", "Puebla")])


def test_ignore_null_updates_and_column_list(project):
    project.source(
        "p.py",
        USERS
        + """
dlt.create_streaming_table("target")
dlt.create_auto_cdc_flow(
    target="target", source="users", keys=["userId"], sequence_by="sequenceNum",
    ignore_null_updates=True, column_list=["userId", "name", "city"],
    apply_as_deletes="operation = 'DELETE'",
)
""",
    )
    rows = [
        {"userId": 1, "name": "Ana", "city": "Lima", "operation": "INSERT", "sequenceNum": 1},
        {"userId": 1, "name": None, "city": "Cusco", "operation": "UPDATE", "sequenceNum": 2},
        {"userId": 2, "name": "Bo", "city": "Oslo", "operation": "INSERT", "sequenceNum": 1},
        {"userId": 2, "name": None, "city": None, "operation": "DELETE", "sequenceNum": 2},
        {"userId": 2, "name": None, "city": "Bergen", "operation": "INSERT", "sequenceNum": 3},
    ]
    project.land("1.json", rows[:2], folder="users")
    assert project.run().ok
    assert target(project) == [(1, "Ana", "Cusco")]
    project.land(
        "2.json", [{**rows[0], "name": None, "city": "Puno", "sequenceNum": 3}], folder="users"
    )
    project.land("3.json", rows[2:], folder="users")
    assert project.run().ok
    # a null keeps the old value; after a delete there is no old value to keep
    assert target(project) == ordered([(1, "Ana", "Puno"), (2, None, "Bergen")])


@pytest.mark.parametrize("kept", [[], ["sequenceNum"]])
def test_truncate_empties_the_target_at_its_place_in_the_sequence(project, kept):
    project.source(
        "p.py",
        USERS
        + f"""
dlt.create_streaming_table("target")
dlt.create_auto_cdc_flow(
    target="target", source="users", keys=["userId"], sequence_by="sequenceNum",
    apply_as_deletes="operation = 'DELETE'", apply_as_truncates="operation = 'TRUNCATE'",
    except_column_list={["operation", "sequenceNum"] if not kept else ["operation"]},
)
""",
    )
    project.land("1.json", EXAMPLE[:4], folder="users")
    assert project.run().ok
    truncate = {"userId": None, "name": None, "city": None, "operation": "TRUNCATE"}
    project.land(
        "2.json",
        [
            {**truncate, "sequenceNum": 3},
            {"userId": 127, "name": "Ana", "city": "Leon", "operation": "INSERT", "sequenceNum": 4},
        ],
        folder="users",
    )
    assert project.run().ok
    assert target(project) == [(127, "Ana", "Leon", 4) if kept else (127, "Ana", "Leon")]


@pytest.mark.parametrize("ignore_nulls", [False, True])
def test_an_event_older_than_an_applied_truncate_stays_truncated_in_a_later_update(
    project, ignore_nulls
):
    """A truncate has no key, so a change older than it can arrive in a later update for a
    key no event named before (a Debezium truncate on another partition): it was emptied
    by the truncate and must not appear."""
    extra = f"apply_as_truncates=\"operation = 'TRUNCATE'\", ignore_null_updates={ignore_nulls},"
    project.source("p.py", cdc(1, extra))
    truncate = {"userId": None, "name": None, "city": None, "operation": "TRUNCATE"}
    ana = {"userId": 1, "name": "Ana", "city": "Lima", "operation": "INSERT", "sequenceNum": 6}
    project.land("1.json", [{**truncate, "sequenceNum": 5}, ana], folder="users")
    assert project.run().ok
    bo = {"userId": 2, "name": "Bo", "city": "Oslo", "operation": "INSERT", "sequenceNum": 3}
    project.land("2.json", [bo], folder="users")  # late: the truncate emptied it
    assert project.run().ok
    assert target(project) == [(1, "Ana", "Lima")]
    # newer: applies; the truncate delivered again empties nothing newer than itself
    project.land(
        "3.json", [{**bo, "sequenceNum": 7}, {**truncate, "sequenceNum": 5}], folder="users"
    )
    assert project.run().ok
    assert target(project) == [(1, "Ana", "Lima"), (2, "Bo", "Oslo")]


def test_scd1_keeping_the_sequence_column_gives_the_same_rows_in_any_order(project):
    """With ``sequenceNum`` in the target, its rows say how new each key is (the state
    keeps tombstones only): late events, deletes and re-inserts still apply in order."""
    project.source("p.py", cdc(1).replace('["operation", "sequenceNum"]', '["operation"]'))
    late = {"userId": 123, "name": "Isabel", "city": "Puebla", "operation": "UPDATE"}
    batches = [
        list(reversed(EXAMPLE))[:3],
        list(reversed(EXAMPLE))[3:],
        [{**late, "sequenceNum": 4}, {**EXAMPLE[2], "sequenceNum": 3}],  # both too old
        [{**late, "sequenceNum": 7}],  # newer than 123's delete: back
    ]
    for i, rows in enumerate(batches):
        project.land(f"{i}.json", rows, folder="users")
        result = project.run()
        assert result.ok, result.failed()
    assert target(project) == ordered(
        [
            (123, "Isabel", "Puebla", 7),
            (124, "Raul", "Oaxaca", 1),
            (125, "Mercedes", "Guadalajara", 6),
            (126, "Lily", "Cancun", 2),
        ]
    )


@pytest.mark.parametrize("kept", [[], ["sequenceNum"]])
def test_scd1_the_newest_of_a_keys_tombstones_decides(project, kept):
    """A key deleted in several updates: a late upsert older than the last delete stays
    ignored (though newer than the first), and so does a delete delivered again."""
    excluded = ["operation", "sequenceNum"] if not kept else ["operation"]
    project.source("p.py", cdc(1).replace('["operation", "sequenceNum"]', str(excluded)))
    row = {"userId": 1, "name": "Ana", "city": "Lima"}
    gone = {"userId": 1, "name": None, "city": None, "operation": "DELETE"}
    batches = [
        [{**row, "operation": "INSERT", "sequenceNum": 1}, {**gone, "sequenceNum": 2}],
        [{**row, "city": "Cusco", "operation": "UPDATE", "sequenceNum": 3}],
        [{**gone, "sequenceNum": 5}],
        [{**row, "city": "Puno", "operation": "UPDATE", "sequenceNum": 4}, {**gone, "sequenceNum": 5}],
    ]  # fmt: skip
    for i, rows in enumerate(batches):
        project.land(f"{i}.json", rows, folder="users")
        assert project.run().ok
        assert target(project) == ([] if i != 1 else [(1, "Ana", "Cusco", 3)[: 3 + len(kept)]])
    project.land("9.json", [{**row, "operation": "UPDATE", "sequenceNum": 6}], folder="users")
    assert project.run().ok
    assert target(project) == [(1, "Ana", "Lima", 6)[: 3 + len(kept)]]


def test_scd1_tombstones_are_forgotten_after_the_retention(project):
    """With a retention of 0 seconds the next update forgets the tombstone: a late upsert
    older than the delete then applies."""
    project.source(
        "p.py",
        cdc(1).replace(
            'dlt.create_streaming_table("target")',
            'dlt.create_streaming_table("target", table_properties='
            '{"pipelines.cdc.tombstoneGCThresholdInSeconds": "0"})',
        ),
    )
    project.land("1.json", EXAMPLE, folder="users")
    assert project.run().ok
    assert target(project) == ordered(SCD1)
    late = {"userId": 123, "name": "Isabel", "city": "Puebla", "operation": "UPDATE"}
    project.land("2.json", [{**late, "sequenceNum": 4}], folder="users")  # older than the delete
    assert project.run().ok
    assert target(project) == ordered([*SCD1, (123, "Isabel", "Puebla")])


def test_scd1_ignore_null_updates_a_late_value_fills_a_newer_null(project):
    project.source("p.py", cdc(1, "ignore_null_updates=True,"))
    row = {"userId": 1, "name": "Ana", "operation": "UPDATE"}
    project.land("1.json", [{**row, "city": None, "sequenceNum": 5}], folder="users")
    assert project.run().ok
    project.land("2.json", [{**row, "city": "Lima", "sequenceNum": 3}], folder="users")
    assert project.run().ok
    assert target(project) == [(1, "Ana", "Lima")]  # in order: Lima at 3, kept at 5
    project.land("3.json", [{**row, "name": None, "city": None, "sequenceNum": 4,
                             "operation": "DELETE"}], folder="users")  # fmt: skip
    assert project.run().ok
    assert target(project) == [(1, "Ana", None)]  # deleted at 4: Lima is gone, Ana at 5 stays


def test_a_sequence_by_column_naming_a_kept_column_is_that_column(spark):
    """``col("sequenceNum")`` is the column itself, as the name is: SCD1 then keeps
    tombstones only (no MERGE of the state per batch); an expression is not, even one
    whose text reads like the name (a literal, a cast)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    from headwater.pipelines.define.auto_cdc import auto_cdc, resolve
    from headwater.pipelines.define.elements import Origin

    schema = StructType.fromDDL("userId bigint, name string, sequenceNum bigint")

    def kept(sequence_by) -> str | None:
        spec = auto_cdc("users", ["userId"], sequence_by)
        return resolve(spark, spec, schema, Origin("p.py")).sequence_column

    assert kept("sequenceNum") == kept(F.col("sequenceNum")) == "sequenceNum"
    assert kept(F.col("`sequencenum`")) == "sequenceNum"
    assert kept(F.lit("sequenceNum")) is None
    assert kept(F.col("sequenceNum").cast("int")) is None
    assert kept(F.col("sequenceNum") + 1) is None
