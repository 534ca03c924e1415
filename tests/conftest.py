"""One SparkSession per test process (Spark start-up costs seconds), shared by every test."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# The JVM options of the Spark drivers tests start in subprocesses (scripts/test-jvm-opts.sh:
# a class archive and C1 only, for drivers that live seconds): every driver started from
# here on reads them, except the worker's own session (``long_lived_driver``). Idempotent:
# xdist's workers inherit the environment this module already changed in the controller.
_DRIVER_OPTS = os.environ.get("HEADWATER_TEST_DRIVER_OPTS", "").strip()
_USERS_SUBMIT_OPTS = os.environ.get("SPARK_SUBMIT_OPTS", "")
if _DRIVER_OPTS:
    _USERS_SUBMIT_OPTS = _USERS_SUBMIT_OPTS.replace(_DRIVER_OPTS, "").strip()
    os.environ["SPARK_SUBMIT_OPTS"] = " ".join(filter(None, (_DRIVER_OPTS, _USERS_SUBMIT_OPTS)))


@contextlib.contextmanager
def long_lived_driver():
    """A Spark driver that lives the whole run (the worker's own session) starts without
    the short-lived drivers' options: C1 only never earns the optimising compiler's time
    back over a whole run, and with the class archive alone the in-worker tests ran slower
    too (tests/formats csv+json + tests/sql 194 s against 141 s, 2026-11-27)."""
    given = os.environ.get("SPARK_SUBMIT_OPTS")
    if not _USERS_SUBMIT_OPTS:
        os.environ.pop("SPARK_SUBMIT_OPTS", None)
    else:
        os.environ["SPARK_SUBMIT_OPTS"] = _USERS_SUBMIT_OPTS
    try:
        yield
    finally:
        if given is not None:
            os.environ["SPARK_SUBMIT_OPTS"] = given


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

    with long_lived_driver():
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
