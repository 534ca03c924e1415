"""The clustering benchmark runs end to end at a tiny size (not a timed test: the run itself
fails when a laid-out table's counts differ from the unclustered table's)."""

from __future__ import annotations

import pytest


@pytest.mark.slow
def test_bench_clustering_runs_and_reports_files_read(run_bench):
    stdout, report = run_bench(
        "bench_clustering.py",
        "--rows",
        "20000",
        "--files",
        "8",
        "--points",
        "2",
        names=("a = v, CLUSTER BY (a)", "a = v, ZORDER BY (a, b)", "b = v, ZORDER BY (a, b)"),
    )
    assert report["rows"] == 20000 and report["files"]["plain"] == 8
    clustered = report["results"]["clustered_a"]
    # One clustering column: a point filter reads about one file; unclustered, all of them.
    assert clustered["files_read"] <= 2 < clustered["files_read_unclustered"] == 8
    for r in report["results"].values():
        assert r["files_read"] < r["files_read_unclustered"]
    assert "files read" in stdout
