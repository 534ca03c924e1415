"""The options the ``delta`` format accepts, parsed once, with unknown names refused.

Names are case-insensitive, as in Spark. A misspelt option is an error naming it (and the
closest known name), because a silently ignored ``mergeSchema`` loses a schema change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pyspark.sql import Column, SparkSession

from headwater.errors import OptionError
from headwater.options import as_bool, as_int, split_columns, unknown_option

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
    # delta-spark keeps the source's schema history there to continue past a rename or
    # drop; headwater stops the stream at such a change and reads the new schema on
    # restart, so it needs no such record: accepted, nothing is written there.
    "schematrackinglocation",
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
    "datachange",
    "checkpointlocation",
    "queryname",
}


# Older names delta-spark still accepts for the same option.
_ALIASES = {"readchangedata": "readchangefeed"}


def check_known(options: Mapping[str, str], known: set[str], context: str) -> dict[str, str]:
    """Lower-cased copy of ``options`` (aliases under their current name); raises
    :class:`OptionError` on an unknown name."""
    lowered = {}
    for k, v in options.items():
        key = str(k).lower()
        alias = _ALIASES.get(key)
        lowered[alias if alias in known else key] = v
    for key in lowered:
        if key in known or key in _SPARK_INTERNAL:
            continue
        given = next(str(k) for k in options if str(k).lower() == key)
        raise unknown_option(given, known, context, _CANONICAL)
    return lowered


_CANONICAL = {
    k.lower(): k
    for k in [
        "versionAsOf", "timestampAsOf", "startingVersion", "startingTimestamp",
        "maxFilesPerTrigger", "maxBytesPerTrigger", "skipChangeCommits", "ignoreDeletes",
        "ignoreChanges", "mergeSchema", "overwriteSchema", "replaceWhere", "partitionBy",
        "userMetadata", "compression", "maxRecordsPerFile", "txnAppId", "txnVersion",
        "checkpointLocation", "queryName", "schemaTrackingLocation", "dataChange",
    ]
}  # fmt: skip


SaveMode = Literal["append", "overwrite", "error", "ignore"]
_SAVE_MODES: dict[str, SaveMode] = {
    "append": "append",
    "overwrite": "overwrite",
    "error": "error",
    "errorifexists": "error",
    "default": "error",
    "ignore": "ignore",
}


AUTO_MERGE = "spark.databricks.delta.schema.autoMerge.enabled"


def auto_merge(spark: SparkSession) -> bool:
    """The session's ``spark.databricks.delta.schema.autoMerge.enabled``: writes and MERGE
    add the data's new columns as if ``mergeSchema`` / ``WITH SCHEMA EVOLUTION`` were
    given, as delta-spark does."""
    return str(spark.conf.get(AUTO_MERGE, "false")).strip().lower() == "true"


def save_mode(mode: str | None) -> SaveMode:
    """A save mode as PySpark users spell it (``errorifexists``, ``Append``, ...)."""
    found = _SAVE_MODES.get((mode or "errorifexists").lower())
    if found is None:
        raise OptionError(
            f"Unknown save mode '{mode}'. Use append, overwrite, errorifexists or ignore."
        )
    return found


@dataclass(frozen=True)
class WriteSpec:
    """One batch write into a Delta table, typed: what ``df.write`` options, SQL statements
    and the service API all reduce to.

    ``txn`` is ``(app_id, version)``: a write whose application already recorded that
    version is skipped. ``configuration`` and ``description`` apply when the write creates
    the table or replaces its schema.
    """

    mode: SaveMode = "error"
    merge_schema: bool = False
    overwrite_schema: bool = False
    replace_where: str | None = None
    partition_by: tuple[str, ...] = ()
    user_metadata: str | None = None
    compression: str = "snappy"
    max_records_per_file: int | None = None
    txn: tuple[str, int] | None = None
    configuration: Mapping[str, str] | None = None
    description: str | None = None
    # saveAsTable: a commit creating or replacing the table is logged as
    # CREATE [OR REPLACE] TABLE AS SELECT, as delta-spark logs it (else WRITE).
    as_table: bool = False
    cluster_by: tuple[str, ...] | None = None  # liquid clustering (df.write.clusterBy)
    # dataChange=false: the write only rearranges rows already there (a compaction by
    # hand); its files are logged so, and streams reading the table skip the commit.
    data_change: bool = True

    @classmethod
    def from_options(
        cls,
        options: Mapping[str, str],
        mode: str | None = None,
        partition_by: Sequence[str] | None = None,
    ) -> WriteSpec:
        """The spec of ``df.write.format("delta").mode(mode).options(**options)``; unknown
        option names are refused, naming the closest known one."""
        o = check_known(options, WRITE_OPTIONS, "the delta writer")
        app_id, version = o.get("txnappid"), as_int(o.get("txnversion"), "txnVersion")
        if (app_id is None) != (version is None):
            raise OptionError("Options txnAppId and txnVersion must be given together.")
        return cls(
            mode=save_mode(mode),
            merge_schema=as_bool(o.get("mergeschema"), "mergeSchema"),
            overwrite_schema=as_bool(o.get("overwriteschema"), "overwriteSchema"),
            replace_where=o.get("replacewhere"),
            partition_by=tuple(partition_by or split_columns(o.get("partitionby"))),
            user_metadata=o.get("usermetadata"),
            compression=o.get("compression", "snappy"),
            max_records_per_file=as_int(o.get("maxrecordsperfile"), "maxRecordsPerFile"),
            txn=None if app_id is None or version is None else (app_id, version),
            data_change=as_bool(o.get("datachange"), "dataChange", default=True),
        )


def with_time_travel(
    options: Mapping[str, str] | None, version: int | None, timestamp: str | None
) -> dict[str, str]:
    """The ``delta`` reader's options for a read at ``version`` or ``timestamp`` (either
    engine's reader takes the same names)."""
    opts = {str(k): str(v) for k, v in (options or {}).items()}
    if version is not None:
        opts["versionAsOf"] = str(version)
    if timestamp is not None:
        opts["timestampAsOf"] = str(timestamp)
    return opts


OutputMode = Literal["append", "complete"]


def output_mode(mode: str | None) -> OutputMode:
    text = (mode or "append").lower()
    if text not in ("append", "complete"):
        raise OptionError(
            f"[DELTA_UNSUPPORTED_OUTPUT_MODE] Output mode '{mode}' is not supported by the "
            "delta sink; use 'append', or 'complete' (the table is replaced by the full "
            "result each batch)."
        )
    return "complete" if text == "complete" else "append"


def sink_spec(options: Mapping[str, str], partition_by: list[str] | None) -> WriteSpec:
    """The write options of ``writeStream.format("delta")`` (``checkpointLocation`` and
    ``path`` are the stream's own)."""
    kept = {k: v for k, v in options.items() if k.lower() not in ("checkpointlocation", "path")}
    return WriteSpec.from_options(kept, "append", partition_by)


def condition_text(condition: str | Column | None) -> str | None:
    """The SQL text of a condition (PySpark shows a Column as ``Column<'...'>``)."""
    if condition is None:
        return None
    if isinstance(condition, str):
        return condition
    text = str(condition)
    if text.startswith("Column<'") and text.endswith("'>"):
        return text[len("Column<'") : -2]
    return None
