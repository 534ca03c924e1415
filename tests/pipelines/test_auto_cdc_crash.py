"""AUTO CDC killed repeatedly, then rerun: both targets equal an uninterrupted run's."""

from __future__ import annotations

import json

import pytest

from tests.pipelines.auto_cdc_cases import ordered

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
def test_auto_cdc_killed_repeatedly_then_rerun_equals_an_uninterrupted_run(spark, tmp_path):
    import random

    from tests.pipelines.test_crash import project, run_and_kill, run_here, shared_warehouse

    root, database, _ = project(tmp_path, CRASH, "cdc")
    warehouse = shared_warehouse(spark)  # the rerun and the checks: the test's own session
    files = change_files(12, 40, seed=5)
    folder = tmp_path / "landing" / "changes"
    folder.mkdir(parents=True)
    rng = random.Random(3)
    for round_ in range(3):
        for i in range(round_ * 4, round_ * 4 + 4):
            (folder / f"{i:03d}.json").write_text("".join(json.dumps(r) + "\n" for r in files[i]))
        run_and_kill(root, warehouse, "", rng.uniform(2.0, 10.0))
    run_here(spark, root)
    got = {t: spark.table(f"{database}.{t}").collect() for t in ("scd1", "scd2")}
    events = [e for f in files for e in f]
    assert ordered([tuple(r) for r in got["scd1"]]) == ordered(expected_scd1(events))
    assert ordered([tuple(r) for r in got["scd2"]]) == expected_scd2(events)
