"""``bench/bench_cdc.py --smoke`` runs end to end on the tier's chain and session: the
commit -> visible latency of a continuous update and the drains of a small backlog (the
pipeline's, checked to hold every key and version, and the plain Spark baselines'). Tiny
sizes; the figures mean nothing, the run proves the benchmark still works."""

from __future__ import annotations

import contextlib
import io
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_cdc_benchmark_prints_latencies_and_a_ratio(
    spark, broker, postgres, connect_classpath, tmp_path
):
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import bench_cdc
    finally:
        sys.path.remove(str(REPO / "bench"))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        report = bench_cdc.main(["--smoke", "--workdir", str(tmp_path)], broker=broker,
                                postgres=postgres, classpath=connect_classpath, spark=spark)  # fmt: skip
    printed = out.getvalue()
    lat = report["latency"]
    assert lat["samples"] == 3 and 0 < lat["p50_ms"] <= lat["p99_ms"] <= lat["max_ms"]
    assert re.search(r"ratio \(pipeline / plain Spark time\): \d+\.\d\d", printed), printed
    assert re.search(r"bottleneck: (the pipeline's apply|Debezium's production)", printed)
    assert report["throughput"]["apply"]["seconds"] > 0
    assert not list(tmp_path.glob("bench-cdc-*"))
