"""Refuse a store that would lose commits, before the first commit to it.

Delta's commit protocol is a put-if-absent: two writers racing for version N both ``PUT``
``N.json`` and exactly one must fail. A store that ignores ``If-None-Match: *`` (some S3
emulators and gateways do) lets both succeed and silently drops one writer's commit. The
check writes a probe object twice with create-if-absent: the second write must be refused.
It runs once per bucket and process, against the folder the commit is about to go to.
"""

from __future__ import annotations

import threading
import uuid

from headwater.errors import StorageError
from headwater.storage.paths import join, parse

_checked: set[tuple[str, str]] = set()
_lock = threading.Lock()


def check_create_if_absent(directory: str) -> None:
    """Raise :class:`StorageError` when the store of ``directory`` does not honour
    create-if-absent writes. Local filesystems always do (hard links)."""
    from headwater import storage  # the package's functions; this module is part of it

    location = parse(directory)
    if location.is_local:
        return
    key = (location.scheme if not location.is_s3 else "s3", location.bucket)
    with _lock:
        if key in _checked:
            return
    probe = join(directory, f".headwater-create-if-absent-{uuid.uuid4().hex}")
    try:
        first = storage.put_if_absent(probe, b"1")
        second = storage.put_if_absent(probe, b"2")
    finally:
        storage.delete_file(probe)
    if not first or second:
        raise StorageError(
            f"The store of {location.uri()} does not honour create-if-absent writes "
            "(PUT with If-None-Match: *): two writers committing the same Delta version "
            "would both succeed and one commit would be lost. Use a store that supports "
            "conditional writes (AWS S3, MinIO, SeaweedFS, ...) or point "
            "spark.hadoop.fs.s3a.endpoint at one.",
            error_class="HEADWATER_STORE_IGNORES_CONDITIONAL_WRITES",
        )
    with _lock:
        _checked.add(key)
