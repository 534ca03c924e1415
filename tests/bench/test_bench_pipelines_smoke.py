"""The pipelines benchmark runs end to end at a tiny size (not a timed test: no targets
checked, and without the warm-up the first pair runs cold). SDP is not run: it needs an
environment of its own and two more JVMs."""

from __future__ import annotations

import pytest

FILES = 2
ROWS_PER_FILE = 20
NAMES = ("first update", "second update, no new data", "third update, 10% new files")
FLOWS = (
    "bronze_orders",
    "silver_orders",
    "silver_returns",
    "ledger_sales",
    "ledger_refunds",
    "gold_daily_sales",
    "gold_customers",
    "gold_store_returns",
    "gold_ledger",
)


@pytest.mark.slow
def test_bench_pipelines_runs_and_reports_ratios(run_bench):
    stdout, report = run_bench(
        "bench_pipelines.py",
        "--files",
        str(FILES),
        "--rows-per-file",
        str(ROWS_PER_FILE),
        "--no-warmup",
        names=NAMES,
    )
    assert report["rows"] == FILES * ROWS_PER_FILE and report["new_files"] == 1
    assert report["sdp"] == {"skipped": "not requested (--sdp)"}
    assert "SDP: skipped" in stdout
    # Every flow of every update has its seconds on both sides, and ours its phases.
    for key in ("first", "rerun", "incremental"):
        for side in ("ours", "hand"):
            assert set(report["per_flow"][key][side]) == set(FLOWS)
        assert set(report["ours_phases"][key]) >= {"analyse graph", "flows", "event log"}
    # The first update read every landed row; the rerun read nothing; the third, one file.
    rows = {key: report["results"][key]["ours_flow_rows"] for key in ("first", "rerun")}
    assert rows["first"]["bronze_orders"] == FILES * ROWS_PER_FILE
    assert all(rows["rerun"][flow] == 0 for flow in FLOWS[:5])
    incremental = report["results"]["incremental"]["ours_flow_rows"]
    assert incremental["bronze_orders"] == ROWS_PER_FILE
    counts = report["row_counts"]
    assert counts["incremental"]["bronze_orders"] == (FILES + 1) * ROWS_PER_FILE
    assert counts["incremental"]["ledger"] == (
        counts["incremental"]["silver_orders"] + counts["incremental"]["silver_returns"]
    )
