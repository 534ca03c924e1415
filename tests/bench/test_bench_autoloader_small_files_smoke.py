"""The small-file ingest benchmark runs end to end at a tiny size (not a timed test: no
targets checked)."""

from __future__ import annotations

import pytest


@pytest.mark.slow
def test_bench_autoloader_small_files_runs_and_reports_files_per_hour(run_bench):
    stdout, report = run_bench(
        "bench_autoloader_small_files.py",
        "--files",
        "12",
        "--files-per-trigger",
        "5",
        names=("12 one-record JSON files",),
    )
    result = report["results"]["small_files"]
    assert result["ours_files_per_hour"] > 0 and result["native_files_per_hour"] > 0
    assert "files/hour: ours" in stdout
