"""AUTO CDC as users write it (``dlt.create_auto_cdc_flow``, ``dlt.apply_changes``,
``dp.create_auto_cdc_flow``, SQL ``AUTO CDC INTO`` / ``APPLY CHANGES INTO``), checked
against the exact tables of the known system's documented example (users 123-126) and
against late events arriving in later updates."""

from __future__ import annotations

import json

import pytest

from headwater.errors import PipelineDefinitionError

USERS = """
import dlt
from pyspark.sql.functions import col, expr


@dlt.table
def users():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .schema("userId bigint, name string, city string, operation string, sequenceNum bigint")
        .load(spark.conf.get("source_dir") + "/users")
    )
"""

# The documented example: inserts, a delete and two updates arriving out of order.
EXAMPLE = [
    {"userId": 124, "name": "Raul", "city": "Oaxaca", "operation": "INSERT", "sequenceNum": 1},
    {"userId": 123, "name": "Isabel", "city": "Monterrey", "operation": "INSERT", "sequenceNum": 1},
    {"userId": 125, "name": "Mercedes", "city": "Tijuana", "operation": "INSERT", "sequenceNum": 2},
    {"userId": 126, "name": "Lily", "city": "Cancun", "operation": "INSERT", "sequenceNum": 2},
    {"userId": 123, "name": None, "city": None, "operation": "DELETE", "sequenceNum": 6},
    {"userId": 125, "name": "Mercedes", "city": "Guadalajara", "operation": "UPDATE", "sequenceNum": 6},
    {"userId": 125, "name": "Mercedes", "city": "Mexicali", "operation": "UPDATE", "sequenceNum": 5},
    {"userId": 123, "name": "Isabel", "city": "Chihuahua", "operation": "UPDATE", "sequenceNum": 5},
]  # fmt: skip

SCD1 = [(124, "Raul", "Oaxaca"), (125, "Mercedes", "Guadalajara"), (126, "Lily", "Cancun")]
SCD2 = [
    (123, "Isabel", "Monterrey", 1, 5),
    (123, "Isabel", "Chihuahua", 5, 6),
    (124, "Raul", "Oaxaca", 1, None),
    (125, "Mercedes", "Tijuana", 2, 5),
    (125, "Mercedes", "Mexicali", 5, 6),
    (125, "Mercedes", "Guadalajara", 6, None),
    (126, "Lily", "Cancun", 2, None),
]
SCD2_CITY_UNTRACKED = [
    (123, "Isabel", "Chihuahua", 1, 6),
    (124, "Raul", "Oaxaca", 1, None),
    (125, "Mercedes", "Guadalajara", 2, None),
    (126, "Lily", "Cancun", 2, None),
]


def cdc(scd: int, extra: str = "", call: str = "create_auto_cdc_flow") -> str:
    return (
        USERS
        + f"""
dlt.create_streaming_table("target")
dlt.{call}(
    target="target",
    source="users",
    keys=["userId"],
    sequence_by=col("sequenceNum"),
    apply_as_deletes=expr("operation = 'DELETE'"),
    except_column_list=["operation", "sequenceNum"],
    stored_as_scd_type={scd},
    {extra}
)
"""
    )


def target(project) -> list[tuple]:
    df = project.spark.table(f"{project.database}.target")
    return sorted((tuple(r) for r in df.collect()), key=lambda r: tuple(map(str, r)))


def ordered(rows: list[tuple]) -> list[tuple]:
    return sorted(rows, key=lambda r: tuple(map(str, r)))


def progress(result, flow: str = "target") -> dict:
    found = [
        e.details
        for e in result.events
        if e.event_type == "flow_progress" and e.flow_name == flow and "metrics" in e.details
    ]
    return found[-1]["metrics"]


def test_documented_example_scd1(project):
    project.source("p.py", cdc(1))
    project.land("1.json", EXAMPLE, folder="users")
    result = project.run()
    assert result.ok, result.failed()
    assert target(project) == ordered(SCD1)
    assert project.spark.table(f"{project.database}.target").columns == ["userId", "name", "city"]
    metrics = progress(result)
    assert metrics["num_upserted_rows"] == 3 and metrics["num_deleted_rows"] == 0


def test_documented_example_scd2(project):
    project.source("p.py", cdc(2, call="apply_changes"))
    project.land("1.json", EXAMPLE, folder="users")
    result = project.run()
    assert result.ok, result.failed()
    assert target(project) == ordered(SCD2)


def test_documented_example_scd2_with_untracked_city(project):
    project.source("p.py", cdc(2, 'track_history_except_column_list=["city"],'))
    project.land("1.json", EXAMPLE, folder="users")
    result = project.run()
    assert result.ok, result.failed()
    assert target(project) == ordered(SCD2_CITY_UNTRACKED)


@pytest.mark.parametrize("scd", [1, 2])
def test_events_split_across_updates_in_any_order_give_the_same_table(project, scd):
    project.source("p.py", cdc(scd))
    for i, event in enumerate(reversed(EXAMPLE)):  # one update per event, newest first
        project.land(f"{i}.json", [event], folder="users")
        if i % 3 == 0 or i == len(EXAMPLE) - 1:
            result = project.run()
            assert result.ok, result.failed()
    assert target(project) == ordered(SCD1 if scd == 1 else SCD2)


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


SQL_FORMS = {
    "auto_cdc": """
CREATE OR REFRESH STREAMING TABLE target;
CREATE FLOW users_cdc AS AUTO CDC INTO target
FROM STREAM(users)
KEYS (userId)
APPLY AS DELETE WHEN operation = "DELETE"
SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation, sequenceNum)
STORED AS SCD TYPE {scd};
""",
    "apply_changes": """
CREATE OR REFRESH STREAMING TABLE target;
APPLY CHANGES INTO LIVE.target
FROM STREAM(LIVE.users)
KEYS (userId)
APPLY AS DELETE WHEN operation = "DELETE"
SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation, sequenceNum)
STORED AS SCD TYPE {scd};
""",
}


SQL_FORMS["track_history"] = """
CREATE OR REFRESH STREAMING TABLE target;
CREATE FLOW users_cdc AS AUTO CDC INTO target FROM STREAM(users) KEYS (userId)
APPLY AS DELETE WHEN operation = "DELETE" SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation, sequenceNum) STORED AS SCD TYPE {scd}
TRACK HISTORY ON * EXCEPT (city);
"""
SQL_FORMS["scd1_columns_nulls_truncate"] = """
CREATE OR REFRESH STREAMING TABLE target;
APPLY CHANGES INTO LIVE.target FROM STREAM(LIVE.users) WHERE userId <> 126 OR userId IS NULL
KEYS (userId) IGNORE NULL UPDATES
APPLY AS DELETE WHEN operation = "DELETE" APPLY AS TRUNCATE WHEN operation = "TRUNCATE"
SEQUENCE BY sequenceNum COLUMNS userId, city;
"""
SQL_EXPECTED = {
    "auto_cdc": SCD2,
    "apply_changes": SCD2,
    "track_history": SCD2_CITY_UNTRACKED,
    # 126 filtered out; a null city keeps the old one; the truncate at 3 empties the
    # table, then the events after it apply (123's delete at 6 wins over 5)
    "scd1_columns_nulls_truncate": [(124, "Oaxaca"), (125, "Guadalajara")],
}


@pytest.mark.parametrize("form", sorted(SQL_FORMS))
def test_sql_forms(project, form):
    project.source("users.py", USERS)
    project.source("cdc.sql", SQL_FORMS[form].format(scd=2))
    events = EXAMPLE
    if form == "scd1_columns_nulls_truncate":
        null_city = {"userId": 124, "name": "Raul", "city": None, "operation": "UPDATE"}
        truncate = {"userId": None, "name": None, "city": None, "operation": "TRUNCATE"}
        events = [
            *EXAMPLE,
            {**truncate, "sequenceNum": 3},
            {**EXAMPLE[0], "sequenceNum": 4},
            {**null_city, "sequenceNum": 7},
        ]
    project.land("1.json", events, folder="users")
    result = project.run()
    assert result.ok, result.failed()
    assert target(project) == ordered(SQL_EXPECTED[form])


def test_sdp_create_auto_cdc_flow(project):
    project.source("users.py", USERS)
    project.source(
        "cdc.py",
        """
from pyspark import pipelines as dp

dp.create_streaming_table("target")
dp.create_auto_cdc_flow(
    target="target", source="users", keys=["userId"], sequence_by="sequenceNum",
    apply_as_deletes="operation = 'DELETE'", except_column_list=["operation", "sequenceNum"],
    stored_as_scd_type=1,
)
""",
    )
    project.land("1.json", EXAMPLE, folder="users")
    result = project.run()
    assert result.ok, result.failed()
    assert target(project) == ordered(SCD1)


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        ('keys=["nope"], sequence_by="sequenceNum"', "PIPELINE_AUTO_CDC_UNKNOWN_COLUMN"),
        ('keys=["userId"], sequence_by="nope + 1"', "PIPELINE_AUTO_CDC_INVALID"),
        (
            'keys=["userId"], sequence_by="sequenceNum", track_history_column_list=["city"]',
            "PIPELINE_AUTO_CDC_INVALID",
        ),
    ],
)
def test_bad_arguments_are_named_errors_before_anything_runs(project, extra, error):
    project.source(
        "p.py",
        USERS
        + f"""
dlt.create_streaming_table("target")
dlt.create_auto_cdc_flow(target="target", source="users", {extra})
""",
    )
    with pytest.raises(PipelineDefinitionError, match=error):
        project.run()


def test_null_sequence_value_is_a_named_error(project):
    project.source("p.py", cdc(1))
    project.land("1.json", [{**EXAMPLE[0], "sequenceNum": None}], folder="users")
    result = project.run()
    assert not result.ok
    assert "PIPELINE_AUTO_CDC_NULL_SEQUENCE" in str(result.failed()[0].error)


CRASH = """
import dlt

@dlt.table
def changes():
    return (
        spark.readStream.format("cloudFiles").option("cloudFiles.format", "json")
        .option("cloudFiles.maxFilesPerTrigger", "1")
        .schema("id bigint, v bigint, op string, seq bigint")
        .load(spark.conf.get("source_dir") + "/changes")
    )

for scd in (1, 2):
    dlt.create_streaming_table(f"scd{scd}")
    dlt.create_auto_cdc_flow(
        target=f"scd{scd}", source="changes", keys=["id"], sequence_by="seq",
        apply_as_deletes="op = 'D'", except_column_list=["op", "seq"], stored_as_scd_type=scd,
    )
"""


def change_files(n_files: int, per_file: int, seed: int) -> list[list[dict]]:
    """Upserts and deletes of 30 keys; each file's sequence values are shuffled in."""
    import random

    rng = random.Random(seed)
    seqs = list(range(1, n_files * per_file + 1))
    rng.shuffle(seqs)
    files = []
    for f in range(n_files):
        rows = []
        for i in range(per_file):
            seq = seqs[f * per_file + i]
            op = "D" if rng.random() < 0.15 else "U"
            rows.append({"id": rng.randrange(30), "v": rng.randrange(4), "op": op, "seq": seq})
        files.append(rows)
    return files


def expected_scd1(events: list[dict]) -> list[tuple]:
    latest: dict[int, dict] = {}
    for e in sorted(events, key=lambda e: e["seq"]):
        latest[e["id"]] = e
    return sorted((k, e["v"]) for k, e in latest.items() if e["op"] == "U")


def expected_scd2(events: list[dict]) -> list[tuple]:
    """Each key's versions: a change of ``v`` opens one, a delete closes the open one."""
    out = []
    by_key: dict[int, list[dict]] = {}
    for e in sorted(events, key=lambda e: e["seq"]):
        by_key.setdefault(e["id"], []).append(e)
    for key, evs in by_key.items():
        current: list | None = None
        for e in evs:
            if e["op"] == "D" or current is None or current[1] != e["v"]:
                if current is not None:
                    out.append((*current[:3], e["seq"]))
                current = None if e["op"] == "D" else [key, e["v"], e["seq"]]
        if current is not None:
            out.append((*current, None))
    return ordered(out)


def test_expected_tables_of_the_crash_test_follow_the_documented_rules():
    events = [
        {"id": 1, "v": 0, "op": "U", "seq": 1},
        {"id": 1, "v": 0, "op": "U", "seq": 2},
        {"id": 1, "v": 1, "op": "U", "seq": 3},
        {"id": 1, "v": 1, "op": "D", "seq": 4},
        {"id": 2, "v": 0, "op": "D", "seq": 5},
        {"id": 2, "v": 3, "op": "U", "seq": 6},
    ]
    assert expected_scd1(events) == [(2, 3)]
    assert expected_scd2(events) == ordered([(1, 0, 1, 3), (1, 1, 3, 4), (2, 3, 6, None)])


@pytest.mark.slow
def test_auto_cdc_killed_repeatedly_then_rerun_equals_an_uninterrupted_run(tmp_path):
    import random

    from tests.pipelines.test_crash import finish_and_read, project, run_and_kill

    root, database, warehouse = project(tmp_path, CRASH, "cdc")
    files = change_files(12, 40, seed=5)
    folder = tmp_path / "landing" / "changes"
    folder.mkdir(parents=True)
    rng = random.Random(3)
    for round_ in range(3):
        for i in range(round_ * 4, round_ * 4 + 4):
            (folder / f"{i:03d}.json").write_text("".join(json.dumps(r) + "\n" for r in files[i]))
        run_and_kill(root, warehouse, "", rng.uniform(2.0, 10.0))
    got = finish_and_read(
        root,
        warehouse,
        database,
        """
        out = {t: [list(r) for r in spark.table(f"{db}.{t}").collect()] for t in ("scd1", "scd2")}
        print("RESULT", json.dumps(out))
        """,
    )
    events = [e for f in files for e in f]
    assert ordered([tuple(r) for r in got["scd1"]]) == ordered(expected_scd1(events))
    assert ordered([tuple(r) for r in got["scd2"]]) == expected_scd2(events)


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


def test_downstream_reads_the_target_in_batch_and_as_a_stream_skipping_change_commits(project):
    project.source(
        "p.py",
        cdc(1)
        + """
@dlt.table
def per_city():  # a materialized view over the target
    return spark.read.table("target").groupBy("city").count()


@dlt.table
def inserted():  # a stream of the target's appends; MERGE commits are skipped
    return spark.readStream.option("skipChangeCommits", "true").table("target")
""",
    )
    project.land("1.json", EXAMPLE[:4], folder="users")
    assert project.run().ok
    project.land("2.json", EXAMPLE[4:], folder="users")
    result = project.run()
    assert result.ok, result.failed()
    assert sorted(project.rows("per_city")) == [("Cancun", 1), ("Guadalajara", 1), ("Oaxaca", 1)]
    # the first batch into the empty target only inserted (read); the second rewrote rows
    # (a change commit, skipped)
    assert sorted(r[0] for r in project.rows("inserted")) == [123, 124, 125, 126]


def test_full_refresh_rebuilds_the_target_from_the_source(project):
    project.source("p.py", cdc(2))
    project.land("1.json", EXAMPLE, folder="users")
    assert project.run().ok
    result = project.run(full_refresh=["target"])
    assert result.ok, result.failed()
    assert target(project) == ordered(SCD2)


def test_sequence_by_a_struct_orders_by_its_fields(project):
    project.source(
        "p.py",
        USERS
        + """
from pyspark.sql.functions import struct

dlt.create_streaming_table("target")
dlt.create_auto_cdc_flow(
    target="target", source="users", keys=["userId"],
    sequence_by=struct("sequenceNum", "city"), except_column_list=["operation"],
    stored_as_scd_type=1,
)
""",
    )
    rows = [
        {"userId": 1, "name": "a", "city": "b", "operation": "U", "sequenceNum": 1},
        {"userId": 1, "name": "b", "city": "c", "operation": "U", "sequenceNum": 1},  # wins
        {"userId": 1, "name": "c", "city": "a", "operation": "U", "sequenceNum": 1},
    ]
    project.land("1.json", rows, folder="users")
    assert project.run().ok
    assert target(project) == [(1, "b", "c", 1)]


def test_null_key_is_a_named_error(project):
    project.source("p.py", cdc(1))
    project.land("1.json", [{**EXAMPLE[0], "userId": None}], folder="users")
    result = project.run()
    assert not result.ok
    assert "PIPELINE_AUTO_CDC_NULL_KEY" in str(result.failed()[0].error)


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
