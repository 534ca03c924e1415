"""The AUTO CDC benchmark runs end to end at a tiny size (not a timed test: the run itself
fails when either target differs from the newest events)."""

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
        names=tuple(f"600 events into 3,000 keys, SCD type {scd}" for scd in (1, 2)),
    )
    assert report["target_rows"] == 3000 and report["events"] == 600
    for key in ("scd1", "scd2"):
        result = report["results"][key]
        assert result["ours_s"] > 0 and result["native_s"] > 0
        assert f"{result['ratio']:.2f}" in stdout
    assert report["scd2_versions"] > report["expected_rows"]  # history was kept
