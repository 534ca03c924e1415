"""The expectations benchmark runs end to end at a tiny size (not a timed test: the
ratios are not checked, only that the run's own checks of rows and counts passed)."""

from __future__ import annotations

import pytest

NAMES = ("5 expectations vs hand-written filter", "5 expectations vs none (ours)")


@pytest.mark.slow
def test_bench_expectations_runs_and_reports_ratios(run_bench):
    _, report = run_bench("bench_expectations.py", "--rows", "3000", "--no-warmup", names=NAMES)
    assert report["rows"] == 3000
    failed = report["expected_failed"]
    assert failed["has_id"] == 0 and all(failed[n] > 0 for n in failed if n != "has_id")
    assert report["expected_rows"] < 3000
