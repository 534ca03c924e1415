"""The Auto Loader benchmark runs end to end at a tiny size (not a timed test: no targets
checked)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

FILES = 50
ROWS_PER_FILE = 100
NAMES = (
    "json ingest",
    "json ingest, inferred schema",
    "csv ingest",
    "rerun, no new files",
    f"discovery of 1 new file among {FILES}",
)


@pytest.mark.slow
def test_bench_autoloader_runs_and_reports_ratios(tmp_path):
    # A subprocess: the bench builds its own SparkSession; the suite shares one per process.
    out = tmp_path / "out.json"
    proc = subprocess.run(
        [
            sys.executable,
            "bench/bench_autoloader.py",
            "--files",
            str(FILES),
            "--rows-per-file",
            str(ROWS_PER_FILE),
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
        assert f"| {name} " in proc.stdout, proc.stdout
    report = json.loads(out.read_text())
    assert report["files"] == FILES and report["rows"] == FILES * ROWS_PER_FILE
    assert report["landing_bytes"]["total"] > 0
    assert f"{report['landing_bytes']['total']:,} bytes" in proc.stdout
    results = report["results"]
    assert {r["name"] for r in results.values()} == set(NAMES)
    for r in results.values():
        for field in ("ours_s", "native_s", "ratio"):
            assert isinstance(r[field], float) and math.isfinite(r[field]) and r[field] > 0, r
        assert f"{r['ratio']:.2f}" in proc.stdout
    for key in ("json", "json_inferred", "csv"):
        assert results[key]["ours_rows_per_s"] > 0 and results[key]["native_rows_per_s"] > 0
    # The rerun reads nothing; the discovery run reads just the new file.
    assert results["rerun"]["ours_batches"] == results["rerun"]["native_batches"] == 0
    assert results["discovery"]["ours_batches"] == results["discovery"]["native_batches"] == 1
    # The run directory under --workdir is removed at the end (no --keep).
    assert not list(tmp_path.glob("bench-autoloader-*"))
