"""The Delta benchmark runs end to end at a tiny size (not a timed test: no targets checked)."""

from __future__ import annotations

import pytest

NAMES = ("batch write", "full scan + aggregate", "filtered scan", "streaming append")


@pytest.mark.slow
def test_bench_delta_runs_and_reports_ratios(run_bench):
    _, report = run_bench("bench_delta.py", "--rows", "2000", names=NAMES)
    assert report["rows"] == 2000
    stream = report["results"]["streaming"]
    assert stream["ours_rows_per_s"] > 0 and stream["native_rows_per_s"] > 0
