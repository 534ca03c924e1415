"""The Delta benchmark runs end to end at a tiny size (not a timed test: no targets checked)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

NAMES = ("batch write", "full scan + aggregate", "filtered scan", "streaming append")


@pytest.mark.slow
def test_bench_delta_runs_and_reports_ratios(tmp_path):
    # A subprocess: the bench builds its own SparkSession; the suite shares one per process.
    out = tmp_path / "out.json"
    proc = subprocess.run(
        [
            sys.executable,
            "bench/bench_delta.py",
            "--rows",
            "2000",
            "--workdir",
            str(tmp_path),
            "--json",
            str(out),
        ],
        check=True,
        timeout=600,
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    for name in NAMES:
        assert name in proc.stdout, proc.stdout
    report = json.loads(out.read_text())
    assert report["rows"] == 2000
    results = report["results"]
    assert {r["name"] for r in results.values()} == set(NAMES)
    for r in results.values():
        for field in ("ours_s", "native_s", "ratio"):
            assert isinstance(r[field], float) and math.isfinite(r[field]) and r[field] > 0, r
        assert f"{r['ratio']:.2f}" in proc.stdout
    stream = results["streaming"]
    assert stream["ours_rows_per_s"] > 0 and stream["native_rows_per_s"] > 0
    # The run directory under --workdir is removed at the end (no --keep).
    assert not list(tmp_path.glob("bench-delta-*"))
