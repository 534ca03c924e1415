"""Finding the files of a landing directory, and the partition values in their paths.

Listing runs on the driver. The whole tree under the source path is listed (as Auto Loader
does), or, with incremental listing, only the paths after the last one seen; hidden files
and directories (``_`` or ``.`` prefix) are skipped, as in every Spark file source. What is
*new* is decided by the file state, not by keeping a listing in memory.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from headwater import storage
from headwater.autoloader.options import CloudFilesOptions
from headwater.errors import OptionError
from headwater.storage.partition_dirs import NULL_PARTITION, unescape


@dataclass(frozen=True)
class Listed:
    path: str
    size: int
    mtime_ms: int


def parse_time(text: str, name: str) -> int:
    """``modifiedAfter``/``modifiedBefore`` as epoch milliseconds (no zone: UTC)."""
    try:
        value = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise OptionError(
            f"Option '{name}' must be a timestamp such as 2024-06-01T00:00:00, not '{text}'."
        ) from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    return int(value.timestamp() * 1000)


def list_source(root: str, opts: CloudFilesOptions, now_ms: int | None = None) -> Iterator[Listed]:
    """Every eligible file under ``root`` (a missing root lists nothing)."""
    info = storage.stat(root)
    if info is None:
        return
    candidates = [info] if info.is_file else storage.list_files(root)
    found = (
        (f.path, f.size or 0, int(f.mtime_ns // 1_000_000) if f.mtime_ns is not None else 0)
        for f in candidates
        if f.is_file
    )
    yield from _eligible(root, found, opts, now_ms)


def list_after(
    root: str, last_path: str, opts: CloudFilesOptions, now_ms: int | None = None
) -> Iterator[Listed]:
    """The eligible files under ``root`` whose path sorts after ``last_path``: incremental
    listing, for folders whose file names sort in arrival order. On S3 the store skips the
    earlier keys itself (``StartAfter``), so the cost follows the new files only."""
    found = (
        (path, size, int(modified.timestamp() * 1000))
        for path, size, modified in storage.list_after(root, last_path)
    )
    yield from _eligible(root, found, opts, now_ms)


def stat_landed(
    root: str, paths: Iterable[str], opts: CloudFilesOptions, now_ms: int | None = None
) -> Iterator[Listed]:
    """The eligible files among local ``paths`` a file event named (one that is gone
    again, or is no longer a file, is skipped: the state never sees it)."""

    def found() -> Iterator[tuple[str, int, int]]:
        for path in paths:
            info = storage.stat(path)
            if info is not None and info.is_file:
                yield path, info.size or 0, int((info.mtime_ns or 0) // 1_000_000)

    yield from _eligible(root, found(), opts, now_ms)


def _eligible(
    root: str, found: Iterable[tuple[str, int, int]], opts: CloudFilesOptions, now_ms: int | None
) -> Iterator[Listed]:
    """The listed ``(path, size, mtime_ms)`` files the options admit (hidden files, glob,
    modification-time bounds and ``maxFileAge`` applied)."""
    after = parse_time(opts.modified_after, "modifiedAfter") if opts.modified_after else None
    before = parse_time(opts.modified_before, "modifiedBefore") if opts.modified_before else None
    oldest = (now_ms - opts.max_file_age_ms) if (opts.max_file_age_ms and now_ms) else None
    prefix = root.rstrip("/") + "/"  # listed paths are spelt as the root: no parsing
    for path, size, mtime in found:
        rel = path[len(prefix) :] if path.startswith(prefix) else storage.relative(path, root)
        if any(part.startswith(("_", ".")) for part in rel.split("/")):
            continue
        if opts.glob and not fnmatch.fnmatchcase(rel.rsplit("/", 1)[-1], opts.glob):
            continue
        if (after is not None and mtime <= after) or (before is not None and mtime >= before):
            continue
        if oldest is not None and mtime < oldest:
            continue
        yield Listed(path, size, mtime)


def partition_values(root: str, path: str) -> dict[str, str | None]:
    """``k=v`` directory segments between ``root`` and the file (Spark's unescaping)."""
    rel = storage.relative(path, root)
    values: dict[str, str | None] = {}
    for segment in rel.split("/")[:-1]:
        if "=" in segment:
            key, value = segment.split("=", 1)
            value = unescape(value)
            values[unescape(key)] = None if value in (NULL_PARTITION, "") else value
    return values
