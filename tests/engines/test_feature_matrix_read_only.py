"""Tables shared both ways, the features headwater's engine reads but does not write: v2
checkpoints and in-commit timestamps (row tracking, which it writes: test_row_tracking_engines).

Their writer rules (checkpoints in the v2 layout; a monotonic in-commit timestamp in every
commit) are not kept by headwater's commits. So in the direction "headwater creates",
creating such a table is refused by name before anything is written, and on delta-spark's
tables every headwater write is refused by name with the table left as it was, while
headwater reads them exactly as delta-spark does: from the other engine's v2 checkpoint,
and travelling in time by the in-commit timestamps.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.engines.peer import Peer, PeerError
from tests.engines.test_feature_matrix import latest, named, refused
from tests.engines.test_shared_tables import assert_same_table, forget_commits_before, table

COLUMNS = "id BIGINT, v STRING"
ROWS = "SELECT id, concat('v', id) AS v FROM range({}, {})"


def insert(path: str, start: int, stop: int) -> str:
    return f"INSERT INTO {table(path)} " + ROWS.format(start, stop)


def create(path: str, properties: str) -> str:
    return f"CREATE TABLE {table(path)} ({COLUMNS}) USING DELTA TBLPROPERTIES ({properties})"


def creation_refused(ours: Peer, path: str, properties: str, feature: str) -> None:
    """headwater refuses to create the table, naming the feature, and writes no log."""
    with pytest.raises(PeerError) as caught:
        ours.sql(create(path, properties))
    assert named(caught.value, "UnsupportedFeatureError"), caught.value
    assert feature in caught.value.message
    assert not list(Path(path, "_delta_log").glob("*.json")), "a commit was written"


def writes_refused(ours: Peer, path: str, feature: str) -> None:
    """Every kind of headwater write to the table fails naming ``feature``; no commit."""
    for statement in (
        insert(path, 1000, 1001),
        f"UPDATE {table(path)} SET v = 'x' WHERE id = 7",  # rows every table here holds
        f"DELETE FROM {table(path)} WHERE id = 8",
        f"MERGE INTO {table(path)} t USING ({ROWS.format(6, 9)}) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = 'm'",
        f"OPTIMIZE {table(path)}",
    ):
        error = refused(ours, path, statement, feature)
        assert named(error, "UnsupportedFeatureError"), error


def v2_checkpoints(path: str) -> list[int]:
    """Versions with a v2 checkpoint (named by a UUID, the top file of its sidecars)."""
    found = Path(path, "_delta_log").glob("*.checkpoint.*-*-*-*-*.*")
    return sorted({int(p.name.split(".")[0]) for p in found if not p.name.startswith(".")})


def test_v2_checkpoints(engines, tmp_path):
    ours, theirs = engines["headwater"], engines["delta-spark"]
    properties = "'delta.checkpointPolicy' = 'v2', 'delta.checkpointInterval' = '3'"
    creation_refused(ours, str(tmp_path / "ours"), properties, "v2Checkpoint")

    path = str(tmp_path / "t")
    theirs.sql(
        create(path, properties),
        insert(path, 0, 10),
        insert(path, 10, 20),
        f"DELETE FROM {table(path)} WHERE id % 5 = 0",  # 3: the first checkpoint
    )
    assert v2_checkpoints(path) == [3]
    forget_commits_before(path, 3)
    assert_same_table(theirs, ours, path)
    writes_refused(ours, path, "v2Checkpoint")
    theirs.sql(insert(path, 20, 30), insert(path, 30, 40), insert(path, 40, 50))  # 4-6
    assert v2_checkpoints(path) == [3, 6]
    forget_commits_before(path, 6)
    rows = assert_same_table(theirs, ours, path)
    assert sorted(r[0] for r in rows) == [i for i in range(50) if i >= 20 or i % 5]


def commit_timestamps(path: str) -> dict[int, int]:
    """Each commit's in-commit timestamp (ms), from its commitInfo, the first action."""
    stamps = {}
    for commit in Path(path, "_delta_log").glob("*.json"):
        first = json.loads(commit.read_text().splitlines()[0])
        stamps[int(commit.name.split(".")[0])] = first["commitInfo"]["inCommitTimestamp"]
    return stamps


def history_times(spark, path: str) -> list[tuple]:
    found = spark.sql(f"DESCRIBE HISTORY {table(path)}")
    return found.select("version", "timestamp").orderBy("version").collect()


def shown(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def test_in_commit_timestamps(engines, tmp_path):
    ours, theirs = engines["headwater"], engines["delta-spark"]
    properties = "'delta.enableInCommitTimestamps' = 'true'"
    creation_refused(ours, str(tmp_path / "ours"), properties, "inCommitTimestamp")

    path = str(tmp_path / "t")
    theirs.sql(create(path, properties), insert(path, 0, 10), insert(path, 10, 20))
    theirs.sql(f"DELETE FROM {table(path)} WHERE id < 5")
    stamps = commit_timestamps(path)
    assert [stamps[v] for v in sorted(stamps)] == sorted(set(stamps.values()))  # monotonic
    # As after a copy of the table, file times say nothing; and commitInfo's own timestamp
    # (a writer's clock, which the protocol lets differ) is an hour off: only the in-commit
    # timestamps count, on both engines.
    for version in stamps:
        commit = Path(path, "_delta_log", f"{version:020d}.json")
        lines = commit.read_text().splitlines()
        info = json.loads(lines[0])
        info["commitInfo"]["timestamp"] -= 3_600_000
        commit.write_text("\n".join([json.dumps(info), *lines[1:]]) + "\n")
        Path(path, "_delta_log", f".{commit.name}.crc").unlink(missing_ok=True)  # Hadoop's
        os.utime(commit, (2_000_000_000 - version, 2_000_000_000 - version))
    assert ours.call(history_times, path) == theirs.call(history_times, path)
    for version in (1, 2):
        at = assert_same_table(theirs, ours, path, timestampAsOf=shown(stamps[version]))
        assert at == assert_same_table(theirs, ours, path, versionAsOf=version)
    writes_refused(ours, path, "inCommitTimestamp")
    assert latest(path) == 3
