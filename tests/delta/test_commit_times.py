"""Commit times as the Delta protocol defines them (Spark-free): file times, monotonized as
delta-spark does, or in-commit timestamps from the version that turned them on.
The two engines reading one table are compared in tests/engines (delta-spark tier)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from headwater.delta.log import commit_times
from headwater.delta.log.commit_times import ChangeTimes, file_times, monotonic, stamp_history


def commit(log: Path, version: int, mtime_s: float, info: dict | None = None) -> None:
    log.mkdir(parents=True, exist_ok=True)
    path = log / f"{version:020d}.json"
    info = {"timestamp": 1_000 + version, **(info or {})}
    path.write_text(json.dumps({"commitInfo": info}) + "\n")
    os.utime(path, (mtime_s, mtime_s))


def test_times_going_backwards_become_one_millisecond_after_the_previous():
    assert monotonic([(0, 10), (1, 5), (2, 5), (3, 20), (4, 20)]) == {
        0: 10, 1: 11, 2: 12, 3: 20, 4: 21
    }  # fmt: skip


def test_file_times_come_from_one_listing_in_milliseconds_truncated(tmp_path):
    log = tmp_path / "_delta_log"
    commit(log, 0, 1_900_000_000.0019)
    commit(log, 1, 1_900_000_005.5)
    commit(log, 2, 1_900_000_003)  # older than version 1: a copy, a clock step
    (log / "00000000000000000002.checkpoint.parquet").write_bytes(b"")
    (log / "_last_checkpoint").write_text("{}")
    assert file_times(str(log)) == {
        0: 1_900_000_000_001,
        1: 1_900_000_005_500,
        2: 1_900_000_005_501,
    }
    # monotonized from the first version asked: before it, nothing moves it
    assert file_times(str(log), start=2) == {2: 1_900_000_003_000}
    assert file_times(str(log), 0, 1) == {0: 1_900_000_000_001, 1: 1_900_000_005_500}


def test_history_takes_file_times_until_in_commit_timestamps_were_turned_on(tmp_path):
    log = tmp_path / "_delta_log"
    for version in range(4):
        commit(log, version, 1_900_000_000 + 10 * version, {"inCommitTimestamp": 7_000 + version})
    history = [{"version": v, "timestamp": 1_000 + v} for v in range(4)]
    if_plain = stamp_history(str(log), history, {})
    assert [h["timestamp"] for h in if_plain] == [1_900_000_000_000 + 10_000 * v for v in range(4)]
    assert [h["commitInfoTimestamp"] for h in if_plain] == [1_000, 1_001, 1_002, 1_003]
    history = [{**h, "inCommitTimestamp": 7_000 + h["version"]} for h in history]
    since_2 = {commit_times.ENABLED: "true", commit_times.ENABLEMENT_VERSION: "2"}
    found = [h["timestamp"] for h in stamp_history(str(log), history, since_2)]
    assert found == [1_900_000_000_000, 1_900_000_010_000, 7_002, 7_003]
    always = [
        h["timestamp"] for h in stamp_history(str(log), history, {commit_times.ENABLED: "true"})
    ]
    assert always == [7_000, 7_001, 7_002, 7_003]
    # turned off again: every commit's file time, as delta-spark's history shows
    off = {commit_times.ENABLED: "false", commit_times.ENABLEMENT_VERSION: "2"}
    assert [h["timestamp"] for h in stamp_history(str(log), history, off)] == if_plain_times(log)


def if_plain_times(log: Path) -> list[int]:
    return [file_times(str(log))[v] for v in range(4)]


def test_change_feed_times_are_in_commit_timestamps_where_given_and_list_the_log_once(tmp_path):
    log = tmp_path / "_delta_log"
    commit(log, 0, 1_900_000_000)
    commit(log, 1, 1_899_999_000)  # backwards: one ms after version 0
    commit(log, 2, 1_900_000_100, {"inCommitTimestamp": 5})
    times = ChangeTimes(str(log), start=1)
    actions = {
        v: [json.loads(line) for line in (log / f"{v:020d}.json").read_text().splitlines()]
        for v in range(3)
    }
    assert times.of(1, actions[1]) == 1_900_000_000_001  # monotonized from before the start
    assert times.of(2, actions[2]) == 5
    commit(log, 3, 1_900_000_200)  # committed after the listing: listed again
    actions[3] = [json.loads((log / f"{3:020d}.json").read_text())]
    assert times.of(3, actions[3]) == 1_900_000_200_000
