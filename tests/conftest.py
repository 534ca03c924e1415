"""One SparkSession per test process (Spark start-up costs seconds), shared by every test."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from tests import sharding

REPO = sharding.REPO

# The JVM options of the tests' Spark drivers (scripts/test-jvm-opts.sh: a class archive,
# C1 only with a full-size code cache): every driver started from here on reads them, the
# worker's own session among them. Idempotent: xdist's workers inherit the environment
# this module already changed in the controller.
_DRIVER_OPTS = os.environ.get("HEADWATER_TEST_DRIVER_OPTS", "").strip()
if _DRIVER_OPTS and _DRIVER_OPTS not in os.environ.get("SPARK_SUBMIT_OPTS", ""):
    given = os.environ.get("SPARK_SUBMIT_OPTS", "")
    os.environ["SPARK_SUBMIT_OPTS"] = " ".join(filter(None, (_DRIVER_OPTS, given)))


def pytest_collection_modifyitems(config, items):
    """With ``$HEADWATER_SLOW_SHARD`` (``i/k``), only the long files of part ``i`` are kept
    (tests/sharding.py: which files are long, how the parts share them; scripts/test.sh runs
    a part per commit). In the main suite the long files are collected first, the longest
    first, the order within a file kept (a stable sort), so they do not run last while the
    other worker idles; under ``-n`` only with ``--no-loadscope-reorder`` (scripts/test.sh
    passes it), as xdist otherwise sends files with many tests first. A tier keeps its
    order."""
    suite = os.environ.get(sharding.SUITE_ENV, "").strip() or sharding.MAIN
    seconds = sharding.recorded(suite)
    names = {item.path: repo_name(item.path) for item in items}
    slow = {names[item.path] for item in items if item.get_closest_marker("slow")}
    long = sharding.long_files(set(names.values()), slow, suite, seconds)
    if suite == sharding.MAIN:
        first = {name: (0, -sharding.weight(name, seconds), name) for name in long}
        items.sort(key=lambda item: first.get(names[item.path], (1, 0.0, "")))
    try:
        shard = sharding.parse_shard(os.environ.get(sharding.SHARD_ENV, ""))
    except sharding.ShardError as error:
        raise pytest.UsageError(str(error)) from None
    if shard is not None:
        index, count = shard
        kept = sharding.part(long, index, count, suite, seconds)
        left_out = [i for i in items if names[i.path] in long and names[i.path] not in kept]
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = [i for i in items if names[i.path] not in long or names[i.path] in kept]


def repo_name(path: Path) -> str:
    """A test file's path in the repository (the record's key)."""
    try:
        return path.relative_to(REPO).as_posix()
    except ValueError:
        return path.as_posix()


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
