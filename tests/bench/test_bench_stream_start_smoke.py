"""The stream start benchmark runs end to end at a tiny size (not a timed test: the run
fails when a stream misses a row). It also shows what headwater.worker_site saves: a
stream of ours is not slower as installed than with its workers importing Spark's zip."""

from __future__ import annotations

import os

import pytest


@pytest.mark.slow
def test_bench_stream_start_runs_and_reports_ratios(run_bench, spark):
    before = spark.sparkContext.environment.get("PYTHONPATH")
    stdout, report = run_bench(
        "bench_stream_start.py",
        "--rows",
        "200",
        "--files",
        "2",
        names=(
            "delta stream (ours) vs parquet (Spark's)",
            "cloudFiles JSON (ours) vs json (Spark's)",
        ),
    )
    assert report["rows"] == 200 and set(report["from_zip"]) == {"delta", "cloudFiles"}
    assert "workers from Spark's zip" in stdout
    # The session's workers are back on headwater's path, and its sources registered so.
    assert spark.sparkContext.environment.get("PYTHONPATH") == before
    assert "HEADWATER_BENCH_WORKER_SITE" not in spark.sparkContext.environment
    assert any(p.endswith("worker_site") for p in before.split(os.pathsep))
