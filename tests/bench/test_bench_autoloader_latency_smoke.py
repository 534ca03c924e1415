"""The Auto Loader latency benchmark runs end to end at a tiny size (not a timed test: no
targets checked)."""

from __future__ import annotations

import pytest

NAMES = (
    "ours, listing, p50",
    "ours, listing, p95",
    "ours, file events, p50",
    "ours, file events, p95",
)


@pytest.mark.slow
def test_bench_autoloader_latency_runs_and_reports_ratios(run_bench):
    _, report = run_bench(
        "bench_autoloader_latency.py",
        "--samples",
        "3",
        "--warmup",
        "1",
        "--trigger-ms",
        "200",
        names=NAMES,
    )
    assert report["samples"] == 3 and report["warmup"] == 1
    assert all(len(report["latencies_s"][k]) == 3 for k in ("listing", "events", "native"))
