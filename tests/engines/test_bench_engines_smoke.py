"""``bench/bench_engines.py --smoke`` runs end to end on both engines: every operation is
measured on headwater's engine and on delta-spark, their answers agree (the bench fails
otherwise), and a ratio is printed for each. Tiny inputs; the figures mean nothing, the
run proves the benchmark still works on the tier's stack."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Two JVMs start on two cores and each operation runs cold on both engines: most of the
# time is Spark's and delta-spark's first-call cost, not the rows.
TIMEOUT = 420


def test_the_engine_benchmark_prints_a_ratio_for_every_operation(tmp_path):
    sys.path.insert(0, str(REPO / "bench"))
    try:
        from bench_engines import OPERATIONS
    finally:
        sys.path.remove(str(REPO / "bench"))
    done = subprocess.run(
        [sys.executable, "bench/bench_engines.py", "--smoke", "--workdir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for name in OPERATIONS.values():
        row = re.search(
            rf"^\| {re.escape(name)}\s*\|\s*[\d.]+\s*\|\s*[\d.]+\s*\|\s*(\d+\.\d\d)\s*\|",
            done.stdout,
            re.MULTILINE,
        )
        assert row, f"no ratio for {name!r} in:\n{done.stdout}"
        assert float(row.group(1)) > 0
