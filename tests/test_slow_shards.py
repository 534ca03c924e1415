"""scripts/test.sh's thirds of the long work: with ``HEADWATER_SLOW_SHARD=i/3`` each run
keeps every test of a file without a slow mark and the files with one of its part; the
three parts together are the whole suite, each slow file in exactly one of them. Collected
in a subprocess (no Spark), over the pipelines folder: slow and other files side by side."""

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


def test_the_three_parts_split_the_slow_files_and_each_keeps_all_the_other_tests():
    whole = collected("")
    parts = [collected(f"{i}/3") for i in (1, 2, 3)]
    assert set.union(*parts) == whole
    always = set.intersection(*parts)
    files = [{test.split("::")[0] for test in part - always} for part in parts]
    assert all(files), files  # each part has slow files of its own
    assert sum(len(f) for f in files) == len(set.union(*files))  # a file is in one part
    assert "tests/pipelines/test_crash.py" in set.union(*files)  # marked slow
    assert any(t.startswith("tests/pipelines/test_updates.py::") for t in always)


@pytest.mark.parametrize("value", ["4/3", "third", "1/0"])
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
