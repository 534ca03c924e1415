"""One spelling of a location, whichever way the user wrote it.

``/data/t``, ``file:/data/t`` and ``file:///data/t`` are one local folder; ``s3://b/t`` and
``s3a://b/t`` are one S3 prefix (``s3a`` is Hadoop's name for the same store). Everything
that compares, joins or strips paths goes through here, so a listing and the root it came
from always agree on the spelling.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import unquote, urlparse

# Schemes that name an S3-compatible object store.
S3_SCHEMES = ("s3", "s3a", "s3n")


@dataclass(frozen=True)
class Location:
    """Where a path lives: ``scheme`` ``""`` for the local filesystem."""

    scheme: str
    bucket: str  # "" for local paths
    key: str  # the path within the bucket (local: the absolute path)

    @property
    def is_local(self) -> bool:
        return not self.scheme

    @property
    def is_s3(self) -> bool:
        return self.scheme in S3_SCHEMES

    @property
    def inner(self) -> str:
        """The path as pyarrow's filesystem for the store names it."""
        return self.key if self.is_local else f"{self.bucket}/{self.key}".rstrip("/")

    def uri(self) -> str:
        return self.key if self.is_local else f"{self.scheme}://{self.inner}"


def parse(path: str | os.PathLike[str]) -> Location:
    text = os.fspath(path)
    parsed = urlparse(text)
    if parsed.scheme in ("", "file") or len(parsed.scheme) == 1:  # 1: a Windows drive
        local = parsed.path if parsed.scheme == "file" else text
        return Location("", "", os.path.abspath(local))
    return Location(parsed.scheme.lower(), parsed.netloc, parsed.path.strip("/"))


def local_path(uri: str) -> str:
    """A local file as Spark, Hadoop and delta-rs name it (``file:/x``, ``file:///x``,
    URL-encoded) as a plain path (``file://rel/x``: ``rel/x``); plain paths and other
    stores' URIs unchanged."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return uri
    host = parsed.netloc if parsed.netloc != "localhost" else ""
    return unquote(host + parsed.path)


def normalize(path: str | os.PathLike[str]) -> str:
    """An absolute local path, or the URI without a trailing slash for remote stores."""
    return parse(path).uri()


def is_remote(path: str) -> bool:
    return not parse(path).is_local


def same_store(a: str, b: str) -> bool:
    """Whether two paths are on the same store (same bucket of the same kind of store)."""
    la, lb = parse(a), parse(b)
    kind = "s3" if la.is_s3 else la.scheme
    return (kind, la.bucket) == ("s3" if lb.is_s3 else lb.scheme, lb.bucket)


def join(root: str, *parts: str) -> str:
    return "/".join([root.rstrip("/"), *[p.strip("/") for p in parts if p]])


def relative(path: str, root: str) -> str:
    """``path`` relative to ``root`` (both in any spelling of the same store); the base name
    when ``path`` is not under ``root``."""
    inner, base = parse(path).inner, parse(root).inner.rstrip("/")
    if inner.startswith(base + "/"):
        return inner[len(base) + 1 :]
    return inner.rsplit("/", 1)[-1]
