"""The no-change update benchmark runs end to end at a tiny size (not a timed test: the run
itself fails when an update of nothing new writes rows or a view is not a NO_OP)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.slow
def test_bench_update_fixed_cost_runs_and_reports(spark, tmp_path, capsys):
    """(Its report has no ratios, so not through ``run_bench``.)"""
    sys.path.insert(0, str(BENCH))
    try:
        import bench_update_fixed_cost as bench
    finally:
        sys.path.remove(str(BENCH))
    before = dict(spark.conf.getAll), spark.catalog.currentDatabase()
    out = tmp_path / "out.json"
    argv = ["--rows", "500", "--repeat", "2", "--workdir", str(tmp_path), "--json", str(out)]
    capsys.readouterr()
    bench.main(argv, spark=spark)
    stdout = capsys.readouterr().out
    assert (dict(spark.conf.getAll), spark.catalog.currentDatabase()) == before
    report = json.loads(out.read_text())
    assert report["rows"] == 500 and len(report["seconds"]) == 2
    assert report["best_s"] == min(report["seconds"]) > 0
    assert f"best {report['best_s']:.3f} s" in stdout
    assert not list(tmp_path.glob("bench-update-fixed-cost-*"))  # the run directory removed
