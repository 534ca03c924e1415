"""The one boundary between headwater and the files it touches: local folders and S3.

Every table, landing, checkpoint and state path is read, listed, written and deleted
through these functions (a test of the code base keeps ``os``/``open``/``shutil`` off such
paths elsewhere). Paths are strings in the user's spelling — ``/x``, ``file:/x``,
``s3://b/x``, ``s3a://b/x`` — and come back in it: a listing of ``s3://b/t`` yields
``s3://b/t/...``. pyarrow's filesystems do the byte work; ``obstore`` adds what S3 needs and
pyarrow lacks (create-if-absent, listing after a key); endpoints and credentials come from
:mod:`headwater.storage.settings`.
"""

from __future__ import annotations

import functools
import os
import uuid
from collections.abc import Iterator
from datetime import datetime

import pyarrow.fs as pafs

from headwater.errors import StorageError
from headwater.storage import object_store
from headwater.storage.paths import (
    Location,
    delta_log_dir,
    is_remote,
    join,
    normalize,
    parse,
    relative,
    spark_file_uri,
)
from headwater.storage.settings import S3Settings, for_bucket

__all__ = [
    "Location",
    "delete_dir",
    "delta_log_dir",
    "delete_file",
    "exists",
    "filesystem",
    "is_dir",
    "is_nonempty_dir",
    "is_remote",
    "join",
    "list_after",
    "list_files",
    "make_dir",
    "move",
    "normalize",
    "parse",
    "put_if_absent",
    "read_bytes",
    "relative",
    "spark_file_uri",
    "stat",
    "write_bytes",
]


@functools.lru_cache(maxsize=64)
def _s3_filesystem(settings: S3Settings) -> pafs.FileSystem:
    return pafs.S3FileSystem(
        access_key=settings.access_key or None,
        secret_key=settings.secret_key or None,
        session_token=settings.session_token or None,
        endpoint_override=settings.endpoint or None,
        region=settings.region or "us-east-1",
        force_virtual_addressing=not settings.path_style,
        check_directory_existence_before_creation=False,
    )


def filesystem(path: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem holding ``path`` and the path within it."""
    location = parse(path)
    if location.is_local:
        return pafs.LocalFileSystem(), location.key
    if location.is_s3:
        return _s3_filesystem(for_bucket(location.bucket)), location.inner
    return pafs.FileSystem.from_uri(location.uri())


def _respell(info: pafs.FileInfo, location: Location) -> pafs.FileInfo:
    """A listed entry named as the root was (``s3://b/k``, not pyarrow's ``b/k``)."""
    if location.is_local:
        return info
    return pafs.FileInfo(
        f"{location.scheme}://{info.path}", info.type, mtime=info.mtime, size=info.size
    )


def stat(path: str) -> pafs.FileInfo | None:
    """The file or folder at ``path`` (named in its spelling), None when there is none."""
    fs, p = filesystem(path)
    info = fs.get_file_info(p)
    return None if info.type == pafs.FileType.NotFound else _respell(info, parse(path))


def exists(path: str) -> bool:
    fs, p = filesystem(path)
    return fs.get_file_info(p).type != pafs.FileType.NotFound


def is_nonempty_dir(path: str) -> bool:
    fs, p = filesystem(path)
    if fs.get_file_info(p).type != pafs.FileType.Directory:
        return False
    return bool(fs.get_file_info(pafs.FileSelector(p, recursive=False)))


def is_dir(path: str) -> bool:
    fs, p = filesystem(path)
    return fs.get_file_info(p).type == pafs.FileType.Directory


def make_dir(path: str) -> None:
    """A local folder; nothing on object stores, where folders exist by their objects."""
    if not is_remote(path):
        fs, p = filesystem(path)
        fs.create_dir(p, recursive=True)


def list_files(path: str, recursive: bool = True) -> list[pafs.FileInfo]:
    """The files under ``path`` (none when it does not exist), named in its spelling."""
    fs, p = filesystem(path)
    location = parse(path)
    selector = pafs.FileSelector(p, recursive=recursive, allow_not_found=True)
    return [_respell(i, location) for i in fs.get_file_info(selector) if i.is_file]


def list_after(path: str, start_after: str) -> Iterator[tuple[str, int, datetime]]:
    """``(path, size, modified)`` of the files under ``path`` whose path sorts after
    ``start_after``, in that order, without listing the ones before it. On S3 that is one
    request per 1,000 new keys (``StartAfter``); elsewhere a full listing, filtered."""
    location = parse(path)
    if location.is_s3:
        after = parse(start_after).key if start_after else ""
        for key, size, modified in object_store.list_after(location, after):
            yield f"{location.scheme}://{location.bucket}/{key}", size, modified
        return
    found = [f for f in list_files(path) if f.path > start_after]
    for f in sorted(found, key=lambda f: f.path):
        yield f.path, f.size or 0, f.mtime


def read_bytes(path: str) -> bytes:
    fs, p = filesystem(path)
    with fs.open_input_stream(p) as f:
        return f.read()


def write_bytes(path: str, data: bytes) -> None:
    """Write (or replace) a whole file. Readers of a local file may see it partly written:
    use :func:`put_if_absent` where they must not."""
    fs, p = filesystem(path)
    if not is_remote(path):
        fs.create_dir(p.rsplit("/", 1)[0], recursive=True)
    with fs.open_output_stream(p) as f:
        f.write(data)


def put_if_absent(path: str, data: bytes) -> bool:
    """Write ``data`` at ``path`` unless something is there, whole or not at all; False when
    it was there. Local: a temporary file hard-linked into place. S3: a conditional ``PUT``
    (``If-None-Match: *``) — stores that ignore the condition are caught by
    :func:`headwater.storage.guard.check_create_if_absent`."""
    location = parse(path)
    if location.is_s3:
        return object_store.put_if_absent(location, data)
    if not location.is_local:
        raise StorageError(
            f"{path}: headwater writes create-if-absent (what a Delta commit needs) only on "
            "local filesystems and S3-compatible stores (s3://, s3a://). Use one of those."
        )
    directory = os.path.dirname(location.key)
    os.makedirs(directory, exist_ok=True)
    temp = os.path.join(directory, f".{uuid.uuid4().hex}.tmp")
    with open(temp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    try:
        os.link(temp, location.key)
    except FileExistsError:
        return False
    finally:
        os.unlink(temp)
    return True


def move(src: str, dst: str) -> None:
    """Move a file (on object stores: copy, then delete the source)."""
    source, target = parse(src), parse(dst)
    if source.is_s3 and target.is_s3 and source.bucket == target.bucket:
        object_store.copy(source, target)
        object_store.delete(source)
        return
    fs, s = filesystem(src)
    _, d = filesystem(dst)
    if source.is_local:
        fs.create_dir(d.rsplit("/", 1)[0], recursive=True)
    fs.move(s, d)


def delete_dir(path: str) -> None:
    location = parse(path)
    if location.is_s3:  # pyarrow would leave a folder marker object behind
        object_store.delete_prefix(location)
        return
    fs, p = filesystem(path)
    if fs.get_file_info(p).type == pafs.FileType.Directory:
        fs.delete_dir(p)


def delete_file(path: str) -> None:
    location = parse(path)
    if location.is_s3:  # pyarrow would leave a folder marker object behind
        object_store.delete(location)
        return
    fs, p = filesystem(path)
    if fs.get_file_info(p).type == pafs.FileType.File:
        fs.delete_file(p)
