"""The whole-update views benchmark runs end to end at a tiny size (not a timed test: the
run itself fails when the incremental view differs from the full one's or a technique
logged is not the expected one)."""

from __future__ import annotations

import pytest


@pytest.mark.slow
def test_bench_view_updates_runs_and_reports_ratios(run_bench):
    stdout, report = run_bench(
        "bench_view_updates.py",
        "--rows",
        "3000",
        "--groups",
        "20",
        names=(
            "1% appended (30 rows to 3,000)",
            "1% updated in place (30 of 3,000 rows)",
            "1% appended through a streaming table (30 rows)",
        ),
    )
    assert report["rows"] == 3000
    for result in report["results"].values():
        assert len(result["times"]["ours"]) == len(result["times"]["native"]) == 1
    assert "whole updates on a warm session" in stdout
