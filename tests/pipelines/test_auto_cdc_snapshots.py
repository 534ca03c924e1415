"""AUTO CDC from snapshots (``create_auto_cdc_from_snapshot_flow`` /
``apply_changes_from_snapshot``): a table read whole, or a function giving each next
snapshot and its version."""

from __future__ import annotations

import pytest

from tests.pipelines.auto_cdc_cases import ordered, progress, target

# A whole file of pipeline updates (minutes in CI): with the crash and benchmark files, it
# runs in one of the three parts scripts/test.sh takes in turn, a part per commit.
pytestmark = pytest.mark.slow

SNAPSHOT_TABLE = """
import dlt


@dlt.table
def snapshot_source():  # a materialized view: the latest full snapshot, read whole
    return spark.read.schema("id bigint, name string").json(
        spark.conf.get("source_dir") + "/snapshot"
    )


dlt.create_streaming_table("target")
dlt.{call}(target="target", source="snapshot_source", keys=["id"], stored_as_scd_type={scd})
"""


@pytest.mark.parametrize("scd", [1, 2])
def test_snapshots_from_a_table_become_changes(project, scd):
    call = "create_auto_cdc_from_snapshot_flow" if scd == 1 else "apply_changes_from_snapshot"
    project.source("p.py", SNAPSHOT_TABLE.format(call=call, scd=scd))
    snapshot = project.landing / "snapshot"
    project.land(
        "s.json",
        [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": 3, "name": "c"}],
        folder="snapshot",
    )
    assert project.run().ok
    (snapshot / "s.json").unlink()
    project.land(
        "s.json",
        [{"id": 1, "name": "a"}, {"id": 2, "name": "B"}, {"id": 4, "name": "d"}],
        folder="snapshot",
    )
    result = project.run()
    assert result.ok, result.failed()
    if scd == 1:
        assert target(project) == [(1, "a"), (2, "B"), (4, "d")]
    else:  # key 3 is absent from the second snapshot: deleted at its version
        assert target(project) == ordered(
            [
                (1, "a", 1, None),
                (2, "b", 1, 2),
                (2, "B", 2, None),
                (3, "c", 1, 2),
                (4, "d", 2, None),
            ]
        )
    assert progress(result)["num_deleted_rows"] == (1 if scd == 1 else 0)
    assert project.run().ok  # the same snapshot again changes nothing
    assert len(target(project)) == (3 if scd == 1 else 5)


SNAPSHOT_FUNCTION = """
import dlt

SNAPSHOTS = {
    1: [(1, "a", "x"), (2, "b", "x")],
    2: [(1, "a", "y"), (2, "c", "x"), (3, "d", "x")],
    3: [(2, "c", "x"), (3, "d", "z")],
}


def next_snapshot_and_version(latest):
    version = 1 if latest is None else latest + 1
    if version not in SNAPSHOTS:
        return None
    return spark.createDataFrame(SNAPSHOTS[version], "id long, name string, note string"), version


dlt.create_streaming_table("target")
dlt.create_auto_cdc_from_snapshot_flow(
    target="target", source=next_snapshot_and_version, keys=["id"], stored_as_scd_type=2,
    track_history_except_column_list=["note"],
)
"""


def test_snapshots_from_a_function_apply_in_version_order_once(project):
    project.source("p.py", SNAPSHOT_FUNCTION)
    result = project.run()
    assert result.ok, result.failed()
    assert target(project) == ordered(
        [
            (1, "a", "y", 1, 3),  # a note-only change updates in place; gone from snapshot 3
            (2, "b", "x", 1, 2),
            (2, "c", "x", 2, None),
            (3, "d", "z", 2, None),
        ]
    )
    assert project.run().ok  # no newer snapshot: nothing changes
    assert len(target(project)) == 4


def test_snapshots_from_a_function_as_scd1_keep_each_keys_last_row(project):
    source = SNAPSHOT_FUNCTION.replace("stored_as_scd_type=2,", "stored_as_scd_type=1,").replace(
        '    track_history_except_column_list=["note"],\n', ""
    )
    assert "stored_as_scd_type=1" in source and "track_history" not in source
    project.source("p.py", source)
    result = project.run()
    assert result.ok, result.failed()
    # key 1 left at snapshot 3; key 2 changed at 2; key 3 changed (note) at 3
    assert target(project) == [(2, "c", "x"), (3, "d", "z")]
    assert project.run().ok  # no newer snapshot: nothing changes
    assert target(project) == [(2, "c", "x"), (3, "d", "z")]


DEMO = """
import dlt

SNAPSHOTS = {
    1: [(1, "placed", 10), (2, "placed", 20)],
    2: [(1, "shipped", 10), (2, "placed", 25), (3, "placed", 30)],
    3: [(1, "shipped", 11), (3, "delivered", 30)],
}


def next_snapshot_and_version(latest_snapshot_version):
    version = 1 if latest_snapshot_version is None else latest_snapshot_version + 1
    if version not in SNAPSHOTS:
        return None
    schema = "order_id long, order_status string, amount long"
    return spark.createDataFrame(SNAPSHOTS[version], schema), version


dlt.create_streaming_table(
    name="orders",
    comment="Clean, merged final table from the full snapshots",
    table_properties={"quality": "gold"},
)

dlt.apply_changes_from_snapshot(
    target="orders",
    snapshot_and_version=next_snapshot_and_version,
    keys=["order_id"],
    stored_as_scd_type=2,
    track_history_column_list=["order_status"],
)
"""


def test_the_published_snapshot_demo_call_runs(project):
    """The platform's snapshot demo names the function ``snapshot_and_version``."""
    project.source("p.py", DEMO)
    result = project.run()
    assert result.ok, result.failed()
    rows = sorted(project.rows("orders"), key=str)
    assert rows == ordered(
        [
            (1, "placed", 10, 1, 2),
            (1, "shipped", 11, 2, None),  # an untracked amount changes in place
            (2, "placed", 25, 1, 3),  # gone from snapshot 3
            (3, "placed", 30, 2, 3),
            (3, "delivered", 30, 3, None),
        ]
    )


def test_snapshot_flow_arguments_name_what_is_missing():
    from headwater.pipelines import apply_changes_from_snapshot

    def f(version):
        return None

    with pytest.raises(TypeError, match="not both"):
        apply_changes_from_snapshot(target="x", source="t", snapshot_and_version=f, keys=["id"])
    with pytest.raises(TypeError, match="source is required"):
        apply_changes_from_snapshot(target="x", keys=["id"])
    with pytest.raises(TypeError, match="keys is required"):
        apply_changes_from_snapshot(target="x", snapshot_and_version=f)
