"""The read-scaling benchmark runs end to end at a tiny size (not a timed test)."""

from __future__ import annotations

import pytest


@pytest.mark.slow
def test_bench_read_scaling_runs_and_reports_ratios(run_bench):
    names = [f"{read}, {n} files" for n in (5, 40) for read in ("count", "filtered scan")]
    _, report = run_bench(
        "bench_read_scaling.py", "--files", "5,40", "--files-per-commit", "3", names=names
    )
    assert report["sizes"] == [5, 40]
