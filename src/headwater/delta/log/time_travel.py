"""Which versions time travel reaches, and the errors delta-spark gives outside them.

delta-spark refuses a version outside ``[earliest, latest]`` with ``DELTA_VERSION_NOT_FOUND``
(the earliest being the first version the log can still rebuild once log cleanup deleted
older commits) and a timestamp after the latest commit or before the first kept one with
``DELTA_TIMESTAMP_GREATER_THAN_COMMIT`` / ``DELTA_TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION``.
delta-rs's own errors for these ("LogSegment end version ...") name neither the problem nor
the range, so :class:`headwater.delta.log.delta_log.DeltaLog` asks here first.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

from headwater import storage
from headwater.errors import VersionNotFoundError

# The log's commit and checkpoint file names (classic, multi-part and V2 checkpoints).
_COMMIT = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT = re.compile(
    r"^(\d{20})\.checkpoint(\.\d{10}\.\d{10}|\.[0-9a-fA-F-]{36})?\.(parquet|json)$"
)


def version_range(log_dir: str) -> tuple[int, int]:
    """(earliest, latest): the versions time travel reaches. The earliest is the first whose
    state the log can rebuild: 0 while its commit is kept, else the oldest checkpoint the
    kept commits follow (log cleanup deletes the commits before a checkpoint)."""
    commits: set[int] = set()
    checkpoints: set[int] = set()
    for info in storage.list_files(log_dir, recursive=False):
        if m := _COMMIT.match(info.base_name):
            commits.add(int(m.group(1)))
        elif m := _CHECKPOINT.match(info.base_name):
            checkpoints.add(int(m.group(1)))
    latest = max(commits | checkpoints, default=-1)
    if 0 in commits or not commits:
        return 0, latest
    usable = [c for c in checkpoints if c + 1 >= min(commits)]
    return min(usable, default=min(commits)), latest


def check_version(
    log_dir: str, version: int, latest: int | None = None, restoring: bool = False
) -> None:
    """Refuse a version outside the kept ones (``restoring``: in RESTORE's words). With
    ``latest`` known, a version in ``0..latest`` is let through without listing the log
    (the reader then finds out whether its commits are still there, and asks again if not)."""
    if latest is not None and 0 <= version <= latest:
        return
    earliest, last = version_range(log_dir)
    if earliest <= version <= last:
        return
    available = f"Available versions: [{earliest}, {last}]."
    if restoring:
        raise VersionNotFoundError(
            f"Cannot restore table to version {version}. {available}",
            error_class="DELTA_CANNOT_RESTORE_TABLE_VERSION",
        )
    raise VersionNotFoundError(f"Cannot time travel Delta table to version {version}. {available}")


def commit_time(info: dict[str, Any]) -> int:
    """A commit's time (ms) as an entry of ``DeltaLog.history()`` gives it: the protocol's
    (its file's time, or its in-commit timestamp: :mod:`.commit_times`)."""
    return int(info.get("timestamp") or 0)


def version_as_of(history: list[dict[str, Any]], when: datetime, restoring: bool = False) -> int:
    """The version current at ``when`` (the newest committed at or before it), from the
    commit timestamps of ``history()``. A time after the latest commit or before the first
    kept one is refused, as delta-spark refuses it (``restoring``: in RESTORE's words)."""
    limit = when.timestamp() * 1000
    stamps = {int(h["version"]): commit_time(h) for h in history}
    if not stamps:
        raise ValueError("the log holds no commit")
    latest = max(stamps)
    if stamps[latest] < limit:
        last = _shown(stamps[latest])
        if restoring:
            raise VersionNotFoundError(
                f"Cannot restore table to timestamp ({_shown(limit)}) as it is after the "
                f"latest version available. Please use a timestamp before ({last})",
                error_class="DELTA_CANNOT_RESTORE_TIMESTAMP_GREATER",
            )
        raise VersionNotFoundError(
            f"Timestamp {_shown(limit)} is after the table's latest version ({last}). "
            f"Use a timestamp at or before {last}.",
            error_class="DELTA_TIMESTAMP_GREATER_THAN_COMMIT",
        )
    before = [v for v, stamp in stamps.items() if stamp <= limit]
    if not before:
        first = _shown(stamps[min(stamps)])
        if restoring:
            raise VersionNotFoundError(
                f"Cannot restore table to timestamp ({_shown(limit)}) as it is before the "
                f"earliest version available. Please use a timestamp after ({first}).",
                error_class="DELTA_CANNOT_RESTORE_TIMESTAMP_EARLIER",
            )
        raise VersionNotFoundError(
            f"The provided timestamp ({_shown(limit)}) is before the earliest version "
            f"available to this table ({first}). Please use a timestamp after {first}.",
            error_class="DELTA_TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION",
        )
    return max(before)


def _shown(ms: float) -> str:
    """A time as delta-spark's messages show one (``2024-05-01 10:00:00.123``, in UTC)."""
    shown = datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")
    return shown.rstrip("0").rstrip(".")
