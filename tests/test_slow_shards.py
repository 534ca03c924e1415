"""scripts/test.sh's halves of the long work: with ``HEADWATER_SLOW_SHARD=i/2`` each run
keeps every test of a file without a slow mark and the files with one of its half; the two
halves together are the whole suite, each slow file in exactly one of them. Collected in a
subprocess (no Spark), over the pipelines folder: slow and other files side by side."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO, SLOW_SHARD_ENV


def collected(shard: str) -> set[str]:
    env = {**os.environ, SLOW_SHARD_ENV: shard}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
        + ["tests/pipelines"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    return {line for line in out.stdout.splitlines() if "::" in line}


def test_the_two_halves_split_the_slow_files_and_both_keep_every_other_test():
    whole, first, second = collected(""), collected("1/2"), collected("2/2")
    assert first | second == whole
    slow = whole - (first & second)  # the tests one of the halves leaves out
    files = {test.split("::")[0] for test in slow}
    assert files, "no slow file in tests/pipelines was left out by either half"
    assert {test.split("::")[0] for test in first & slow}.isdisjoint(
        {test.split("::")[0] for test in second & slow}
    )  # a file is in one half, whole
    assert "tests/pipelines/test_crash.py" in files  # marked slow: in one half only
    assert any(t.startswith("tests/pipelines/test_updates.py::") for t in first & second)


@pytest.mark.parametrize("value", ["3/2", "half", "1/0"])
def test_a_malformed_shard_fails_the_run_naming_the_setting(value):
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
        + ["tests/test_lazy.py"],
        cwd=REPO,
        env={**os.environ, SLOW_SHARD_ENV: value},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode != 0
    assert f"{SLOW_SHARD_ENV}='{value}': write it as i/k" in out.stdout + out.stderr
