"""One SparkSession per test process (Spark start-up costs seconds), shared by every test."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def pytest_collection_modifyitems(config, items):
    """Files with slow tests (multi-process, crash, benchmark smoke) are collected first,
    the order within a file kept (a stable sort), so the long ones do not run last while
    the other worker idles. Serial runs and the tiers take files in this order; under
    ``-n`` only with ``--no-loadscope-reorder`` (scripts/test.sh passes it), as xdist
    otherwise sends files with many tests first and the few-test crash files last."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)


@pytest.fixture(scope="session")
def warehouse() -> Path:
    root = Path(tempfile.mkdtemp(prefix="headwater-tests-"))
    yield root / "warehouse"
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def spark(warehouse):
    import headwater

    session = headwater.session("headwater-tests", master="local[2]", warehouse=str(warehouse))
    yield session
    session.stop()


@pytest.fixture
def table_path(tmp_path) -> str:
    return str(tmp_path / "table")


def run_python(
    code: str, *args: str, timeout: float = 300, env: dict | None = None, check: bool = True
):
    """Run ``code`` in a fresh interpreter (its own SparkSession); returns CompletedProcess."""
    import subprocess

    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        cwd=str(REPO),
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"child failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
        )
    return proc
