"""Auto Loader and COPY INTO reading landing folders on ``s3://`` into tables on ``s3://``."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from headwater import storage
from headwater.autoloader.state_log import CACHE_ENV
from tests.autoloader.helpers import INGEST
from tests.conftest import REPO, run_python


def land(folder: str, i: int, lines: int = 20) -> None:
    """One JSON file; an object appears whole on S3, so no temporary name is needed."""
    body = "".join(json.dumps({"file": i, "line": j}) + "\n" for j in range(lines))
    storage.write_bytes(storage.join(folder, f"f{i:04d}.json"), body.encode())


def ingest_once(spark, folder, checkpoint, out, schema=None, **options) -> None:
    """One ``availableNow`` run of Auto Loader over ``folder`` into the table ``out``."""
    reader = spark.readStream.format("cloudFiles").option("cloudFiles.format", "json")
    reader = reader.option("cloudFiles.schemaLocation", checkpoint).options(**options)
    if schema:
        reader = reader.schema(schema)
    (
        reader.load(folder)
        .writeStream.format("delta")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start(out)
        .awaitTermination()
    )


def keys(spark, path):
    df = spark.read.format("delta").load(path)
    return sorted((r.file, r.line) for r in df.select("file", "line").collect())


def test_auto_loader_ingests_files_landing_on_s3_once(s3_spark, s3_root, tmp_path):
    spark, folder, out = s3_spark, f"{s3_root}/landing", f"{s3_root}/bronze"
    checkpoint = str(tmp_path / "checkpoint")

    def ingest() -> None:
        ingest_once(
            spark, folder, checkpoint, out, **{"cloudFiles.schemaHints": "file INT, line INT"}
        )

    for i in range(3):
        land(folder, i, 5)
    ingest()
    for i in range(3, 5):
        land(folder, i, 5)
    ingest()
    ingest()
    assert keys(spark, out) == [(i, j) for i in range(5) for j in range(5)]
    paths = {r[0] for r in spark.read.format("delta").load(out).select("_rescued_data").collect()}
    assert paths == {None}


@pytest.mark.slow
def test_auto_loader_on_s3_killed_while_files_land_holds_every_record_once(
    s3_spark, s3_server, s3_root, tmp_path
):
    """The file state lives on S3 too (``cloudFiles.schemaLocation``); every restart runs
    with an empty local cache, as on a new machine, so it is rebuilt from the log there."""
    folder, out, ck = f"{s3_root}/landing", f"{s3_root}/bronze", str(tmp_path / "ck")
    state = f"{s3_root}/state"
    conf = json.dumps(s3_server.spark_conf())
    rng = random.Random(5)
    landed = 0
    for round_ in range(3):
        for _ in range(4):
            land(folder, landed)
            landed += 1
        proc = subprocess.Popen(
            [sys.executable, "-c", INGEST, folder, ck, out, "processingTime", conf, state],
            cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
            env={**os.environ, CACHE_ENV: str(tmp_path / f"cache{round_}")},
        )  # fmt: skip
        proc.stdout.readline()
        deadline = time.time() + rng.uniform(2.0, 5.0) + (3.0 if round_ == 0 else 0.0)
        while time.time() < deadline:  # files keep landing while the query runs
            land(folder, landed)
            landed += 1
            time.sleep(0.3)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    cache = {CACHE_ENV: str(tmp_path / "cache-last")}
    run_python(INGEST, folder, ck, out, "availableNow", conf, state, env=cache)
    assert keys(s3_spark, out) == [(i, j) for i in range(landed) for j in range(20)]
    assert storage.list_files(f"{state}/_headwater_file_state/log")  # the state's log is on S3


def test_copy_into_from_s3_is_idempotent(s3_spark, s3_root):
    spark, folder, table = s3_spark, f"{s3_root}/drop", f"{s3_root}/copied"
    for i in range(3):
        land(folder, i, 4)
    spark.sql(f"CREATE TABLE IF NOT EXISTS delta.`{table}` (file INT, line INT)")
    load = f"COPY INTO delta.`{table}` FROM '{folder}' FILEFORMAT = JSON"
    first = spark.sql(load).collect()
    assert first[0].num_inserted_rows == 12
    assert spark.sql(load).collect()[0].num_inserted_rows == 0  # the same files: skipped
    land(folder, 3, 4)
    assert spark.sql(load).collect()[0].num_inserted_rows == 4
    assert keys(spark, table) == [(i, j) for i in range(4) for j in range(4)]


@pytest.mark.parametrize("mode", ["MOVE", "DELETE"])
def test_clean_source_moves_or_deletes_ingested_objects_on_s3(s3_spark, s3_root, tmp_path, mode):
    spark, folder, out = s3_spark, f"{s3_root}/landing", f"{s3_root}/bronze"
    archive, checkpoint = f"{s3_root}/archive", str(tmp_path / "checkpoint")

    def ingest() -> None:
        cleaning = {
            "cloudFiles.cleanSource": mode,
            "cloudFiles.cleanSource.moveDestination": archive,
            "cloudFiles.cleanSource.retentionDuration": "0 ms",
        }
        ingest_once(spark, folder, checkpoint, out, schema="file INT, line INT", **cleaning)

    land(folder, 0, 2)
    ingest()
    land(folder, 1, 2)
    ingest()  # the files of the committed first batch are cleaned now
    remaining = sorted(storage.relative(f.path, folder) for f in storage.list_files(folder))
    archived = sorted(storage.relative(f.path, archive) for f in storage.list_files(archive))
    assert "f0000.json" not in remaining
    if mode == "MOVE":  # moved, not lost: every object is in one of the two places
        assert "f0000.json" in archived
        assert sorted(remaining + archived) == ["f0000.json", "f0001.json"]
    else:
        assert archived == []
    assert keys(spark, out) == [(i, j) for i in range(2) for j in range(2)]
