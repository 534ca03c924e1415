"""The operations pyarrow's S3 filesystem lacks: create-if-absent and listing after a key.

A Delta commit needs a write that fails when the object exists (``PUT`` with
``If-None-Match: *``), and incremental listing needs S3's ``StartAfter``; pyarrow's
``S3FileSystem`` has neither, ``obstore`` (the Rust ``object_store`` crate delta-rs itself
commits with) has both.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from datetime import datetime

import obstore
from obstore.exceptions import AlreadyExistsError
from obstore.store import S3Store

from headwater.storage.paths import Location
from headwater.storage.settings import S3Settings, for_bucket


@functools.lru_cache(maxsize=64)
def _store(bucket: str, settings: S3Settings) -> S3Store:
    config: dict[str, str | bool] = {"virtual_hosted_style_request": not settings.path_style}
    for key, value in (
        ("endpoint", settings.endpoint),
        ("access_key_id", settings.access_key),
        ("secret_access_key", settings.secret_key),
        ("session_token", settings.session_token),
        ("region", settings.region or "us-east-1"),
    ):
        if value:
            config[key] = value
    return S3Store(bucket, client_options={"allow_http": settings.allow_http}, **config)  # type: ignore[arg-type]


def store(location: Location) -> S3Store:
    return _store(location.bucket, for_bucket(location.bucket))


def put_if_absent(location: Location, data: bytes) -> bool:
    try:
        obstore.put(store(location), location.key, data, mode="create")
    except AlreadyExistsError:
        return False
    return True


def list_after(location: Location, start_after: str) -> Iterator[tuple[str, int, datetime]]:
    """``(key, size, last modified)`` of the objects under ``location`` whose key sorts after
    ``start_after`` (a full key), in key order: one request per 1,000 keys."""
    prefix = location.key.rstrip("/") + "/" if location.key else ""
    for chunk in obstore.list(store(location), prefix or None, offset=start_after or None):
        for meta in chunk:
            yield meta["path"], meta["size"], meta["last_modified"]


def copy(source: Location, target: Location) -> None:
    obstore.copy(store(source), source.key, target.key)


def delete(location: Location) -> None:
    """Delete one object; a missing one is no error (S3 answers both alike)."""
    obstore.delete(store(location), location.key)


def delete_prefix(location: Location) -> None:
    """Every object under ``location`` (a folder, as far as S3 has them)."""
    keys = [key for key, _, _ in list_after(location, "")]
    for start in range(0, len(keys), 1000):
        obstore.delete(store(location), keys[start : start + 1000])
