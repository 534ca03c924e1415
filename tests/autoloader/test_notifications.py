"""File notification mode (``cloudFiles.useNotifications``) on a local folder: a landing
file ends an idle trigger at once instead of waiting for the next one, files that landed
while the stream was down are found by its first listing, and every file is read once."""

from __future__ import annotations

import json
import os
import threading
import time

from pyspark.sql.streaming.datasource import ReadMaxFiles
from pyspark.sql.types import LongType, StructField, StructType

from headwater.autoloader.options import CloudFilesOptions
from headwater.autoloader.source import CloudFilesStreamReader, resolve_schema
from tests.autoloader.helpers import start_ingest


def _land(folder, name: str, record: int, hidden_first: bool = False) -> None:
    """One JSON file; ``hidden_first`` writes it under a hidden name and renames it into
    place, as careful producers do."""
    target = os.path.join(folder, name)
    path = os.path.join(folder, "." + name) if hidden_first else target
    with open(path, "w") as f:
        f.write(json.dumps({"id": record}) + "\n")
    if hidden_first:
        os.rename(path, target)


def _reader(land: str, ckpt: str, notifications: str = "true") -> CloudFilesStreamReader:
    opts = CloudFilesOptions.parse(
        {
            "cloudFiles.format": "json",
            "cloudFiles.schemaLocation": ckpt,
            "cloudFiles.useNotifications": notifications,
        },
        user_schema=True,
    )
    schema = StructType([StructField("id", LongType())])
    return CloudFilesStreamReader(land, opts, resolve_schema(land, opts, schema))


def _read_paths(reader: CloudFilesStreamReader, start: dict, end: dict) -> list[str]:
    return [path for p in reader.partitions(start, end) for path, _, _ in p.files]


def woken_by_a_landing(reader: CloudFilesStreamReader, offset: dict, folder, name: str) -> dict:
    """The offset of an idle trigger (started now) in which ``name`` lands 150 ms later,
    renamed into place: it ends then, with that file, not at the next trigger 0.5 s on."""
    threading.Timer(0.15, _land, (folder, name, 2, True)).start()
    began = time.monotonic()
    woken = reader.latestOffset(offset, ReadMaxFiles(1000))
    waited = time.monotonic() - began
    assert _read_paths(reader, offset, woken) == [os.path.join(folder, name)]
    assert 0.1 < waited < 0.35, waited
    return woken


def test_a_landing_file_ends_an_idle_trigger_at_once(tmp_path):
    land, ckpt = str(tmp_path / "land"), str(tmp_path / "ckpt")
    os.makedirs(land)
    _land(land, "a.json", 1)
    limit = ReadMaxFiles(1000)
    reader = _reader(land, ckpt)
    try:
        start = reader.initialOffset()
        first = reader.latestOffset(start, limit)  # the first listing finds a.json
        assert _read_paths(reader, start, first) == [os.path.join(land, "a.json")]
        for _ in range(2):  # idle triggers 500 ms apart: the reader learns the interval
            assert reader.latestOffset(first, limit) == first
            time.sleep(0.5)
        # The next trigger finds nothing; a file lands 150 ms later, renamed into place.
        woken = woken_by_a_landing(reader, first, land, "b.json")
    finally:
        reader.stop()

    # Down: files land, one in a new subfolder; the next run's first listing finds them.
    _land(land, "c.json", 3)
    os.makedirs(os.path.join(land, "day=2"))
    _land(os.path.join(land, "day=2"), "d.json", 4)
    again = _reader(land, ckpt)
    try:
        end = again.latestOffset(woken, limit)
        assert sorted(_read_paths(again, woken, end)) == [
            os.path.join(land, "c.json"),
            os.path.join(land, "day=2", "d.json"),
        ]
        # Events and listings of the same files add nothing: each file once.
        _land(land, "e.json", 5)
        time.sleep(0.2)
        last = again.latestOffset(end, limit)
        assert _read_paths(again, end, last) == [os.path.join(land, "e.json")]
        assert again.latestOffset(last, limit) == last
        every = _read_paths(again, start, last)
        assert len(every) == len(set(every)) == 5
    finally:
        again.stop()


def test_a_running_stream_with_notifications_ingests_each_file_once(spark, tmp_path):
    land, ckpt, out = str(tmp_path / "land"), str(tmp_path / "ckpt"), str(tmp_path / "out")
    os.makedirs(land)
    for i in range(3):
        _land(land, f"early{i}.json", i)
    q = start_ingest(
        spark,
        land,
        ckpt,
        out,
        schema="id long",
        trigger={"processingTime": "200 milliseconds"},
        cloudFiles__useNotifications="true",
    )
    try:
        q.processAllAvailable()
        for i in range(3, 8):
            _land(land, f"late{i}.json", i, hidden_first=i % 2 == 0)
        time.sleep(0.3)  # the events reach the watcher's thread
        q.processAllAvailable()
        assert spark.read.format("delta").load(out).count() == 8
    finally:
        q.stop()
    for i in range(8, 10):  # landed while the stream is down
        _land(land, f"down{i}.json", i)
    start_ingest(
        spark, land, ckpt, out, schema="id long", cloudFiles__useNotifications="true"
    ).awaitTermination()
    ids = sorted(r.id for r in spark.read.format("delta").load(out).collect())
    assert ids == list(range(10))
