"""Endpoint and credentials of object stores, given once and carried to every process.

Users configure S3 as they do for Spark: ``spark.hadoop.fs.s3a.endpoint``,
``...access.key``, ``...secret.key`` (and per bucket ``spark.hadoop.fs.s3a.bucket.<b>.*``).
:func:`from_spark_conf` reads those on the driver; the same values then serve delta-rs
(:func:`delta_options`), pyarrow (the driver's and the executors' file access) and
obstore (commits). Python workers — the driver's planning workers and every executor —
get them from Spark with each function it ships (:data:`ENVIRONMENT_VARIABLE` in
``SparkContext.environment``), never from the driver's environment: on a cluster an
executor does not share it. Without explicit settings every
library falls back to its own default chain (``AWS_*`` variables, instance profiles).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace

_S3A = "spark.hadoop.fs.s3a."


@dataclass(frozen=True)
class S3Settings:
    """How to reach one S3-compatible store. Empty fields: the library's default chain."""

    endpoint: str = ""  # with its scheme: http://127.0.0.1:9000
    access_key: str = ""
    secret_key: str = ""
    session_token: str = ""
    region: str = ""
    path_style: bool = True

    def __repr__(self) -> str:  # secrets never reach logs or error messages
        return f"S3Settings(endpoint={self.endpoint!r}, region={self.region!r})"

    @property
    def allow_http(self) -> bool:
        return self.endpoint.startswith("http://")


# bucket ("" = every bucket without its own entry) -> settings
_stores: dict[str, S3Settings] = {}
_lock = threading.Lock()
_loaded = False


def configure(settings: S3Settings, bucket: str = "") -> None:
    """Use ``settings`` for ``bucket`` (every bucket when empty) in this process."""
    with _lock:
        _stores[bucket] = settings


def for_bucket(bucket: str) -> S3Settings:
    _from_environment()
    return _stores.get(bucket) or _stores.get("") or S3Settings()


# The environment variable that carries the settings to Python workers. Spark ships it with
# every Python function and data source it runs (``SparkContext.environment``, as it ships
# ``spark.executorEnv.*``), to the driver's planning workers and to executors on any host.
ENVIRONMENT_VARIABLE = "HEADWATER_STORAGE_SETTINGS"


def encoded() -> str:
    """This process's settings, as :data:`ENVIRONMENT_VARIABLE` carries them."""
    with _lock:
        return json.dumps({bucket: asdict(s) for bucket, s in sorted(_stores.items())})


def _from_environment() -> None:
    """A worker's settings: the ones its driver shipped (read once, on first use)."""
    global _loaded
    with _lock:
        if _loaded:
            return
        _loaded = True
        text = os.environ.get(ENVIRONMENT_VARIABLE)
        if text:
            for bucket, fields in json.loads(text).items():
                _stores.setdefault(bucket, S3Settings(**fields))


def from_spark_conf(conf: Mapping[str, str]) -> dict[str, S3Settings]:
    """The S3 settings Spark's ``fs.s3a.*`` configuration gives, by bucket."""
    general = _settings(conf, _S3A, S3Settings())
    found = {"": general} if general != S3Settings() else {}
    buckets = {
        k[len(_S3A + "bucket.") :].split(".", 1)[0] for k in conf if k.startswith(_S3A + "bucket.")
    }
    for bucket in sorted(buckets):
        found[bucket] = _settings(conf, f"{_S3A}bucket.{bucket}.", general)
    return found


def _settings(conf: Mapping[str, str], prefix: str, base: S3Settings) -> S3Settings:
    def get(name: str) -> str | None:
        value = conf.get(prefix + name)
        return value.strip() if value is not None else None

    endpoint = get("endpoint")
    if endpoint is not None and endpoint and "://" not in endpoint:
        ssl = (get("connection.ssl.enabled") or "true").lower() != "false"
        endpoint = ("https://" if ssl else "http://") + endpoint
    path_style = get("path.style.access")
    return replace(
        base,
        endpoint=endpoint if endpoint is not None else base.endpoint,
        access_key=get("access.key") or base.access_key,
        secret_key=get("secret.key") or base.secret_key,
        session_token=get("session.token") or base.session_token,
        region=get("endpoint.region") or get("region") or base.region,
        path_style=base.path_style if path_style is None else path_style.lower() == "true",
    )


def delta_options(bucket: str) -> dict[str, str] | None:
    """delta-rs ``storage_options`` for ``bucket`` (None: delta-rs's own defaults)."""
    s = for_bucket(bucket)
    if s == S3Settings():
        return None
    options = {
        "AWS_ENDPOINT_URL": s.endpoint,
        "AWS_ACCESS_KEY_ID": s.access_key,
        "AWS_SECRET_ACCESS_KEY": s.secret_key,
        "AWS_SESSION_TOKEN": s.session_token,
        "AWS_REGION": s.region or "us-east-1",
        "AWS_ALLOW_HTTP": "true" if s.allow_http else "",
        "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false" if s.path_style else "true",
    }
    return {k: v for k, v in options.items() if v}
