"""The COPY INTO benchmark runs end to end at a tiny size (not a timed test: no targets
checked)."""

from __future__ import annotations

import pytest

FILES = 8
ROWS_PER_FILE = 5
NAMES = ("copy into, typed table", "copy into, schemaless table", "rerun, no new files")


@pytest.mark.slow
def test_bench_copy_into_runs_and_reports_ratios(run_bench):
    stdout, report = run_bench(
        "bench_copy_into.py",
        "--files",
        str(FILES),
        "--rows-per-file",
        str(ROWS_PER_FILE),
        names=NAMES,
    )
    assert report["files"] == FILES and report["rows"] == FILES * ROWS_PER_FILE
    results = report["results"]
    for key in ("typed", "schemaless"):
        assert results[key]["ours_rows_per_s"] > 0 and results[key]["native_rows_per_s"] > 0
    assert "bigint" in results["schemaless"]["schema"]
    assert "rerun with no new files:" in stdout and isinstance(
        results["rerun"]["meets_target"], bool
    )
