"""Where a table's log is stored: the one atomic step a Delta commit needs.

A commit is the file ``_delta_log/<version>.json``, and it wins only if nobody wrote that
version first: a put-if-absent. That single operation is what differs between stores (a
hard link on a local filesystem; a conditional ``PUT`` with ``If-None-Match: *`` on an
object store), so it sits behind this small interface and nothing else in the commit path
knows which store it is on.
"""

from __future__ import annotations

import os
import uuid
from typing import Protocol

from pyarrow import fs as pafs

from headwater import storage
from headwater.errors import UnsupportedFeatureError


class LogStore(Protocol):
    def put_if_absent(self, path: str, data: bytes) -> bool:
        """Write ``data`` at ``path`` unless a file is already there (atomically, whole or
        not at all); False when it was there."""
        ...


class LocalLogStore:
    """A local (or NFS-like POSIX) filesystem: the commit is written to a temporary file and
    hard-linked into place, which fails when the name exists; readers never see a partial
    file."""

    def put_if_absent(self, path: str, data: bytes) -> bool:
        directory = os.path.dirname(path)
        os.makedirs(directory, exist_ok=True)
        temp = os.path.join(directory, f".{uuid.uuid4().hex}.json.tmp")
        with open(temp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(temp, path)
        except FileExistsError:
            return False
        finally:
            os.unlink(temp)
        return True


def for_table(root: str) -> tuple[LogStore, str]:
    """The log store of the table at ``root`` and the path of its log directory in it."""
    filesystem, local = storage.filesystem(storage.join(root, "_delta_log"))
    if isinstance(filesystem, pafs.LocalFileSystem):
        return LocalLogStore(), local
    raise UnsupportedFeatureError(
        f"Committing to {root} needs an atomic put-if-absent on its store; headwater "
        "commits to local filesystems only so far. Write the table on a local path, or with "
        "an engine that commits to this store."
    )
