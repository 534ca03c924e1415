"""Finding the files of a landing directory, and the partition values in their paths.

Listing runs on the driver. The whole tree under the source path is listed (as Auto Loader
does); hidden files and directories (``_`` or ``.`` prefix) are skipped, as in every Spark
file source. What is *new* is decided by the file state, not by keeping a listing in memory.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import os
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow.fs as pafs

from headwater import storage
from headwater.autoloader.options import CloudFilesOptions
from headwater.delta.partitions import NULL_PARTITION, unescape
from headwater.errors import OptionError


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
    fs, base = storage.filesystem(root)
    info = fs.get_file_info(base)
    if info.type == pafs.FileType.NotFound:
        return
    if info.type == pafs.FileType.File:
        candidates = [info]
    else:
        candidates = fs.get_file_info(pafs.FileSelector(base, recursive=True, allow_not_found=True))
    after = parse_time(opts.modified_after, "modifiedAfter") if opts.modified_after else None
    before = parse_time(opts.modified_before, "modifiedBefore") if opts.modified_before else None
    oldest = (now_ms - opts.max_file_age_ms) if (opts.max_file_age_ms and now_ms) else None
    for f in candidates:
        if f.type != pafs.FileType.File:
            continue
        rel = f.path[len(base) :].lstrip("/")
        if any(part.startswith(("_", ".")) for part in rel.split("/")):
            continue
        if opts.glob and not fnmatch.fnmatchcase(f.base_name, opts.glob):
            continue
        mtime = int(f.mtime_ns // 1_000_000) if f.mtime_ns is not None else 0
        if (after is not None and mtime <= after) or (before is not None and mtime >= before):
            continue
        if oldest is not None and mtime < oldest:
            continue
        yield Listed(f.path, f.size or 0, mtime)


def partition_values(root: str, path: str) -> dict[str, str | None]:
    """``k=v`` directory segments between ``root`` and the file (Spark's unescaping)."""
    base = storage.filesystem(root)[1].rstrip("/")
    rel = path[len(base) :].lstrip("/") if path.startswith(base) else os.path.basename(path)
    values: dict[str, str | None] = {}
    for segment in rel.split("/")[:-1]:
        if "=" in segment:
            key, value = segment.split("=", 1)
            value = unescape(value)
            values[unescape(key)] = None if value in (NULL_PARTITION, "") else value
    return values
