"""One spelling of a location, whichever way the user wrote it.

``/data/t``, ``file:/data/t`` and ``file:///data/t`` are one local folder; ``s3://b/t`` and
``s3a://b/t`` are one S3 prefix (``s3a`` is Hadoop's name for the same store). Everything
that compares, joins or strips paths goes through here, so a listing and the root it came
from always agree on the spelling: ``file:`` URIs are built and read only here, and a
table's ``_delta_log`` folder is named only here (``tests/test_codebase.py`` keeps it so).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import unquote, urlparse

# Schemes that name an S3-compatible object store.
S3_SCHEMES = ("s3", "s3a", "s3n")
# The folder of a Delta table's transaction log, under the table's root.
DELTA_LOG_DIR = "_delta_log"


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


def hadoop_uri(path: str) -> str:
    """``path`` as Hadoop's ``Path.toString`` spells it for engines that read it back:
    ``file:/abs/path`` (unescaped) for a local file; other stores' URIs unchanged."""
    location = parse(path)
    return f"file:{location.key}" if location.is_local else path


# ASCII characters java.net.URI leaves as they are in a path; it escapes every other ASCII
# character (space, ``%``, ``#``, ``?``, ...) and keeps non-ASCII ones.
_URI_PATH_SAFE = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.!~*'();:@&=+$,/"
)


def spark_file_uri(path: str) -> str:
    """A file as Spark's file sources report it in ``_metadata.file_path``: Hadoop's
    ``Path.toUri`` of the file, ``file:/abs/a%20b.json`` for a local file,
    ``s3a://bucket/a%20b.json`` on a store (escaped as ``java.net.URI`` escapes a path)."""
    location = parse(path)
    if location.is_local:
        prefix, rest = "file:", location.key
    else:
        scheme, _, after = local_path(path).partition("://")
        bucket, slash, key = after.partition("/")
        prefix, rest = f"{scheme}://{bucket}", slash + key
    return prefix + "".join(
        c if c in _URI_PATH_SAFE or ord(c) > 127 else "".join(f"%{b:02X}" for b in c.encode())
        for c in rest
    )


def file_uri_spellings(uri: str) -> list[str]:
    """Both spellings Spark gives one local file's URI: it lists ``file:///x`` but its
    scan reports ``file:/x``. Any other URI has one."""
    if uri.startswith("file:///"):
        return [uri, "file:/" + uri[len("file:///") :]]
    if uri.startswith("file:/") and not uri.startswith("file://"):
        return [uri, "file:///" + uri[len("file:/") :]]
    return [uri]


def decoded_uri(uri: str) -> str:
    """A location a Delta log names by a percent-encoded URI (``file:/t/a%20b``,
    ``s3a://b/t/a%20b``) decoded, in one spelling per location: an absolute local path, or
    ``s3://`` for every S3 scheme."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return os.path.abspath(unquote(parsed.path))
    scheme = "s3" if parsed.scheme in S3_SCHEMES else parsed.scheme
    return f"{scheme}://{parsed.netloc}{unquote(parsed.path)}"


def relative_under(path: str, root: str) -> str | None:
    """``path`` (spelt as :func:`decoded_uri` gives it) relative to ``root`` (any spelling)
    when it lies below it, a local root reached through a symlink too; None when it lies
    elsewhere."""
    location = parse(root)
    folded = Location("s3", location.bucket, location.key) if location.is_s3 else location
    base = folded.uri().rstrip("/")
    if path.startswith(base + "/"):
        return path[len(base) + 1 :]
    if location.is_local and not is_remote(path):
        real, real_base = os.path.realpath(path), os.path.realpath(base)
        if real.startswith(real_base + "/"):
            return real[len(real_base) + 1 :]
    return None


def delta_log_dir(root: str) -> str:
    """The transaction-log folder of the Delta table at ``root``."""
    return join(root, DELTA_LOG_DIR)


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
