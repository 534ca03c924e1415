"""The object-storage benchmark runs end to end at a tiny size against a real local S3
server (not a timed test: the run fails when a scan's result differs from Spark's or
discovery misses a file)."""

from __future__ import annotations

import pytest


@pytest.mark.slow
def test_bench_s3_runs_and_reports_ratios_and_list_requests(run_bench):
    stdout, report = run_bench(
        "bench_s3.py",
        "--rows",
        "5000",
        "--objects",
        "1500",
        "--new",
        "5",
        names=(
            "write Delta on s3a://",
            "write Delta on s3://",
            "scan Delta on s3a://",
            "scan Delta on s3://",
            "scan Delta on s3:// pip-only, aggregate",
            "scan Delta on s3:// pip-only, selective",
            "Auto Loader discovery (incremental vs full)",
        ),
        # Its own process: Hadoop's S3 connector (spark.jars) must be on the classpath when
        # the JVM starts, which the suite's session was not given.
        own_process=True,
    )
    discovery = report["discovery"]
    assert discovery["tracked"] == 1500 and discovery["new"] == 5
    assert discovery["incremental_requests"] == 1 < discovery["full_requests"] == 2
    assert "LIST requests" in stdout
    state = report["file_state"]
    assert state["tracked"] == 1500 and state["s3_batch_s"] > 0 and state["rebuild_s"] > 0
