"""scripts/test.sh's parts of the long work (tests/sharding.py): with
``HEADWATER_SLOW_SHARD=i/k`` a main-suite run keeps every test of the short files and the
long files of part ``i``; in a tier (``HEADWATER_SHARD_SUITE``) every file is shared out.
The parts together are the whole suite, each shared file in exactly one of them. Collected
in a subprocess (no Spark), over the pipelines folder: long and short files side by side."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import sharding
from tests.conftest import REPO


def collected(shard: str, suite: str = "", where: str = "tests/pipelines") -> set[str]:
    env = {**os.environ, sharding.SHARD_ENV: shard, sharding.SUITE_ENV: suite}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", where],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    return {line for line in out.stdout.splitlines() if "::" in line}


def files(tests: set[str]) -> set[str]:
    return {test.split("::")[0] for test in tests}


def test_the_parts_share_out_the_long_files_and_each_keeps_all_the_short_ones():
    whole = collected("")
    parts = [collected(f"{i}/4") for i in (1, 2, 3, 4)]
    assert set.union(*parts) == whole
    always = set.intersection(*parts)
    shared = [files(part - always) for part in parts]
    assert all(shared), shared  # each part has long files of its own
    assert sum(len(f) for f in shared) == len(set.union(*shared))  # a file is in one part
    assert "tests/pipelines/test_crash.py" in set.union(*shared)  # marked slow
    assert not files(always) & set.union(*shared)  # a file's tests stay together
    assert always, "the short files run in every part"


def test_in_a_tier_every_file_is_shared_out():
    parts = [collected(f"{i}/3", suite="kafka", where="tests/copyinto") for i in (1, 2, 3)]
    assert set.union(*parts) == collected("", where="tests/copyinto")
    assert not set.intersection(*parts)
    assert sum(len(files(p)) for p in parts) == len(set.union(*map(files, parts)))


@pytest.mark.parametrize("value", ["5/4", "third", "1/0"])
def test_a_malformed_part_fails_the_run_naming_the_setting(value):
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
        + ["tests/test_lazy.py"],
        cwd=REPO,
        env={**os.environ, sharding.SHARD_ENV: value},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode != 0
    assert f"{sharding.SHARD_ENV}='{value}': write it as i/k" in out.stdout + out.stderr


def test_the_split_balances_recorded_seconds_and_is_the_same_every_time():
    seconds = {"a.py": 300.0, "b.py": 200.0, "c.py": 100.0, "d.py": 100.0, "e.py": 90.0}
    names = [*seconds, "new.py"]  # never recorded: UNRECORDED_SECONDS
    parts = sharding.split(names, 2, seconds)
    assert parts == sharding.split(reversed(names), 2, seconds)
    assert sorted(sum(parts, [])) == sorted(names)
    loads = [sum(sharding.weight(n, seconds) for n in part) for part in parts]
    assert loads == [400.0, 420.0]
    assert sharding.split(["x.py"], 3, {}) == [["x.py"], [], []]


def test_each_suite_s_parts_start_at_a_place_of_its_own_and_cover_its_files_once():
    seconds = {f"t{i}.py": float(i * 7 % 11 + 1) for i in range(10)}
    for suite in ("main", "cdc", "parity"):
        parts = [sharding.part(seconds, i, 4, suite, seconds) for i in (1, 2, 3, 4)]
        assert sorted(sum(map(sorted, parts), [])) == sorted(seconds)
    firsts = {suite: sharding.part(seconds, 1, 4, suite, seconds) for suite in ("main", "cdc")}
    assert firsts["main"] != firsts["cdc"]  # CRC offsets 0 and 2


def test_long_files_are_the_slow_marked_and_the_recorded_long_ones_or_all_in_a_tier():
    seconds = {"a.py": sharding.LONG_FILE_SECONDS, "b.py": 3.0}
    names = ["a.py", "b.py", "c.py"]
    assert sharding.long_files(names, {"c.py"}, sharding.MAIN, seconds) == {"a.py", "c.py"}
    assert sharding.long_files(names, set(), "cdc", {}) == set(names)


def test_junit_reports_fold_into_the_suite_s_table(tmp_path: Path):
    report = tmp_path / "r.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.test_lazy" name="a" time="1.25"/>'
        '<testcase classname="tests.test_lazy" name="b" time="2.0"><skipped/></testcase>'
        '<testcase classname="tests.pipelines.test_crash.TestX" name="c" time="40"/>'
        '<testcase classname="gone.module" name="d" time="9"/>'
        "</testsuite></testsuites>"
    )
    record = tmp_path / "durations.json"
    record.write_text('{"main": {"tests/test_lazy.py": 99.0, "tests/x.py": 5.0}, "cdc": {}}')
    assert sharding.fold("main", [report], record) == 2
    assert sharding.recorded("main", record) == {
        "tests/pipelines/test_crash.py": 40.0,
        "tests/test_lazy.py": 3.2,  # 3.25, rounded half to even
        "tests/x.py": 5.0,
    }
    assert sharding.recorded("cdc", record) == {}
