"""Exactly once under SIGKILL: a pipeline update killed at random moments (while it
analyses, sets up tables, streams, recomputes a view, or clears a table for a full
refresh), several times, then run to the end, leaves every input row once in every table."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import yaml

from tests.conftest import REPO, run_python

PIPELINE = """
from pyspark import pipelines as dp

def landed(folder):
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.schemaHints", "id bigint, region string")
        .option("cloudFiles.maxFilesPerTrigger", "2")
        .load(spark.conf.get("source_dir") + "/" + folder)
    )

@dp.table
def bronze():
    return landed("orders")

@dp.table
def silver():
    return spark.readStream.table("bronze").selectExpr("id", "upper(region) AS region")

dp.create_streaming_table("combined")

@dp.append_flow(target="combined")
def from_silver():
    return spark.readStream.table("silver").where("region = 'EU'")

@dp.append_flow(target="combined")
def from_extra():
    return landed("extra")

@dp.materialized_view
def totals():
    return spark.read.table("combined").groupBy("region").count()
"""

CHILD = textwrap.dedent(
    """
    import sys, headwater
    from headwater import pipelines
    root, warehouse, full = sys.argv[1:4]
    spark = headwater.session(master="local[2]", warehouse=warehouse)
    print("STARTED", flush=True)
    result = pipelines.run(root, spark, full_refresh=[full] if full else ())
    print("STATE", result.state, flush=True)
    """
)


def land(folder, index: int, rows: int = 20) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    region = "eu" if index % 2 == 0 else "us"
    base = index * 1000
    lines = [json.dumps({"id": base + i, "region": region}) for i in range(rows)]
    tmp = folder / f".{index}.tmp"
    tmp.write_text("\n".join(lines) + "\n")
    os.rename(tmp, folder / f"{index:04d}.json")


@pytest.mark.slow
def test_pipeline_killed_repeatedly_then_rerun_holds_every_row_once(spark, tmp_path):
    root = tmp_path / "pipeline"
    (root / "transformations").mkdir(parents=True)
    (root / "transformations" / "p.py").write_text(PIPELINE)
    database = "crash_" + tmp_path.name[-8:].lower().replace("-", "_")
    spec = {
        "name": "crashy",
        "storage": str(tmp_path / "storage"),
        "database": database,
        "configuration": {"source_dir": str(tmp_path / "landing")},
    }
    (root / "spark-pipeline.yml").write_text(yaml.safe_dump(spec))
    warehouse = str(tmp_path / "warehouse")
    rng = random.Random(11)
    orders, extra = 0, 0
    for round_ in range(4):
        for _ in range(5):
            land(tmp_path / "landing" / "orders", orders)
            orders += 1
        land(tmp_path / "landing" / "extra", 500 + extra)
        extra += 1
        full = "silver" if round_ == 2 else ""
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(root), warehouse, full],
            cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        proc.stdout.readline()  # STARTED: the session is up
        time.sleep(rng.uniform(1.0, 9.0))
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    finish = run_python(CHILD, str(root), warehouse, "")
    assert "STATE COMPLETED" in finish.stdout, finish.stdout
    check = textwrap.dedent(
        """
        import sys, json, headwater
        warehouse, db = sys.argv[1:3]
        spark = headwater.session(master="local[1]", warehouse=warehouse)
        out = {}
        for t in ("bronze", "silver", "combined"):
            out[t] = sorted(r.id for r in spark.table(f"{db}.{t}").select("id").collect())
        out["totals"] = sorted(tuple(r) for r in spark.table(f"{db}.totals").collect())
        print("RESULT", json.dumps(out))
        """
    )
    proc = run_python(check, warehouse, database)
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT"))
    got = json.loads(line[len("RESULT ") :])
    ids = sorted(i * 1000 + r for i in range(orders) for r in range(20))
    eu = sorted(i * 1000 + r for i in range(0, orders, 2) for r in range(20))
    extra_ids = sorted((500 + e) * 1000 + r for e in range(extra) for r in range(20))
    assert got["bronze"] == ids
    assert got["silver"] == ids
    assert got["combined"] == sorted(eu + extra_ids)
    extra_regions = ["eu" if (500 + e) % 2 == 0 else "us" for e in range(extra)]
    expected = {"EU": len(eu)}
    for region in extra_regions:
        expected[region] = expected.get(region, 0) + 20
    assert got["totals"] == sorted([k, v] for k, v in expected.items())
