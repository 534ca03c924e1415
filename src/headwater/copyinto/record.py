"""The load record: which source files a table has loaded, kept in the table's own log.

Each COPY INTO commit carries, in its ``commitInfo``, the files it loaded::

    "operation": "COPY INTO",
    "headwaterCopyInto": {"source": "/landing/orders", "files": ["a.json", "d=1/b.json"],
                          "corrupt": ["c.json"]}

(paths relative to ``source``; ``corrupt``: files skipped by ``ignoreCorruptFiles``, which
count as loaded so a rerun is a no-op). On delta-spark, whose writer takes no commitInfo
field of ours, the same record is the commit's ``userMetadata`` (the JSON object
``{"headwaterCopyInto": {...}}``, :func:`user_metadata`), written by the same commit as the
data; the reader below takes it from either place, so either engine reads the other's. The record is therefore committed atomically with
the data: a crash before the commit leaves neither, a crash after it leaves both. It lives
with the table (copy or move the table and the record moves along) and is read by scanning
the commits' JSON files directly: one listing and one small read per commit, no Spark job,
no delta-rs snapshot. Only the ``commitInfo`` line of each commit is parsed.

Scanning a long log on every COPY INTO would grow with the table's age, so after a long
scan (or one that met a record more than a day old: other engines' log cleanup removes
commits after 30 days) the result is cached in ``<table>/_headwater_copy_into/<table id>-<version>.jsonz``:
a pure function of the log up to that version (so concurrent writers write identical
files), ignored if unreadable, and the log after it is always scanned. VACUUM skips
``_``-prefixed directories, so the cache stays. The log stays authoritative; the cache also
keeps the record of commits that another engine's log cleanup has since removed.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import re
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from headwater import storage
from headwater.engines.door import CommitView
from headwater.errors import ConcurrentModificationException

log = logging.getLogger(__name__)

OPERATION = "COPY INTO"
RECORD_KEY = "headwaterCopyInto"
# delta-spark: the application id of the transaction every COPY INTO commit into a table
# carries (its version: the table version the load was planned at), so two loads planned
# at once cannot both commit (delta-spark's ConcurrentTransactionException, or a skip).
APP_ID = "headwater-copy-into"
CACHE_DIR = "_headwater_copy_into"
CACHE_AFTER_COMMITS = 20  # write a cache when a scan had to read at least this many commits
CACHE_AFTER_AGE_S = 86_400  # ... or met a record this old (log cleanup comes after 30 days)
_COMMIT_FILE = re.compile(r"^(\d{20})\.json$")


class LoadConflictError(ConcurrentModificationException):
    """A concurrent COPY INTO committed some of the same files first."""

    def __init__(self, files: Iterable[str]):
        self.files = sorted(files)
        shown = ", ".join(self.files[:10]) + (" ..." if len(self.files) > 10 else "")
        super().__init__(
            f"A concurrent COPY INTO loaded {len(self.files)} of the same file(s) first: {shown}. "
            "Nothing was committed by this one; run it again to load the rest."
        )


def entry(source: str, loaded: Iterable[str], corrupt: Iterable[str]) -> dict:
    """The record of one commit (``headwaterCopyInto``), paths relative to ``source``."""
    base = source.rstrip("/") + "/"

    def rel(path: str) -> str:
        return path[len(base) :] if path.startswith(base) else path

    return {
        "source": source,
        "files": sorted(rel(p) for p in loaded),
        "corrupt": sorted(rel(p) for p in corrupt),
    }


def user_metadata(record: dict) -> str:
    """The record as a commit's ``userMetadata`` (delta-spark's writer option)."""
    return json.dumps({RECORD_KEY: record}, separators=(",", ":"), sort_keys=True)


def of_commit(info: Mapping[str, Any]) -> dict | None:
    """The load record a commit's ``commitInfo`` carries (either place), or None."""
    found = info.get(RECORD_KEY)
    if isinstance(found, dict):
        return found
    text = info.get("userMetadata")
    if isinstance(text, str) and RECORD_KEY in text:
        try:
            found = json.loads(text).get(RECORD_KEY)
        except (ValueError, AttributeError):
            return None
        return found if isinstance(found, dict) else None
    return None


def _paths(record: dict) -> list[str]:
    source = record.get("source", "")
    out = []
    for name in [*record.get("files", []), *record.get("corrupt", [])]:
        out.append(name if ("://" in name or name.startswith("/")) else storage.join(source, name))
    return out


def commit_versions(root: str) -> list[int]:
    """The versions whose commit JSON is still in ``_delta_log`` (one listing)."""
    log_dir = storage.delta_log_dir(root)
    versions = []
    for info in storage.list_files(log_dir, recursive=False):
        m = _COMMIT_FILE.match(info.base_name)
        if m:
            versions.append(int(m.group(1)))
    return sorted(versions)


def _commit_info(root: str, version: int) -> dict:
    """The ``commitInfo`` of one commit ({} if it has none). delta-rs and delta-spark write
    it first, so only the first line is read (a commit may hold thousands of add actions);
    the whole file only for a writer that puts it elsewhere."""
    path = storage.join(storage.delta_log_dir(root), f"{version:020d}.json")
    fs, inner = storage.filesystem(path)
    head = b""
    with fs.open_input_stream(inner) as stream:
        while b"\n" not in head:
            chunk = stream.read(1 << 16)
            if not chunk:
                break
            head += chunk
    first = head.split(b"\n", 1)[0]
    if first.lstrip().startswith(b'{"commitInfo"'):
        return json.loads(first).get("commitInfo", {})
    for line in storage.read_bytes(path).split(b"\n"):
        if b'"commitInfo"' in line:
            action = json.loads(line)
            if "commitInfo" in action:
                return action["commitInfo"]
    return {}


def loaded_in(root: str, versions: Iterable[int]) -> set[str]:
    """Files recorded as loaded by the COPY INTO commits among ``versions``."""
    return _scan(root, versions)[0]


def _scan(root: str, versions: Iterable[int]) -> tuple[set[str], int | None]:
    """(files loaded by the COPY INTO commits among ``versions``, the oldest such commit's
    timestamp in ms or None)."""
    versions = list(versions)
    if not versions:
        return set(), None
    workers = min(16, len(versions))
    if workers == 1:
        infos = [_commit_info(root, versions[0])]
    else:
        with ThreadPoolExecutor(workers) as pool:
            infos = list(pool.map(lambda v: _commit_info(root, v), versions))
    loaded: set[str] = set()
    oldest = None
    for info in infos:
        record = of_commit(info)
        if record is not None:
            loaded.update(_paths(record))
            stamp = int(info.get("timestamp") or 0)
            oldest = stamp if oldest is None else min(oldest, stamp)
    return loaded, oldest


def loaded_files(root: str, version: int, table_id: str | None, cache: bool = True) -> set[str]:
    """Every file the table at ``root`` had loaded by ``version`` (absolute paths)."""
    cached_version, files = _read_cache(root, version, table_id)
    available = [v for v in commit_versions(root) if cached_version < v <= version]
    first = available[0] if available else version + 1
    if first > cached_version + 1:
        log.warning(
            "COPY INTO load record of %s: commits %d..%d are no longer in _delta_log (log "
            "cleanup) and no cache covers them; files they loaded may be loaded again.",
            root,
            cached_version + 1,
            first - 1,
        )
    found, oldest = _scan(root, available)
    files |= found
    aged = oldest is not None and time.time() - oldest / 1000 >= CACHE_AFTER_AGE_S
    if cache and table_id and (len(available) >= CACHE_AFTER_COMMITS or aged):
        _write_cache(root, version, table_id, files)
    return files


class NotLoadedConcurrently:
    """A transaction requirement: no commit that lands before this load's loaded any of
    its files (see :class:`headwater.engines.door.Requirement`)."""

    def __init__(self, files: set[str]) -> None:
        self.files = files

    def check(self, winner: CommitView) -> None:
        record = of_commit(winner.info.values) if winner.info is not None else None
        if record is not None:
            overlap = self.files & set(_paths(record))
            if overlap:
                raise LoadConflictError(overlap)


# -- the cache ---------------------------------------------------------------------------


def _cache_dir(root: str) -> str:
    return storage.join(root, CACHE_DIR)


def _cache_entries(root: str, table_id: str) -> list[tuple[int, str]]:
    out = []
    for info in storage.list_files(_cache_dir(root), recursive=False):
        name = info.base_name
        prefix = f"{table_id}-"
        if name.startswith(prefix) and name.endswith(".jsonz"):
            digits = name[len(prefix) : -len(".jsonz")]
            if digits.isdigit():
                out.append((int(digits), info.path))
    return sorted(out)


def _read_cache(root: str, version: int, table_id: str | None) -> tuple[int, set[str]]:
    """(version the cache covers, its files); (-1, empty) without a usable cache."""
    if not table_id:
        return -1, set()
    for cached, path in reversed(_cache_entries(root, table_id)):
        if cached > version:
            continue
        try:
            doc = json.loads(gzip.decompress(storage.read_bytes(path)))
            if doc.get("tableId") == table_id and doc.get("version") == cached:
                return cached, set(doc["files"])
        except (OSError, ValueError, KeyError, EOFError) as e:
            log.warning("ignoring unreadable COPY INTO record cache %s: %s", path, e)
    return -1, set()


def _write_cache(root: str, version: int, table_id: str, files: set[str]) -> None:
    doc = {"tableId": table_id, "version": version, "files": sorted(files)}
    final = storage.join(_cache_dir(root), f"{table_id}-{version:020d}.jsonz")
    tmp = storage.join(_cache_dir(root), f".{table_id}-{version}-{os.getpid()}.tmp")
    try:
        storage.write_bytes(tmp, gzip.compress(json.dumps(doc).encode(), compresslevel=1))
        storage.move(tmp, final)  # whole or not at all; same content whoever wins
        for _, older in _cache_entries(root, table_id)[:-2]:
            storage.delete_file(older)
    except OSError as e:  # a cache is an optimisation: never fail a load over it
        log.warning("could not write the COPY INTO record cache of %s: %s", root, e)
