"""``bench/bench_engines.py --smoke`` runs end to end on both engines: every operation is
measured on headwater's engine and on delta-spark, their answers agree (the bench fails
otherwise), and a ratio is printed for each. Tiny inputs; the figures mean nothing, the
run proves the benchmark still works on the tier's stack."""

from __future__ import annotations

import contextlib
import io
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_engine_benchmark_prints_a_ratio_for_every_operation(engines, tmp_path):
    """On the tier's own two engine processes (no JVM of its own to start), with their
    shuffle partitions (2) so later tests run as before."""
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import bench_engines
    finally:
        sys.path.remove(str(REPO / "bench"))
    out = io.StringIO()
    argv = ["--smoke", "--workdir", str(tmp_path), "--shuffle-partitions", "2"]
    with contextlib.redirect_stdout(out):
        report = bench_engines.main(argv, running=engines)
    printed = out.getvalue()
    assert set(report["results"]) >= set(bench_engines.OPERATIONS)
    for name in bench_engines.OPERATIONS.values():
        row = re.search(
            rf"^\| {re.escape(name)}\s*\|\s*[\d.]+\s*\|\s*[\d.]+\s*\|\s*(\d+\.\d\d)\s*\|",
            printed,
            re.MULTILINE,
        )
        assert row, f"no ratio for {name!r} in:\n{printed}"
        assert float(row.group(1)) > 0
