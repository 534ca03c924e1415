"""Auto Loader under SIGKILL with files landing, and a corpus of bad input files."""

from __future__ import annotations

import bz2
import gzip
import json
import os
import random
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from tests.autoloader.helpers import INGEST, start_ingest
from tests.conftest import REPO


def _land(land: str, i: int, lines: int = 20) -> None:
    tmp = os.path.join(land, f".f{i:04d}.tmp")
    with open(tmp, "w") as f:
        for j in range(lines):
            f.write(json.dumps({"file": i, "line": j}) + "\n")
    os.rename(tmp, os.path.join(land, f"f{i:04d}.json"))


@pytest.mark.slow
def test_ingest_killed_repeatedly_while_files_land_holds_every_record_once(spark, tmp_path):
    land, ck, out = str(tmp_path / "land"), str(tmp_path / "ck"), str(tmp_path / "out")
    os.makedirs(land)
    rng = random.Random(11)
    landed = 0
    for round_ in range(3):  # three kills at random moments, files landing throughout
        for _ in range(5):
            _land(land, landed)
            landed += 1
        proc = subprocess.Popen(
            [sys.executable, "-c", INGEST, land, ck, out, "processingTime"],
            cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        proc.stdout.readline()
        deadline = time.time() + rng.uniform(1.0, 5.0) + (2.0 if round_ == 0 else 0.0)
        while time.time() < deadline:  # files keep landing while the query runs
            _land(land, landed)
            landed += 1
            time.sleep(0.3)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    # the rest, by a new driver: the test's own session (as the killed ones ingested it)
    _ingest(spark, land, ck, out, schema="file int, line int", cloudFiles__format="json",
            cloudFiles__maxFilesPerTrigger=3)  # fmt: skip
    rows = DeltaTable(out).to_pyarrow_table().to_pylist()
    keys = sorted((r["file"], r["line"]) for r in rows)
    assert keys == [(i, j) for i in range(landed) for j in range(20)]


def _ingest(spark, land, ck, out, **options):
    q = start_ingest(spark, land, ck, out, fmt=None, **options)
    q.awaitTermination()
    return q


def test_bad_json_corpus_rescues_or_skips_and_loses_nothing_else(spark, tmp_path):
    land, ck, out = str(tmp_path / "land"), str(tmp_path / "ck"), str(tmp_path / "out")
    os.makedirs(land)
    good = [{"id": i, "v": f"x{i}"} for i in range(10)]
    with open(os.path.join(land, "0_good.json"), "w") as f:
        f.write("\n".join(json.dumps(r) for r in good) + "\n")
    with open(os.path.join(land, "1_malformed.json"), "w") as f:
        f.write('{"id": 100, "v": "ok"}\n{"id": 101, "v": \n{"id": 102, "v": "ok"}\n')
    with gzip.open(os.path.join(land, "2_good.json.gz"), "wt") as f:
        f.write(json.dumps({"id": 200, "v": "gz"}) + "\n")
    with bz2.open(os.path.join(land, "2b_good.json.bz2"), "wt") as f:
        f.write(json.dumps({"id": 201, "v": "bz"}) + "\n")
    raw = gzip.compress(((json.dumps({"id": 300, "v": "lost"}) + "\n") * 2000).encode())
    with open(os.path.join(land, "3_truncated.json.gz"), "wb") as f:
        f.write(raw[: len(raw) // 2])
    open(os.path.join(land, "4_empty.json"), "w").close()
    with open(os.path.join(land, "5_latin1.json"), "wb") as f:
        f.write(b'{"id": 500, "v": "caf\xe9"}\n')
    with open(os.path.join(land, "6_wrong_type.json"), "w") as f:
        f.write(json.dumps({"id": "six hundred", "v": "t"}) + "\n")
    big = "y" * (50 * 1024 * 1024)
    with open(os.path.join(land, "7_big.json"), "w") as f:
        f.write(json.dumps({"id": 700, "v": big}) + "\n")
    _ingest(
        spark, land, ck, out, cloudFiles__format="json", cloudFiles__schemaHints="id bigint, v string",
        ignoreCorruptFiles="true",
    )  # fmt: skip
    table = DeltaTable(out).to_pyarrow_table()
    rows = table.to_pylist()
    ids = sorted(r["id"] for r in rows if r["id"] is not None)
    # Truncated gzip and the non-UTF-8 file are skipped (logged); everything else is here.
    assert ids == list(range(10)) + [100, 102, 200, 201, 700]
    rescued = [json.loads(r["_rescued_data"]) for r in rows if r["_rescued_data"]]
    assert any(r.get("_corrupt_record", "").startswith('{"id": 101') for r in rescued)
    assert any(
        r.get("id") == "six hundred" and r["_file_path"].endswith("6_wrong_type.json")
        for r in rescued
    )
    assert next(len(r["v"]) for r in rows if r["id"] == 700) == len(big)


def test_corrupt_file_stops_the_query_naming_it_without_ignore_option(spark, tmp_path):
    land, ck, out = str(tmp_path / "land"), str(tmp_path / "ck"), str(tmp_path / "out")
    os.makedirs(land)
    with open(os.path.join(land, "a.json"), "w") as f:
        f.write('{"id": 1}\n')
    raw = gzip.compress(b'{"id": 2}\n' * 5000)
    with open(os.path.join(land, "b.json.gz"), "wb") as f:
        f.write(raw[:100])
    with pytest.raises(Exception, match=r"b\.json\.gz.*ignoreCorruptFiles"):
        _ingest(
            spark, land, ck, out, cloudFiles__format="json", cloudFiles__schemaHints="id bigint"
        )


def test_ragged_csv_and_parquet_with_conflicting_types(spark, tmp_path):
    land, ck, out = str(tmp_path / "land"), str(tmp_path / "ck"), str(tmp_path / "out")
    os.makedirs(land)
    with open(os.path.join(land, "r.csv"), "w") as f:
        f.write("id,name\n1,a\n2,b,EXTRA\n3\n")
    _ingest(spark, land, ck, out, cloudFiles__format="csv", cloudFiles__inferColumnTypes="true")
    rows = sorted(DeltaTable(out).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    assert [(r["id"], r["name"]) for r in rows] == [(1, "a"), (2, "b"), (3, None)]
    assert json.loads(rows[1]["_rescued_data"])["_c2"] == "EXTRA"

    pland, pck, pout = str(tmp_path / "pl"), str(tmp_path / "pck"), str(tmp_path / "pout")
    parquet_rescue = {"cloudFiles__format": "parquet", "cloudFiles__schemaEvolutionMode": "rescue"}
    os.makedirs(pland)
    pq.write_table(
        pa.table({"id": pa.array([1, 2], pa.int64()), "v": pa.array([10, 20], pa.int64())}),
        os.path.join(pland, "a.parquet"),
    )
    _ingest(spark, pland, pck, pout, **parquet_rescue)
    # A later file disagrees on the type of v: its values are rescued, not dropped.
    pq.write_table(
        pa.table({"id": pa.array([3], pa.int64()), "v": pa.array(["thirty"])}),
        os.path.join(pland, "b.parquet"),
    )
    _ingest(spark, pland, pck, pout, **parquet_rescue)
    rows = sorted(DeltaTable(pout).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    assert [(r["id"], r["v"]) for r in rows][:2] == [(1, 10), (2, 20)]
    assert rows[2]["v"] is None and json.loads(rows[2]["_rescued_data"])["v"] == "thirty"


def test_file_deleted_between_discovery_and_read(spark, tmp_path):
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from headwater.autoloader.options import CloudFilesOptions
    from headwater.autoloader.source import CloudFilesStreamReader, resolve_schema

    land = str(tmp_path / "land")
    os.makedirs(land)
    for ignore, expect in (("true", ["a.json"]), ("false", None)):
        for name in ("a.json", "b.json"):
            with open(os.path.join(land, name), "w") as f:
                f.write(json.dumps({"id": name}) + "\n")
        opts = CloudFilesOptions.parse(
            {
                "cloudFiles.format": "json",
                "cloudFiles.schemaLocation": str(tmp_path / f"ck{ignore}"),
                "ignoreMissingFiles": ignore,
            },
            user_schema=False,
        )
        reader = CloudFilesStreamReader(land, opts, resolve_schema(land, opts))
        start = reader.initialOffset()
        end = reader.latestOffset(start, ReadAllAvailable())
        parts = reader.partitions(start, end)
        os.remove(os.path.join(land, "b.json"))
        if ignore == "true":
            ids = [r["id"] for p in parts for b in reader.read(p) for r in b.to_pylist()]
            assert ids == expect
        else:
            with pytest.raises(
                Exception, match=r"b\.json was deleted after it was discovered.*ignoreMissingFiles"
            ):
                [b for p in parts for b in reader.read(p)]
