"""The Auto Loader benchmark runs end to end at a tiny size (not a timed test: no targets
checked)."""

from __future__ import annotations

import pytest

FILES = 8  # four micro-batches of 2 (maxFilesPerTrigger = files / 4), as at full size
ROWS_PER_FILE = 20
NAMES = (
    "json ingest",
    "json ingest, inferred schema",
    "csv ingest",
    "rerun, no new files",
    f"discovery of 1 new file among {FILES}",
)


@pytest.mark.slow
def test_bench_autoloader_runs_and_reports_ratios(run_bench):
    stdout, report = run_bench(
        "bench_autoloader.py",
        "--files",
        str(FILES),
        "--rows-per-file",
        str(ROWS_PER_FILE),
        names=NAMES,
    )
    assert report["files"] == FILES and report["rows"] == FILES * ROWS_PER_FILE
    assert report["landing_bytes"]["total"] > 0
    assert f"{report['landing_bytes']['total']:,} bytes" in stdout
    results = report["results"]
    for key in ("json", "json_inferred", "csv"):
        assert results[key]["ours_rows_per_s"] > 0 and results[key]["native_rows_per_s"] > 0
    # The rerun reads nothing; the discovery run reads just the new file.
    assert results["rerun"]["ours_batches"] == results["rerun"]["native_batches"] == 0
    assert results["discovery"]["ours_batches"] == results["discovery"]["native_batches"] == 1
