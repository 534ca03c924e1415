"""Running a benchmark script end to end at a tiny size, with the checks every bench shares."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable, Collection
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def run_bench(tmp_path: Path) -> Callable[..., tuple[str, dict]]:
    """``run_bench(script, *args, names=...)`` runs ``bench/<script>`` with ``--workdir`` and
    ``--json`` under ``tmp_path``; returns (stdout, JSON report) once the shared checks pass."""

    def run(script: str, *args: str, names: Collection[str]) -> tuple[str, dict]:
        # A subprocess: the bench builds its own SparkSession; the suite shares one per process.
        out = tmp_path / "out.json"
        proc = subprocess.run(
            [
                sys.executable,
                f"bench/{script}",
                *args,
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
        for name in names:
            assert f"| {name} " in proc.stdout, proc.stdout
        report = json.loads(out.read_text())
        results = report["results"]
        assert {r["name"] for r in results.values()} == set(names)
        for r in results.values():
            for field in ("ours_s", "native_s", "ratio"):
                assert isinstance(r[field], float) and math.isfinite(r[field]) and r[field] > 0, r
            assert f"{r['ratio']:.2f}" in proc.stdout
        # The run directory under --workdir (bench_x.py -> bench-x-*) is removed (no --keep).
        assert not list(tmp_path.glob(Path(script).stem.replace("_", "-") + "-*"))
        return proc.stdout, report

    return run
