"""One SparkSession per test process (Spark start-up costs seconds), shared by every test."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# The JVM options of the tests' Spark drivers (scripts/test-jvm-opts.sh: a class archive,
# C1 only with a full-size code cache): every driver started from here on reads them, the
# worker's own session among them. Idempotent: xdist's workers inherit the environment
# this module already changed in the controller.
_DRIVER_OPTS = os.environ.get("HEADWATER_TEST_DRIVER_OPTS", "").strip()
if _DRIVER_OPTS and _DRIVER_OPTS not in os.environ.get("SPARK_SUBMIT_OPTS", ""):
    given = os.environ.get("SPARK_SUBMIT_OPTS", "")
    os.environ["SPARK_SUBMIT_OPTS"] = " ".join(filter(None, (_DRIVER_OPTS, given)))


def pytest_collection_modifyitems(config, items):
    """Files with slow tests (multi-process, crash, benchmark smoke, minutes of pipeline
    updates) are collected first, the order within a file kept (a stable sort), so the long
    ones do not run last while the other worker idles. Serial runs and the tiers take files
    in this order; under ``-n`` only with ``--no-loadscope-reorder`` (scripts/test.sh passes
    it), as xdist otherwise sends files with many tests first and the few-test crash files
    last. With ``$HEADWATER_SLOW_SHARD`` (``i/k``), only the slow files of shard ``i`` are
    kept (scripts/test.sh: a third of them per commit)."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)
    shard = slow_shard(os.environ.get(SLOW_SHARD_ENV, ""))
    if shard is not None:
        kept = shard_files(slow_files, *shard)
        left_out = [i for i in items if i.path in slow_files and i.path not in kept]
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = [i for i in items if i.path not in slow_files or i.path in kept]


# scripts/test.sh's per-commit run: "i/k" keeps the files with slow tests of shard i of k
# (the tests of the other files run in every shard); unset, every test runs.
SLOW_SHARD_ENV = "HEADWATER_SLOW_SHARD"


def slow_shard(value: str) -> tuple[int, int] | None:
    """``"1/2"`` -> (1, 2); empty -> None (no sharding). A malformed value fails the run
    rather than quietly running another selection."""
    if not value.strip():
        return None
    index, _, count = value.partition("/")
    if not (index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
        raise pytest.UsageError(f"{SLOW_SHARD_ENV}={value!r}: write it as i/k, e.g. 1/2")
    return int(index), int(count)


def shard_files(files: set[Path], index: int, count: int) -> set[Path]:
    """Shard ``index`` of ``count``: every ``count``-th file in the order of their paths in
    the repository, from the ``index``-th (the same on every machine and in every xdist
    worker). By 2026-12-01's times the three shards of the slow files held 1,860, 2,110 and
    2,000 test-seconds; a hash of the paths split them 1,490 / 2,720 / 1,770."""
    ordered = sorted(files, key=lambda path: path.relative_to(REPO).as_posix())
    return set(ordered[index - 1 :: count])


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
    warn_if_the_code_cache_filled(session)
    session.stop()


def warn_if_the_code_cache_filled(session) -> None:
    """A JVM whose code cache fills disables its compiler and runs the rest of the session
    interpreted, silently (the tests' drivers log errors only): a warning in pytest's
    summary says so, and that scripts/test-jvm-opts.sh's cache is too small. (The JVM stops
    compiling short of 100%, its sweeper frees some: three quarters is the warning's mark.)"""
    import warnings

    pools = session._jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans()
    used = peak = 0
    for pool in pools:
        if str(pool.getName()).startswith(("CodeCache", "CodeHeap")):
            used += pool.getUsage().getUsed()
            peak += max(pool.getUsage().getMax(), 0)
    if peak and used > 0.75 * peak:
        warnings.warn(
            f"the Spark driver's code cache is nearly full ({used >> 20} of {peak >> 20} MB): "
            "its JIT stops when it is; raise -XX:ReservedCodeCacheSize in scripts/test-jvm-opts.sh",
            stacklevel=1,
        )


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
