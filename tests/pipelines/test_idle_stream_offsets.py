"""Which committed Delta source offsets say a stream has nothing new (Spark-free): both
engines' shapes, read from a checkpoint's files as Spark writes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from headwater.pipelines.runner.idle_streams import committed_offset, next_version

METADATA = {"batchWatermarkMs": 0, "batchTimestampMs": 1, "conf": {}}
DELTA_SPARK = {"sourceVersion": 1, "reservoirId": "t-1", "reservoirVersion": 7}


@pytest.mark.parametrize(
    ("offset", "version"),
    [
        ({"version": 7, "index": 0, "snapshot": False}, 7),
        ({"version": 7, "index": 0, "snapshot": False, "unread": True}, None),
        ({"version": 7, "index": 3, "snapshot": False}, None),  # inside version 7
        ({"version": 7, "index": 0, "snapshot": True}, None),  # inside a snapshot
        ({"version": 7, "index": 0}, None),
        ({**DELTA_SPARK, "index": -1, "isStartingVersion": False}, 7),
        ({**DELTA_SPARK, "index": 4, "isStartingVersion": False}, None),
        ({**DELTA_SPARK, "index": -1, "isStartingVersion": True}, None),
        ({**DELTA_SPARK, "sourceVersion": 3, "index": -20, "isStartingVersion": False}, None),
        ({**DELTA_SPARK, "index": -1}, None),
        ({"reservoirVersion": "x", "index": -1, "isStartingVersion": False}, None),
    ],
)
def test_only_a_caught_up_offset_names_the_version_read_next(offset, version):
    assert next_version(offset) == version


def checkpoint(root: Path, offsets: dict[int, dict], commits: dict[int, int]) -> str:
    for name in ("offsets", "commits"):
        (root / name).mkdir(parents=True)
    for batch, source in offsets.items():
        lines = ["v1", json.dumps(METADATA), json.dumps(source)]
        (root / "offsets" / str(batch)).write_text("\n".join(lines))
    for batch, watermark in commits.items():
        lines = ["v1", json.dumps({"nextBatchWatermarkMs": watermark})]
        (root / "commits" / str(batch)).write_text("\n".join(lines))
    return str(root)


def test_the_last_batchs_offset_counts_only_when_it_is_committed(tmp_path: Path):
    source = {**DELTA_SPARK, "index": -1, "isStartingVersion": False}
    done = checkpoint(tmp_path / "done", {0: {"x": 1}, 1: source}, {0: 0, 1: 0})
    assert committed_offset(done) == source
    planned = checkpoint(tmp_path / "planned", {0: {"x": 1}, 1: source}, {0: 0})
    assert committed_offset(planned) is None  # batch 1 planned, not committed (a crash)
    owed = checkpoint(tmp_path / "owed", {1: source}, {1: 5})
    assert committed_offset(owed) is None  # the watermark owes a batch
    assert committed_offset(str(tmp_path / "none")) is None
