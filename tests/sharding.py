"""The parts of the long work that scripts/test.sh runs one per commit, in turn.

On 2 cores the whole of the tests takes one to two hours, by the machine (scripts/test.sh
has the figures); CI's limit is 90 minutes and its aim 60: every run keeps the short files
of the main suite whole and a part of the long ones, and a part of each tier. A main-suite
file is long when it carries a ``slow`` mark (multi-process, crash and kill loops,
benchmarks' smoke tests) or when its tests took ``LONG_FILE_SECONDS`` or more in the run
recorded in ``tests/durations.json``; in a tier (``HEADWATER_SHARD_SUITE``, the tier's
name, set by scripts/tier.sh) every file is. The long files go to the parts by their
recorded seconds, the longest first, each to the part holding the fewest seconds so far, so
that the parts take about the same time (a file never recorded counts
``UNRECORDED_SECONDS``); the same files and record give the same parts on every machine and
in every xdist worker.

The record holds a table per suite (``main`` and each tier: a tier runs a file's tests on
another engine, or only some of them). ``python -m tests.sharding SUITE JUNIT_XML...``
folds the per-file seconds of pytest's JUnit reports (``--junitxml``) into the suite's
table, file by file: the record follows the suite. The parity tier is not recorded: its
matrix runs the selected families' operations in its first test's set-up, so its report
cannot tell the families apart (its files count alike)."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
import zlib
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECORD = REPO / "tests" / "durations.json"
SHARD_ENV = "HEADWATER_SLOW_SHARD"  # "i/k": part i of k; unset, every test runs
SUITE_ENV = "HEADWATER_SHARD_SUITE"  # a tier's name: every file is long; unset, "main"
MAIN = "main"
LONG_FILE_SECONDS = 15.0
UNRECORDED_SECONDS = 30.0


class ShardError(ValueError):
    """A malformed ``HEADWATER_SLOW_SHARD``: the run fails rather than quietly running
    another selection."""


def parse_shard(value: str) -> tuple[int, int] | None:
    """``"1/4"`` -> (1, 4); empty -> None (no parts: every test runs)."""
    if not value.strip():
        return None
    index, _, count = value.partition("/")
    if not (index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
        raise ShardError(f"{SHARD_ENV}={value!r}: write it as i/k, e.g. 1/4")
    return int(index), int(count)


def recorded(suite: str, path: Path = RECORD) -> dict[str, float]:
    """The recorded seconds per test file (its path in the repository) of ``suite``."""
    return dict(load(path).get(suite, {}))


def load(path: Path = RECORD) -> dict[str, dict[str, float]]:
    """The whole record: a table of seconds per file for each suite; none yet, empty."""
    return json.loads(path.read_text()) if path.is_file() else {}


def long_files(
    files: Iterable[str], marked_slow: set[str], suite: str, seconds: Mapping[str, float]
) -> set[str]:
    """The files ``files`` that the parts share out: in a tier all, in the main suite the
    slow-marked ones and those recorded at ``LONG_FILE_SECONDS`` or more."""
    return {
        name
        for name in files
        if suite != MAIN or name in marked_slow or seconds.get(name, 0.0) >= LONG_FILE_SECONDS
    }


def weight(name: str, seconds: Mapping[str, float]) -> float:
    return seconds.get(name, UNRECORDED_SECONDS)


def split(files: Iterable[str], count: int, seconds: Mapping[str, float]) -> list[list[str]]:
    """``files`` in ``count`` parts of about equal recorded seconds (longest first, each to
    the lightest part; ties by path, then by the lower part)."""
    names = sorted(set(files), key=lambda n: (-weight(n, seconds), n))
    parts: list[list[str]] = [[] for _ in range(count)]
    loads = [0.0] * count
    for name in names:
        lightest = min(range(count), key=lambda i: (loads[i], i))
        parts[lightest].append(name)
        loads[lightest] += weight(name, seconds)
    return parts


def part(
    files: Iterable[str], index: int, count: int, suite: str, seconds: Mapping[str, float]
) -> set[str]:
    """Part ``index`` (from 1) of ``count`` of ``suite``'s ``files``. The split gives its
    first part the longest file; each suite's parts start at a place of its own (a CRC of
    its name), so that one run does not take the longest file of every suite at once."""
    start = zlib.crc32(suite.encode()) % count
    return set(split(files, count, seconds)[(index - 1 + start) % count])


def junit_seconds(reports: Iterable[Path]) -> dict[str, float]:
    """Per-file seconds (set-up, call and teardown of each test) from JUnit reports;
    skipped tests count too (a skip can take a session's start)."""
    seconds: dict[str, float] = defaultdict(float)
    for report in reports:
        for case in ET.parse(report).getroot().iter("testcase"):
            name = module_file(case.get("classname", ""))
            if name is not None:
                seconds[name] += float(case.get("time", 0.0))
    return dict(seconds)


def module_file(classname: str) -> str | None:
    """``tests.delta.test_x.TestY`` -> ``tests/delta/test_x.py`` (the longest prefix that is
    a file of the checkout)."""
    parts = classname.split(".")
    for end in range(len(parts), 0, -1):
        candidate = "/".join(parts[:end]) + ".py"
        if (REPO / candidate).is_file():
            return candidate
    return None


def fold(suite: str, reports: Iterable[Path], path: Path = RECORD) -> int:
    """Fold the reports' per-file seconds into ``suite``'s table of the record at ``path``
    (files not in the reports keep theirs); returns how many files were measured."""
    record = load(path)
    measured = junit_seconds(reports)
    table = {**record.get(suite, {}), **{n: round(v, 1) for n, v in measured.items()}}
    record[suite] = dict(sorted(table.items()))
    path.write_text(json.dumps(dict(sorted(record.items())), indent=1) + "\n")
    return len(measured)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python -m tests.sharding SUITE JUNIT_XML...", file=sys.stderr)
        return 2
    count = fold(argv[0], [Path(a) for a in argv[1:]])
    print(f"{count} files of {argv[0]} recorded in {RECORD.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
