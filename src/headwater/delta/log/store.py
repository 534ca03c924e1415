"""Where a table's log is stored: the one atomic step a Delta commit needs.

A commit is the file ``_delta_log/<version>.json``, and it wins only if nobody wrote that
version first: a put-if-absent. That single operation is what differs between stores (a
hard link on a local filesystem; a conditional ``PUT`` with ``If-None-Match: *`` on an
object store), so it sits behind this small interface and nothing else in the commit path
knows which store it is on.
"""

from __future__ import annotations

from typing import Protocol

from headwater import storage
from headwater.errors import UnsupportedFeatureError
from headwater.storage.guard import check_create_if_absent


class LogStore(Protocol):
    def put_if_absent(self, path: str, data: bytes) -> bool:
        """Write ``data`` at ``path`` unless a file is already there (atomically, whole or
        not at all); False when it was there."""
        ...


class StorageLogStore:
    """Any store :mod:`headwater.storage` can write create-if-absent: a local (or NFS-like
    POSIX) filesystem through a hard link, S3 through a conditional ``PUT``."""

    def put_if_absent(self, path: str, data: bytes) -> bool:
        return storage.put_if_absent(path, data)


def for_table(root: str) -> tuple[LogStore, str]:
    """The log store of the table at ``root`` and the path of its log directory in it.
    A store is checked to honour create-if-absent before the first commit to it."""
    log_dir = storage.delta_log_dir(storage.normalize(root))
    location = storage.parse(log_dir)
    if not (location.is_local or location.is_s3):
        raise UnsupportedFeatureError(
            f"Committing to {root} needs an atomic put-if-absent on its store; headwater "
            "commits to local filesystems and S3-compatible stores (s3://, s3a://). Write "
            "the table on one of those, or with an engine that commits to this store."
        )
    check_create_if_absent(log_dir)
    return StorageLogStore(), log_dir
