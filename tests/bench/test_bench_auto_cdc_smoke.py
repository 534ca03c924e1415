"""The AUTO CDC benchmark runs end to end at a tiny size (not a timed test: the run itself
fails when the target differs from the newest events). SCD type 2 only: it runs the same
code as type 1 and more (history), and each type costs four streaming runs (~40 s of CI)."""

from __future__ import annotations

import pytest


@pytest.mark.slow
def test_bench_auto_cdc_runs_and_reports_ratios(run_bench):
    stdout, report = run_bench(
        "bench_auto_cdc.py",
        "--target-rows",
        "3000",
        "--events",
        "600",
        "--scd",
        "2",
        names=("600 events into 3,000 keys, SCD type 2",),
    )
    assert report["target_rows"] == 3000 and report["events"] == 600
    assert set(report["results"]) == {"scd2"}
    for result in report["results"].values():
        assert result["ours_s"] > 0 and result["native_s"] > 0
        assert f"{result['ratio']:.2f}" in stdout
    assert report["scd2_versions"] > report["expected_rows"]  # history was kept
