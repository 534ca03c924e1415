"""One filesystem abstraction (pyarrow.fs) for every file headwater touches.

Local paths today; any URI pyarrow understands (s3://, gs://, ...) tomorrow without
changing the callers.
"""

from __future__ import annotations

import os
from urllib.parse import urlparse

import pyarrow.fs as pafs


def normalize(path: str | os.PathLike[str]) -> str:
    """An absolute local path, or the URI unchanged for remote stores."""
    text = os.fspath(path)
    parsed = urlparse(text)
    if parsed.scheme in ("", "file"):
        return os.path.abspath(parsed.path if parsed.scheme == "file" else text)
    return text.rstrip("/")


def filesystem(path: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem holding ``path`` and the path within it."""
    if "://" in path and not path.startswith("file://"):
        return pafs.FileSystem.from_uri(path)
    return pafs.LocalFileSystem(), normalize(path)


def join(root: str, *parts: str) -> str:
    return "/".join([root.rstrip("/"), *[p.strip("/") for p in parts]])


def is_nonempty_dir(path: str) -> bool:
    fs, p = filesystem(path)
    if fs.get_file_info(p).type != pafs.FileType.Directory:
        return False
    return bool(fs.get_file_info(pafs.FileSelector(p, recursive=False)))


def is_dir(path: str) -> bool:
    fs, p = filesystem(path)
    return fs.get_file_info(p).type == pafs.FileType.Directory


def make_dir(path: str) -> None:
    fs, p = filesystem(path)
    fs.create_dir(p, recursive=True)


def list_files(path: str, recursive: bool = True) -> list[pafs.FileInfo]:
    fs, p = filesystem(path)
    if fs.get_file_info(p).type == pafs.FileType.NotFound:
        return []
    infos = fs.get_file_info(pafs.FileSelector(p, recursive=recursive))
    return [i for i in infos if i.type == pafs.FileType.File]


def read_bytes(path: str) -> bytes:
    fs, p = filesystem(path)
    with fs.open_input_stream(p) as f:
        return f.read()


def write_bytes(path: str, data: bytes) -> None:
    fs, p = filesystem(path)
    fs.create_dir(p.rsplit("/", 1)[0], recursive=True)
    with fs.open_output_stream(p) as f:
        f.write(data)


def move(src: str, dst: str) -> None:
    fs, s = filesystem(src)
    _, d = filesystem(dst)
    fs.create_dir(d.rsplit("/", 1)[0], recursive=True)
    fs.move(s, d)


def delete_dir(path: str) -> None:
    fs, p = filesystem(path)
    if fs.get_file_info(p).type == pafs.FileType.Directory:
        fs.delete_dir(p)


def delete_file(path: str) -> None:
    fs, p = filesystem(path)
    if fs.get_file_info(p).type == pafs.FileType.File:
        fs.delete_file(p)
