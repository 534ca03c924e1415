"""The materialized views benchmark runs end to end at a tiny size (not a timed test: the
run itself fails when the incremental view differs from its recompute or the technique
logged is not the expected one)."""

from __future__ import annotations

import pytest


@pytest.mark.slow
def test_bench_views_runs_and_reports_ratios(run_bench):
    stdout, report = run_bench(
        "bench_views.py",
        "--rows",
        "5000",
        "--groups",
        "20",
        names=("1% appended (50 rows to 5,000)", "no change", "1% updated"),
    )
    assert report["rows"] == 5000
    techniques = {k: r["technique"] for k, r in report["results"].items()}
    assert techniques == {
        "append": "GROUP_AGGREGATE",
        "no_change": "NO_OP",
        "update": "GROUP_AGGREGATE",
    }
    assert "no change:" in stdout
