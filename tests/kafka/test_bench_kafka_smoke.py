"""``bench/bench_kafka.py --smoke`` runs end to end on the tier's broker and session: a topic
drained into a headwater Delta table and into Spark's Parquet sink (each output checked to
hold every message once, or the bench fails), a ratio printed, and the produce -> visible
latency of a running 500 ms stream into each sink printed as numbers. Tiny sizes; the
figures mean nothing, the run proves the benchmark still works on the tier's stack."""

from __future__ import annotations

import contextlib
import io
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_kafka_benchmark_prints_a_ratio_and_latencies(broker, spark, tmp_path):
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import bench_kafka
    finally:
        sys.path.remove(str(REPO / "bench"))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        report = bench_kafka.main(
            ["--smoke", "--workdir", str(tmp_path)], broker=broker, spark=spark
        )
    printed = out.getvalue()

    ratio = re.search(r"ratio \(headwater / parquet time\): (\d+\.\d\d), goal <= 1\.1", printed)
    assert ratio, f"no ratio in:\n{printed}"
    assert float(ratio.group(1)) > 0
    for name in ("headwater Delta", "Spark Parquet sink"):
        row = re.search(
            rf"^\| {name}\s*\|\s*([\d,]+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|", printed, re.MULTILINE
        )
        assert row, f"no latency for {name!r} in:\n{printed}"
        p50, p99 = int(row.group(2)), int(row.group(3))
        assert 0 < p50 <= p99
    runs = report["throughput"]["runs"]
    assert all(r["batches"] >= 1 for sink in runs.values() for r in sink)
