"""Running a benchmark script end to end at a tiny size, with the checks every bench shares.

The benches run in this process, on the suite's SparkSession (``main(argv, spark=...)``): a
bench of its own process would start a JVM and warm a cold Spark for each smoke test
(20-40 s apiece). The session is handed back as it was (``_common.restored``), which the
fixture checks."""

from __future__ import annotations

import importlib
import json
import math
import subprocess
import sys
from collections.abc import Callable, Collection
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"


def bench_module(name: str) -> ModuleType:
    """``bench/<name>.py`` imported as the scripts import each other (``bench/`` on the path)."""
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCH))


def session_state(spark) -> tuple[dict[str, str], list[str], str, list[str]]:
    """What a bench must leave as it found it: runtime confs, databases, current database,
    running streams."""
    databases = sorted(db.name for db in spark.catalog.listDatabases())
    streams = sorted(query.id for query in spark.streams.active)
    return dict(spark.conf.getAll), databases, spark.catalog.currentDatabase(), streams


@pytest.fixture
def bench_common() -> ModuleType:
    """``bench/_common.py``, the helpers the scripts share."""
    return bench_module("_common")


@pytest.fixture
def run_bench(tmp_path: Path, request, capsys) -> Callable[..., tuple[str, dict]]:
    """``run_bench(script, *args, names=...)`` runs ``bench/<script>`` with ``--repeat 1``,
    ``--workdir`` and ``--json`` under ``tmp_path``, in this process on the suite's session
    (``own_process``: ``python bench/<script>`` in a subprocess, for a bench that needs a
    session configured at its start); returns (stdout, JSON report) once the shared checks
    pass."""

    def run(
        script: str, *args: str, names: Collection[str], own_process: bool = False
    ) -> tuple[str, dict]:
        out = tmp_path / "out.json"
        argv = ["--repeat", "1", *args, "--workdir", str(tmp_path), "--json", str(out)]
        if own_process:
            stdout = subprocess.run(
                [sys.executable, f"bench/{script}", *argv],
                check=True,
                timeout=600,
                cwd=REPO,
                capture_output=True,
                text=True,
            ).stdout
        else:
            spark = request.getfixturevalue("spark")
            before = session_state(spark)
            capsys.readouterr()
            bench_module(Path(script).stem).main(argv, spark=spark)
            stdout = capsys.readouterr().out
            assert session_state(spark) == before
        for name in names:
            assert f"| {name} " in stdout, stdout
        report = json.loads(out.read_text())
        results = report["results"]
        assert {r["name"] for r in results.values()} == set(names)
        for r in results.values():
            for field in ("ours_s", "native_s", "ratio"):
                assert isinstance(r[field], float) and math.isfinite(r[field]) and r[field] > 0, r
            assert f"{r['ratio']:.2f}" in stdout
        # The run directory under --workdir (bench_x.py -> bench-x-*) is removed (no --keep).
        assert not list(tmp_path.glob(Path(script).stem.replace("_", "-") + "-*"))
        return stdout, report

    return run
