"""The edit-run loop benchmark runs end to end at a tiny size, headwater's side only (not
a timed test: the goals are reported, not checked; SDP needs two more JVMs)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

NAMES = (
    "syntax error",
    "graph error",
    "first update, cold",
    "second update, cold",
    "first update, --watch",
    "second update, warm",
)


@pytest.mark.slow
def test_bench_dev_loop_runs_and_reports(tmp_path):
    out = tmp_path / "out.json"
    proc = subprocess.run(
        [sys.executable, "bench/bench_dev_loop.py", "--rows", "20", "--no-sdp", "--master"]
        + ["local[1]", "--workdir", str(tmp_path), "--json", str(out)],
        check=True,
        timeout=900,
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    report = json.loads(out.read_text())
    assert set(report["results"]) == set(NAMES)
    for name, result in report["results"].items():
        assert f"| {name} " in proc.stdout
        assert result["ours_s"] > 0 and result["native_s"] is None and result["ratio"] is None
    # Both errors were the ones planted, said in one line each, before any Spark work.
    assert "never closed" in report["runs"]["syntax error"]["ours"]["tail"][-1]
    assert "[PIPELINE_CYCLE]" in report["runs"]["graph error"]["ours"]["tail"][-1]
    assert report["sdp"] == "skipped: --no-sdp"
    assert not list(tmp_path.glob("bench-dev-loop-*"))
