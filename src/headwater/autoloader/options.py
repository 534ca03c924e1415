"""The options of the ``cloudFiles`` source, parsed once and validated by name.

``cloudFiles.*`` and the generic file-source options are Auto Loader's own and live here; the
format options (``header``, ``dateFormat``, ...) are parsed by the shared table of
:mod:`headwater.formats.options`, so each is honoured or refused exactly as in COPY INTO.
``cloudFiles.validateOptions`` (default true) makes an unknown or inconsistent option an
error that names it, because a misspelt option silently ignored is a stream that does the
wrong thing for months.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from headwater.errors import OptionError
from headwater.formats.options import FORMATS, CsvOptions, FormatOptions, parse_format_options
from headwater.options import as_bool, as_bytes, as_int, split_columns

PLANNED_FORMATS = ("xml",)
# Where a stream without cloudFiles.schemaLocation keeps its file state: set when the query
# starts, under its checkpoint (:mod:`headwater.autoloader.checkpoint_state`).
STATE_LOCATION_OPTION = "headwater.stateLocation"
_FORMAT_LIST = "json, csv, parquet, text, avro, orc or binaryFile"
EVOLUTION_MODES = ("addnewcolumns", "rescue", "failonnewcolumns", "none")

CLOUD_OPTIONS = {
    name.lower(): name
    for name in (
        "cloudFiles.format", "cloudFiles.schemaLocation", "cloudFiles.inferColumnTypes",
        "cloudFiles.schemaHints", "cloudFiles.schemaEvolutionMode",
        "cloudFiles.includeExistingFiles", "cloudFiles.allowOverwrites",
        "cloudFiles.maxFilesPerTrigger", "cloudFiles.maxBytesPerTrigger",
        "cloudFiles.partitionColumns", "cloudFiles.maxFileAge", "cloudFiles.cleanSource",
        "cloudFiles.cleanSource.retentionDuration", "cloudFiles.cleanSource.moveDestination",
        "cloudFiles.validateOptions", "cloudFiles.useNotifications",
        "cloudFiles.backfillInterval", "cloudFiles.useIncrementalListing",
    )
}  # fmt: skip
GENERIC_OPTIONS = {
    name.lower(): name
    for name in (
        "pathGlobFilter", "recursiveFileLookup", "modifiedAfter", "modifiedBefore",
        "ignoreCorruptFiles", "ignoreMissingFiles", "rescuedDataColumn", "path",
        "headwater.fileMetadataColumn", "headwater.hiddenFileMetadata", "headwater.stateLocation",
    )
}  # fmt: skip

_DURATION = re.compile(
    r"^\s*(\d+)\s*(ms|milliseconds?|s|seconds?|m|minutes?|h|hours?|d|days?|w|weeks?)\s*$", re.I
)
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}


def duration_ms(text: str | None, name: str) -> int | None:
    """``"30 days"``, ``"1h"``, ``"500 ms"`` as milliseconds."""
    if text is None:
        return None
    m = _DURATION.match(str(text))
    if not m:
        raise OptionError(
            f"Option '{name}' must be a duration such as '30 days' or '12 hours', not '{text}'."
        )
    unit = m.group(2).lower()
    key = "ms" if unit.startswith("milli") or unit == "ms" else unit[0]
    return int(m.group(1)) * _UNIT_MS[key]


def _incremental(value: str | None) -> str:
    text = str(value if value is not None else "auto").strip().lower()
    if text not in ("auto", "true", "false"):
        raise OptionError(
            f"Option 'cloudFiles.useIncrementalListing' must be auto, true or false, not '{value}'."
        )
    return text


@dataclass
class CloudFilesOptions:
    format: str
    schema_location: str | None
    format_options: FormatOptions
    infer_column_types: bool = False
    schema_hints: str | None = None
    evolution_mode: str = "addnewcolumns"
    include_existing: bool = True
    allow_overwrites: bool = False
    max_files: int | None = 1000
    max_bytes: int | None = None
    partition_columns: list[str] | None = None  # None: infer from k=v directories
    max_file_age_ms: int | None = None
    # cloudFiles.useIncrementalListing: auto | true | false; cloudFiles.backfillInterval:
    # how often a full listing runs anyway (catches files that landed out of name order).
    incremental_listing: str = "auto"
    backfill_interval_ms: int | None = None
    # cloudFiles.useNotifications: file events on local and mounted folders wake the stream
    # (headwater.autoloader.notifications); object stores keep listing.
    use_notifications: bool = False
    clean_source: str = "off"
    clean_retention_ms: int = 30 * 86_400_000
    move_destination: str | None = None
    glob: str | None = None
    recursive: bool = False
    modified_after: str | None = None
    modified_before: str | None = None
    ignore_corrupt: bool = False
    ignore_missing: bool = False
    rescue_column: str | None = None
    rescue_column_given: bool = False
    # headwater.fileMetadataColumn: a struct column naming each row's source file, as
    # Spark's hidden ``_metadata`` column does for file sources (a Python source has none).
    file_metadata_column: str | None = None
    # headwater.hiddenFileMetadata (set by the reader hook): the rows end with Spark's
    # hidden ``_metadata`` column (headwater.autoloader.file_metadata).
    hidden_file_metadata: bool = False
    # headwater.stateLocation: ``<checkpoint>/sources/<n>`` of the query reading a stream
    # that has no schemaLocation (its schema given, or binaryFile's), bound at its start.
    state_location: str | None = None

    @property
    def location(self) -> str:
        """``cloudFiles.schemaLocation``: the schema versions (parse makes it required
        unless the schema is known without inference; a listing-only instance, as COPY INTO
        builds, has none)."""
        if not self.schema_location:
            raise OptionError("Option 'cloudFiles.schemaLocation' is required.")
        return self.schema_location

    @property
    def file_state_location(self) -> str:
        """Where the file state lives: the schema location when there is one (as before),
        else under the checkpoint of the query reading the stream, as on the known
        platform."""
        found = self.schema_location or self.state_location
        if not found:
            raise OptionError(
                "The cloudFiles stream has no cloudFiles.schemaLocation, so it keeps its file "
                "state in its query's checkpoint, which is not known here: start it with "
                "df.writeStream.option('checkpointLocation', ...).start() or .toTable(), or "
                "set cloudFiles.schemaLocation."
            )
        return found

    @classmethod
    def parse(cls, options: Mapping[str, str], user_schema: bool) -> CloudFilesOptions:
        o = {str(k).lower(): v for k, v in options.items() if v is not None}
        fmt = str(o.get("cloudfiles.format", "")).lower()
        if not fmt:
            raise OptionError(f"Option 'cloudFiles.format' is required ({_FORMAT_LIST}).")
        if fmt in PLANNED_FORMATS:
            raise OptionError(
                f"cloudFiles.format '{fmt}' is not supported yet; use {_FORMAT_LIST}."
            )
        if fmt not in FORMATS:
            raise OptionError(
                f"Unknown cloudFiles.format '{fmt}'; use one of {', '.join(FORMATS)}."
            )
        rescue_given = "rescueddatacolumn" in o
        validate = as_bool(o.get("cloudfiles.validateoptions"), "cloudFiles.validateOptions", True)
        fmt_opts = parse_format_options(
            fmt, options, own={**CLOUD_OPTIONS, **GENERIC_OPTIONS}, strict=validate,
            context="the cloudFiles source", label=f"cloudFiles.format '{fmt}'",
        )  # fmt: skip
        if user_schema and isinstance(fmt_opts, CsvOptions) and "header" not in o:
            # Spark's default; the known platform assumes a header only to infer a schema
            fmt_opts = replace(fmt_opts, header=False)
        if validate and fmt == "binaryfile" and rescue_given:
            raise OptionError(
                "Option 'rescuedDataColumn' does not apply to cloudFiles.format 'binaryFile': "
                "its rows (path, modificationTime, length, content) never hold a misfit."
            )
        mode = str(
            o.get("cloudfiles.schemaevolutionmode", "none" if user_schema else "addNewColumns")
        ).lower()
        if mode not in EVOLUTION_MODES:
            raise OptionError(
                f"Option 'cloudFiles.schemaEvolutionMode' must be one of addNewColumns, rescue, "
                f"failOnNewColumns, none; not '{o['cloudfiles.schemaevolutionmode']}'."
            )
        if user_schema and mode == "addnewcolumns":
            raise OptionError(
                "cloudFiles.schemaEvolutionMode 'addNewColumns' cannot be used with a schema given "
                "by .schema(); use rescue or none, or drop .schema() and let Auto Loader infer it."
            )
        location = o.get("cloudfiles.schemalocation")
        if not location and not user_schema and fmt != "binaryfile":
            raise OptionError(
                "Option 'cloudFiles.schemaLocation' is required to infer the schema: it holds the "
                "inferred schema and the stream's file-discovery state (it may be the checkpoint "
                "directory). With a schema given by .schema(...), the file state is kept in the "
                "query's checkpoint instead."
            )
        clean = str(o.get("cloudfiles.cleansource", "off")).lower()
        if clean not in ("off", "delete", "move"):
            raise OptionError(
                f"Option 'cloudFiles.cleanSource' must be OFF, DELETE or MOVE, not '{clean}'."
            )
        move_dest = o.get("cloudfiles.cleansource.movedestination")
        if clean == "move" and not move_dest:
            raise OptionError(
                "cloudFiles.cleanSource=MOVE needs 'cloudFiles.cleanSource.moveDestination'."
            )
        rescue = (
            o.get("rescueddatacolumn")
            if rescue_given
            # a given schema has none unless asked, but rescue mode keeps what does not fit
            else (
                None
                if (user_schema and mode != "rescue") or fmt == "binaryfile"
                else "_rescued_data"
            )
        )
        parts = o.get("cloudfiles.partitioncolumns")
        return cls(
            format=fmt,
            schema_location=location,
            infer_column_types=as_bool(
                o.get("cloudfiles.infercolumntypes"), "cloudFiles.inferColumnTypes"
            ),
            schema_hints=o.get("cloudfiles.schemahints"),
            evolution_mode=mode,
            include_existing=as_bool(
                o.get("cloudfiles.includeexistingfiles"), "cloudFiles.includeExistingFiles", True
            ),
            allow_overwrites=as_bool(
                o.get("cloudfiles.allowoverwrites"), "cloudFiles.allowOverwrites"
            ),
            max_files=as_int(
                o.get("cloudfiles.maxfilespertrigger"), "cloudFiles.maxFilesPerTrigger", 1000
            ),
            max_bytes=as_bytes(
                o.get("cloudfiles.maxbytespertrigger"), "cloudFiles.maxBytesPerTrigger"
            ),
            partition_columns=None if parts is None else split_columns(parts),
            max_file_age_ms=duration_ms(o.get("cloudfiles.maxfileage"), "cloudFiles.maxFileAge"),
            incremental_listing=_incremental(o.get("cloudfiles.useincrementallisting")),
            backfill_interval_ms=duration_ms(
                o.get("cloudfiles.backfillinterval"), "cloudFiles.backfillInterval"
            ),
            use_notifications=as_bool(
                o.get("cloudfiles.usenotifications"), "cloudFiles.useNotifications"
            ),
            clean_source=clean,
            clean_retention_ms=duration_ms(
                o.get("cloudfiles.cleansource.retentionduration", "30 days"),
                "cloudFiles.cleanSource.retentionDuration",
            )
            or 0,
            move_destination=move_dest,
            glob=o.get("pathglobfilter"),
            recursive=as_bool(o.get("recursivefilelookup"), "recursiveFileLookup"),
            modified_after=o.get("modifiedafter"),
            modified_before=o.get("modifiedbefore"),
            ignore_corrupt=as_bool(o.get("ignorecorruptfiles"), "ignoreCorruptFiles"),
            ignore_missing=as_bool(o.get("ignoremissingfiles"), "ignoreMissingFiles"),
            rescue_column=rescue or None,
            rescue_column_given=rescue_given,
            file_metadata_column=o.get("headwater.filemetadatacolumn") or None,
            hidden_file_metadata=as_bool(
                o.get("headwater.hiddenfilemetadata"), "headwater.hiddenFileMetadata"
            ),
            format_options=fmt_opts,
            state_location=o.get(STATE_LOCATION_OPTION.lower()) or None,
        )
