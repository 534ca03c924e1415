"""The MERGE/UPDATE/DELETE benchmark runs end to end at a tiny size (not a timed test: no
targets checked; the run itself fails on any result that differs from the reference)."""

from __future__ import annotations

import pytest

ROWS = 20_000
SOURCE_ROWS = 2_000
OPERATIONS = (
    "merge",
    "update 1% (id range)",
    "update 1% (scattered)",
    "delete 1% (id range)",
    "delete 1% (scattered)",
)
LAYOUTS = ("partitioned", "unpartitioned")
VECTOR_LAYOUT = "partitioned-dv"  # ours on a table with deletion vectors enabled
NAMES = tuple(f"{op}, {layout}" for layout in (*LAYOUTS, VECTOR_LAYOUT) for op in OPERATIONS)


@pytest.mark.slow
def test_bench_merge_runs_and_reports_ratios(run_bench):
    stdout, report = run_bench(
        "bench_merge.py",
        "--rows",
        str(ROWS),
        "--source-rows",
        str(SOURCE_ROWS),
        "--profile",
        names=NAMES,
    )
    assert report["rows"] == ROWS and report["source_rows"] == SOURCE_ROWS
    assert report["source_updates"] + report["source_inserts"] == SOURCE_ROWS
    results = report["results"]
    for layout in LAYOUTS:
        merge = results[f"merge_{layout}"]
        assert merge["rows_after"] == ROWS + report["source_inserts"]
        assert merge["native_nostream_s"] > 0 and merge["ratio_nostream"] > 0
        assert f"{merge['ratio_nostream']:.2f}" in stdout
        # Both sides rewrite only the files holding updated keys (the newest 1/8 of the
        # ids), never the whole table.
        files = report["layouts"][layout]["files"]
        for side in ("ours", "native"):
            assert 0 < merge["files"][side]["removed"] < files, merge["files"]
        # A 1% id range lives in a file or two; a scattered 1% in every file.
        for op in ("update", "delete"):
            ranged = results[f"{op}_range_{layout}"]["files"]
            scattered = results[f"{op}_scattered_{layout}"]["files"]
            for side in ("ours", "native"):
                assert 1 <= ranged[side]["removed"] <= 2, ranged
                assert scattered[side]["removed"] == files, scattered
        for key in ("update_range", "update_scattered"):
            assert results[f"{key}_{layout}"]["rows_after"] == ROWS
        for key in ("delete_range", "delete_scattered"):
            assert 0 < ROWS - results[f"{key}_{layout}"]["rows_after"] <= ROWS // 50
    # With deletion vectors, our DML rewrites no file: changed rows go into vectors and only
    # new rows are written (delta-rs, on the plain table, still rewrites).
    for key in ("merge", "update_range", "update_scattered", "delete_range", "delete_scattered"):
        result = results[f"{key}_{VECTOR_LAYOUT}"]
        assert result["files"]["ours"]["removed"] == 0, (key, result["files"])
        assert result["files"]["native"]["removed"] > 0, (key, result["files"])
    assert results[f"merge_{VECTOR_LAYOUT}"]["rows_after"] == ROWS + report["source_inserts"]
    for r in results.values():
        assert r["profile"] and r["profile"][-1][0] == "total"
        assert r["ours_cpu_s"] > 0 and r["native_cpu_s"] > 0, r  # Linux: /proc is there
        assert f"{r['ours_cpu_s'] / r['native_cpu_s']:.2f}" in stdout
    assert f"profile of ours, {NAMES[0]}:" in stdout
