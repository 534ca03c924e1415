"""The options the ``delta`` format accepts, parsed once, with unknown names refused.

Names are case-insensitive, as in Spark. A misspelt option is an error naming it (and the
closest known name), because a silently ignored ``mergeSchema`` loses a schema change.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field

from headwater.errors import OptionError

# Options Spark itself adds to every source's option map, and our internal ones.
_SPARK_INTERNAL = {"path", "paths", "__path__", "headwater.filepathcolumn"}

CHANGE_FEED_OPTIONS = {
    "readchangefeed",
    "startingversion",
    "startingtimestamp",
    "endingversion",
    "endingtimestamp",
}
READ_OPTIONS = {"versionasof", "timestampasof", *CHANGE_FEED_OPTIONS}
STREAM_READ_OPTIONS = {
    "readchangefeed",
    "startingversion",
    "startingtimestamp",
    "maxfilespertrigger",
    "maxbytespertrigger",
    "skipchangecommits",
    "ignoredeletes",
    "ignorechanges",
}
WRITE_OPTIONS = {
    "mergeschema",
    "overwriteschema",
    "replacewhere",
    "partitionby",
    "usermetadata",
    "compression",
    "maxrecordsperfile",
    "txnappid",
    "txnversion",
    "checkpointlocation",
    "queryname",
}


def check_known(options: Mapping[str, str], known: set[str], context: str) -> dict[str, str]:
    """Lower-cased copy of ``options``; raises :class:`OptionError` on an unknown name."""
    lowered = {str(k).lower(): v for k, v in options.items()}
    for key in lowered:
        if key in known or key in _SPARK_INTERNAL:
            continue
        original = next(k for k in options if str(k).lower() == key)
        hint = difflib.get_close_matches(key, sorted(known), n=1)
        suggestion = ""
        if hint:
            suggestion = f" Did you mean '{_CANONICAL.get(hint[0], hint[0])}'?"
        raise OptionError(
            f"Unknown option '{original}' for {context}.{suggestion} "
            f"Known options: {', '.join(sorted(_CANONICAL.get(k, k) for k in known))}."
        )
    return lowered


_CANONICAL = {
    k.lower(): k
    for k in [
        "versionAsOf", "timestampAsOf", "startingVersion", "startingTimestamp",
        "maxFilesPerTrigger", "maxBytesPerTrigger", "skipChangeCommits", "ignoreDeletes",
        "ignoreChanges", "mergeSchema", "overwriteSchema", "replaceWhere", "partitionBy",
        "userMetadata", "compression", "maxRecordsPerFile", "txnAppId", "txnVersion",
        "checkpointLocation", "queryName",
    ]
}  # fmt: skip


def as_bool(value: str | bool | None, name: str, default: bool = False) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise OptionError(f"Option '{name}' must be true or false, not '{value}'.")


def as_int(value: str | int | None, name: str, default: int | None = None) -> int | None:
    if value is None:
        return default
    try:
        number = int(str(value).strip())
    except ValueError:
        raise OptionError(f"Option '{name}' must be an integer, not '{value}'.") from None
    if number < 0:
        raise OptionError(f"Option '{name}' must not be negative, not {number}.")
    return number


_SIZE_UNITS = {
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "g": 1024**3,
    "gb": 1024**3,
}


def as_bytes(value: str | int | None, name: str) -> int | None:
    """A byte size: ``1048576``, ``10m``, ``1g``."""
    if value is None:
        return None
    text = str(value).strip().lower()
    digits = text.rstrip("bkmgt")
    unit = text[len(digits) :] or "b"
    if not digits.isdigit() or unit not in _SIZE_UNITS:
        raise OptionError(
            f"Option '{name}' must be a byte size such as 1048576, 10m or 1g, not '{value}'."
        )
    return int(digits) * _SIZE_UNITS[unit]


def split_columns(value: str | list[str] | None) -> list[str]:
    if not value:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    text = str(value).strip()
    if text.startswith("["):
        import json

        return [str(v) for v in json.loads(text)]
    return [c.strip().strip("`") for c in text.split(",") if c.strip()]


@dataclass
class WriteOptions:
    merge_schema: bool = False
    overwrite_schema: bool = False
    replace_where: str | None = None
    partition_by: list[str] = field(default_factory=list)
    user_metadata: str | None = None
    compression: str = "snappy"
    max_records_per_file: int | None = None
    txn_app_id: str | None = None
    txn_version: int | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> WriteOptions:
        o = check_known(options, WRITE_OPTIONS, "the delta writer")
        app_id, version = o.get("txnappid"), as_int(o.get("txnversion"), "txnVersion")
        if (app_id is None) != (version is None):
            raise OptionError("Options txnAppId and txnVersion must be given together.")
        return cls(
            merge_schema=as_bool(o.get("mergeschema"), "mergeSchema"),
            overwrite_schema=as_bool(o.get("overwriteschema"), "overwriteSchema"),
            replace_where=o.get("replacewhere"),
            partition_by=split_columns(o.get("partitionby")),
            user_metadata=o.get("usermetadata"),
            compression=o.get("compression", "snappy"),
            max_records_per_file=as_int(o.get("maxrecordsperfile"), "maxRecordsPerFile"),
            txn_app_id=app_id,
            txn_version=version,
        )
