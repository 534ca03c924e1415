"""COPY INTO from several processes at once, and killed with SIGKILL at random moments."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from headwater.copyinto import copy_into
from tests.conftest import REPO
from tests.copyinto.helpers import land, rows, table, write_json

# Waits for the go file, then runs one COPY INTO and prints its result row.
RACER = textwrap.dedent(
    """
    import json, logging, os, sys, time, headwater
    from headwater.copyinto import copy_into
    src, path, go, files = sys.argv[1:5]
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("headwater.copyinto").setLevel(logging.INFO)
    spark = headwater.session(master="local[1]", warehouse=f"{path}_wh_{os.getpid()}")
    print("READY", flush=True)
    while not os.path.exists(go):
        time.sleep(0.02)
    row = copy_into(spark, f"delta.`{path}`", src, "JSON", files=json.loads(files)).first()
    print("RESULT " + json.dumps(list(row)), flush=True)
    """
)


def _race(src, path, tmp_path, file_sets: list) -> list[list[int]]:
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(src), str(path), str(go), json.dumps(files)],
            cwd=str(REPO),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for files in file_sets
    ]
    for p in procs:
        assert p.stdout.readline().strip() == "READY"
    go.touch()
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        results.append(
            json.loads(next(ln for ln in out.splitlines() if ln.startswith("RESULT"))[7:])
        )
    return results


@pytest.mark.slow
def test_two_concurrent_loads_of_the_same_files_load_each_once(spark, tmp_path):
    src, path = tmp_path / "src", tmp_path / "t"
    land(src, 20, rows=5)
    table(spark, path)
    results = _race(src, path, tmp_path, [None, None])
    assert sum(r[1] for r in results) == 100  # split between them, each file once
    ids = [r["id"] for r in rows(path)]
    assert sorted(ids) == sorted(i * 100 + j for i in range(20) for j in range(5))


@pytest.mark.slow
def test_two_concurrent_loads_of_different_files_both_land(spark, tmp_path):
    src, path = tmp_path / "src", tmp_path / "t"
    land(src, 20, rows=5)
    table(spark, path)
    first = [f"f{i:03d}.json" for i in range(0, 20, 2)]
    second = [f"f{i:03d}.json" for i in range(1, 20, 2)]
    results = _race(src, path, tmp_path, [first, second])
    assert [r[1] for r in results] == [50, 50]
    ids = sorted(r["id"] for r in rows(path))
    assert ids == sorted(i * 100 + j for i in range(20) for j in range(5))


# Loads whatever is new, again and again, until killed (or once, with "once").
LOADER = textwrap.dedent(
    """
    import sys, headwater
    from headwater.copyinto import copy_into
    src, path, mode = sys.argv[1:4]
    spark = headwater.session(master="local[2]", warehouse=path + "_wh")
    print("STARTED", flush=True)
    while True:
        copy_into(spark, f"delta.`{path}`", src, "JSON").collect()
        if mode == "once":
            break
    """
)


def _land(src, i: int, lines: int = 10) -> None:
    tmp = src / f".f{i:04d}.tmp"
    write_json(src, tmp.name, [{"file": i, "line": j} for j in range(lines)])
    os.rename(tmp, src / f"f{i:04d}.json")


@pytest.mark.slow
def test_killed_repeatedly_while_files_land_loads_every_file_exactly_once(spark, tmp_path):
    src, path = tmp_path / "src", tmp_path / "t"
    os.makedirs(src)
    table(spark, path, "file int, line int")
    rng = random.Random(5)
    landed = 0
    for round_ in range(3):  # three kills (five took ~20 s more of CI, on both engines)
        for _ in range(4):
            _land(src, landed)
            landed += 1
        proc = subprocess.Popen(
            [sys.executable, "-c", LOADER, str(src), str(path), "loop"],
            cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        assert proc.stdout.readline().strip() == b"STARTED"
        deadline = time.time() + rng.uniform(0.5, 4.0) + (2.0 if round_ == 0 else 0.0)
        while time.time() < deadline:  # files keep landing while it loads
            _land(src, landed)
            landed += 1
            time.sleep(rng.uniform(0.1, 0.5))
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    # the rest, by a new driver: the test's own session
    copy_into(spark, f"delta.`{path}`", str(src), "JSON").collect()
    keys = sorted((r["file"], r["line"]) for r in rows(path))
    assert keys == [(i, j) for i in range(landed) for j in range(10)]
