"""When each commit happened, as the Delta protocol defines it and delta-spark reads it.

A table without in-commit timestamps has no recorded commit time: the protocol's is the
commit file's modification time, made to increase with the version (a time not after the
previous commit's becomes that time + 1 ms, delta-spark's ``monotonizeCommitTimestamps``).
The commitInfo's ``timestamp`` is not it: the writer's clock set it before the file
existed (tens of milliseconds earlier), and a copied table keeps it while its files get new
times. With the ``inCommitTimestamp`` feature on (``delta.enableInCommitTimestamps``),
commits from the version that turned it on (``delta.inCommitTimestampEnablementVersion``;
all commits when absent) carry their time in ``commitInfo.inCommitTimestamp``.

delta-spark reads these times in two ways, and headwater as it does, so that both engines
stamp the same rows and reach the same versions on one table:

- history (``DESCRIBE HISTORY``, ``DeltaTable.history()``, ``DESCRIBE DETAIL``'s
  ``lastModified``) and time travel by timestamp (``timestampAsOf``, ``RESTORE ... TO
  TIMESTAMP AS OF``, a change feed's ``startingTimestamp``): the latest metadata decides
  which commits take their in-commit timestamp; the others take file times, monotonized
  from the first commit asked about (``DeltaHistoryManager``);
- the change feed's ``_commit_timestamp``: a commit's in-commit timestamp where it has one,
  else its file time, monotonized from 100 commits before the first version read
  (``CDCReader.getNonICTTimestampsByVersion``).

File times come from one listing of the log folder, never a stat per commit; no commit is
read for them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from headwater import storage

ENABLED = "delta.enableInCommitTimestamps"
ENABLEMENT_VERSION = "delta.inCommitTimestampEnablementVersion"
# delta-spark's POTENTIALLY_UNMONOTONIZED_TIMESTAMPS: how far before the first version a
# change feed reads its file times are monotonized from.
MONOTONIZED_BEFORE = 100

_COMMIT = re.compile(r"^(\d{20})\.json$")


def monotonic(times: Iterable[tuple[int, int]]) -> dict[int, int]:
    """``{version: ms}`` of ``(version, ms)`` pairs in version order, each time made later
    than the one before (by 1 ms where it was not), as delta-spark adjusts file times."""
    out: dict[int, int] = {}
    previous: int | None = None
    for version, ms in times:
        if previous is not None and ms <= previous:
            ms = previous + 1
        out[version] = previous = ms
    return out


def file_times(log_dir: str, start: int = 0, end: int | None = None) -> dict[int, int]:
    """``{version: ms}`` of the JSON commits ``start..end`` (inclusive; ``end`` None: all),
    their files' modification times (milliseconds, truncated as Hadoop gives them)
    monotonized from ``start``: one listing of the log folder."""
    found = []
    for info in storage.list_files(log_dir, recursive=False):
        m = _COMMIT.match(info.base_name)
        if m is None or info.mtime_ns is None:
            continue
        version = int(m.group(1))
        if version >= start and (end is None or version <= end):
            found.append((version, info.mtime_ns // 1_000_000))
    return monotonic(sorted(found))


def enablement_version(configuration: Mapping[str, str]) -> int | None:
    """The first version whose time is its in-commit timestamp (None: the table keeps
    none), from the table's latest metadata."""
    if str(configuration.get(ENABLED, "false")).strip().lower() != "true":
        return None
    return int(configuration.get(ENABLEMENT_VERSION) or 0)


def stamp_history(
    log_dir: str, history: list[dict[str, Any]], configuration: Mapping[str, str]
) -> list[dict[str, Any]]:
    """``history`` (commitInfos with their ``version``, any order) with each ``timestamp``
    the commit's time as delta-spark's history gives it (see the module's docstring); the
    commitInfo's own stays as ``commitInfoTimestamp``. Where the log names no file time
    (a commit cleaned up meanwhile), the commitInfo's is kept."""
    ict_from = enablement_version(configuration)
    plain = sorted(
        int(h["version"]) for h in history if ict_from is None or int(h["version"]) < ict_from
    )
    times = file_times(log_dir, plain[0], plain[-1]) if plain else {}
    out = []
    for entry in history:
        version = int(entry["version"])
        found = dict(entry)
        found["commitInfoTimestamp"] = entry.get("timestamp")
        if ict_from is not None and version >= ict_from:
            ms = entry.get("inCommitTimestamp", entry.get("timestamp"))
        else:
            ms = times.get(version, entry.get("timestamp"))
        found["timestamp"] = int(ms or 0)
        out.append(found)
    return out


class ChangeTimes:
    """The change feed's ``_commit_timestamp`` of each commit from ``start`` on (see the
    module's docstring): the log is listed once, and again only for a version committed
    after that listing (a stream reading on)."""

    def __init__(self, log_dir: str, start: int) -> None:
        self.log_dir = log_dir
        self.first = max(start - MONOTONIZED_BEFORE, 0)
        self._times: dict[int, int] = {}

    def of(self, version: int, actions: list[dict[str, Any]]) -> int:
        """Commit ``version``'s time; ``actions`` are its actions (its commitInfo)."""
        info: dict[str, Any] = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
        if info.get("inCommitTimestamp") is not None:
            return int(info["inCommitTimestamp"])
        if version not in self._times:
            self._times = file_times(self.log_dir, min(self.first, version))
        found = self._times.get(version, info.get("timestamp"))
        return int(found or 0)
