"""What one COPY INTO asks for, checked before anything is read or written.

Every argument of :func:`headwater.copyinto.copy_into` is validated here, so bad input fails
fast with an error naming the clause or option at fault (and the closest known option name
for a misspelling), and no file is touched. The result, :class:`CopySpec`, holds plain
values only: it is what the planner, the executors and the load record work from.

FORMAT_OPTIONS are Spark's reader options. Those headwater's readers honour are accepted;
Spark options they would silently ignore (``dateFormat``, ``nullValue``, ...) are refused by
name, because an option that is accepted and does nothing loads wrong data quietly.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field

from headwater import storage
from headwater.autoloader.options import FORMATS
from headwater.errors import OptionError
from headwater.options import as_bool

MAX_FILES = 1000
MODES = ("failfast", "permissive", "dropmalformed")

# Options every format takes (lower case).
GENERIC = {
    "ignorecorruptfiles", "ignoremissingfiles", "rescueddatacolumn", "mode", "pathglobfilter",
    "modifiedafter", "modifiedbefore", "recursivefilelookup", "mergeschema",
}  # fmt: skip
# Format options headwater's readers honour, per format.
BY_FORMAT = {
    "csv": {"header", "sep", "delimiter", "quote", "escape", "multiline", "encoding", "charset",
            "inferschema"},
    "json": {"multiline", "encoding", "charset", "inferschema", "primitivesasstring"},
    "parquet": set(),
    "avro": {"avroschema"},
    "orc": set(),
    "text": {"encoding"},
    "binaryfile": set(),
}  # fmt: skip
# Spark reader options headwater's readers do not implement yet: refused by name.
NOT_IMPLEMENTED = {
    "dateformat", "timestampformat", "timestampntzformat", "nullvalue", "emptyvalue",
    "nanvalue", "positiveinf", "negativeinf", "comment", "ignoreleadingwhitespace",
    "ignoretrailingwhitespace", "columnnameofcorruptrecord", "linesep", "enforceschema",
    "allowcomments", "allowsinglequotes", "allowunquotedfieldnames", "allownumericleadingzeros",
    "allowbackslashescapingallcharacters", "allowunquotedcontrolchars", "prefersdecimal",
    "samplingratio", "dropfieldifallnull", "wholetext", "datetimerebasemode", "int96rebasemode",
    "maxcolumns", "maxcharspercolumn", "unescapedquotehandling", "locale", "inferTimestamp".lower(),
}  # fmt: skip
COPY_OPTIONS = {"force", "mergeschema"}
_CANONICAL = {
    k.lower(): k
    for k in [
        "ignoreCorruptFiles", "ignoreMissingFiles", "rescuedDataColumn", "mode",
        "pathGlobFilter", "modifiedAfter", "modifiedBefore", "recursiveFileLookup",
        "mergeSchema", "header", "sep", "delimiter", "quote", "escape", "multiLine", "encoding",
        "charset", "inferSchema", "primitivesAsString", "avroSchema", "force",
    ]
}  # fmt: skip


class CopyIntoError(OptionError):
    """A COPY INTO statement that cannot run as written (names the clause or option)."""


@dataclass(frozen=True)
class CopySpec:
    """One COPY INTO, validated. ``reader_options`` are the format options the readers take
    (lower-case keys, CSV ``header`` defaulted to false as in Spark)."""

    format: str
    source: str
    select: tuple[str, ...] | None = None
    columns: tuple[str, ...] | None = None
    by_position: bool = False
    files: tuple[str, ...] | None = None
    pattern: str | None = None
    reader_options: dict[str, str] = field(default_factory=dict)
    force: bool = False
    merge_schema: bool = False
    validate: str | int | None = None  # None, "all", or a row count
    infer_types: bool = True  # JSON/CSV columns typed (else strings) when inferred
    rescue_column: str | None = None
    mode: str = "failfast"
    ignore_corrupt: bool = False
    ignore_missing: bool = False
    glob: str | None = None
    modified_after: str | None = None
    modified_before: str | None = None
    format_options: dict[str, str] = field(default_factory=dict)  # as given, for history

    @property
    def positional(self) -> bool:
        """Source columns map to target columns by position (headerless CSV)."""
        header = self.reader_options.get("header", "false").lower() == "true"
        return self.format == "csv" and not header and (self.by_position or bool(self.columns))


def parse(
    source: str,
    file_format: str,
    *,
    select: list[str] | None = None,
    columns: list[str] | None = None,
    by_position: bool = False,
    files: list[str] | None = None,
    pattern: str | None = None,
    format_options: Mapping[str, str] | None = None,
    copy_options: Mapping[str, str] | None = None,
    validate: str | int | None = None,
) -> CopySpec:
    fmt = _format(file_format)
    if not source or not str(source).strip():
        raise CopyIntoError("COPY INTO needs a source path: FROM '/path/to/files'.")
    if files is not None and pattern is not None:
        raise CopyIntoError(
            "FILES and PATTERN cannot be used together: list the files, or give a pattern."
        )
    if files is not None:
        files = [str(f) for f in files]
        if not files:
            raise CopyIntoError("FILES = () lists no file; name at least one, or drop FILES.")
        if len(files) > MAX_FILES:
            raise CopyIntoError(
                f"FILES lists {len(files)} files; at most {MAX_FILES} are allowed. Use PATTERN, "
                "or split the load into several COPY INTO statements."
            )
        if any(not f.strip() for f in files):
            raise CopyIntoError("FILES holds an empty file name.")
    if pattern is not None and not str(pattern).strip():
        raise CopyIntoError("PATTERN = '' matches nothing; give a glob such as '*.json'.")
    if select is not None:
        select = [str(s) for s in select]
        if not select or any(not s.strip() for s in select):
            raise CopyIntoError("The SELECT list of COPY INTO ... FROM (SELECT ...) is empty.")
    if columns is not None:
        columns = [str(c).strip().strip("`") for c in columns]
        if not columns or any(not c for c in columns):
            raise CopyIntoError("The column list of COPY INTO t (...) is empty.")
        lowered = [c.lower() for c in columns]
        dupes = sorted({c for c in lowered if lowered.count(c) > 1})
        if dupes:
            raise CopyIntoError(f"The column list names {', '.join(dupes)} more than once.")
    if by_position and columns:
        raise CopyIntoError("Give either BY POSITION or a column list, not both.")
    if select is not None and (by_position or columns):
        raise CopyIntoError(
            "A column list or BY POSITION cannot be combined with FROM (SELECT ...); name the "
            "target columns in the SELECT list (expr AS column) instead."
        )

    fopts = _check_format_options(format_options or {}, fmt)
    copts = _check_names(copy_options or {}, COPY_OPTIONS, "COPY_OPTIONS")
    header = fopts.get("header", "false")
    _bool(header, "header")
    if by_position and (fmt != "csv" or header.lower() == "true"):
        raise CopyIntoError(
            "BY POSITION applies to headerless CSV files only (FILEFORMAT = CSV without "
            "FORMAT_OPTIONS('header'='true')); other sources are matched by column name."
        )
    mode = str(fopts.get("mode", "failfast")).lower()
    if mode not in MODES:
        raise CopyIntoError(
            f"FORMAT_OPTIONS 'mode' must be FAILFAST, PERMISSIVE or DROPMALFORMED, not '{fopts['mode']}'."
        )
    rescue = fopts.get("rescueddatacolumn") or None
    if rescue is not None and fmt == "binaryfile":
        raise CopyIntoError(
            "FORMAT_OPTIONS 'rescuedDataColumn' does not apply to FILEFORMAT = BINARYFILE: its "
            "rows (path, modificationTime, length, content) never hold a misfit."
        )
    if rescue is not None and "mode" in fopts:
        raise CopyIntoError(
            "Give either FORMAT_OPTIONS 'rescuedDataColumn' (misfits are kept in that column) or "
            "'mode', not both."
        )
    reader = {k: str(v) for k, v in fopts.items() if k in BY_FORMAT[fmt]}
    if "charset" in reader:
        reader.setdefault("encoding", reader.pop("charset"))
    if fmt == "csv":
        reader["header"] = header
    infer = _bool(fopts.get("inferschema"), "inferSchema", default=fmt != "csv")
    if _bool(fopts.get("primitivesasstring"), "primitivesAsString"):
        infer = False
    for key in ("multiline", "recursivefilelookup", "mergeschema"):
        _bool(fopts.get(key), key)
    return CopySpec(
        format=fmt,
        source=storage.normalize(str(source).strip()),
        select=tuple(select) if select is not None else None,
        columns=tuple(columns) if columns is not None else None,
        by_position=bool(by_position),
        files=tuple(files) if files is not None else None,
        pattern=str(pattern).strip() if pattern is not None else None,
        reader_options=reader,
        force=_bool(copts.get("force"), "force"),
        merge_schema=_bool(copts.get("mergeschema"), "mergeSchema"),
        validate=_validate(validate),
        infer_types=infer,
        rescue_column=rescue,
        mode=mode,
        ignore_corrupt=_bool(fopts.get("ignorecorruptfiles"), "ignoreCorruptFiles"),
        ignore_missing=_bool(fopts.get("ignoremissingfiles"), "ignoreMissingFiles"),
        glob=fopts.get("pathglobfilter"),
        modified_after=fopts.get("modifiedafter"),
        modified_before=fopts.get("modifiedbefore"),
        format_options={str(k): str(v) for k, v in (format_options or {}).items()},
    )


def _bool(value: str | bool | None, name: str, default: bool = False) -> bool:
    try:
        return as_bool(value, name, default)
    except OptionError as e:
        raise CopyIntoError(str(e)) from None


def _format(file_format: str) -> str:
    fmt = str(file_format or "").strip().lower()
    if fmt not in FORMATS:
        names = "CSV, JSON, PARQUET, AVRO, ORC, TEXT or BINARYFILE"
        hint = difflib.get_close_matches(fmt, FORMATS, n=1, cutoff=0.6)
        raise CopyIntoError(
            f"Unknown FILEFORMAT '{file_format}'; use {names}."
            + (f" Did you mean {hint[0].upper()}?" if hint else "")
        )
    return fmt


def _validate(value: str | int | None) -> str | int | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise CopyIntoError(f"VALIDATE takes ALL or a number of rows, not {value!r}.")
    text = str(value).strip().lower()
    if text == "all":
        return "all"
    if text.endswith("rows"):
        text = text[:-4].strip()
    if text.isdigit() and int(text) > 0:
        return int(text)
    raise CopyIntoError(f"VALIDATE takes ALL or a positive number of rows, not {value!r}.")


def _check_format_options(options: Mapping[str, str], fmt: str) -> dict[str, str]:
    lowered = {str(k).lower(): v for k, v in options.items() if v is not None}
    known = GENERIC | BY_FORMAT[fmt]
    every = GENERIC | set().union(*BY_FORMAT.values())
    for key in lowered:
        original = next(k for k in options if str(k).lower() == key)
        if key in known:
            continue
        if key in every:
            raise CopyIntoError(
                f"FORMAT_OPTIONS '{original}' does not apply to FILEFORMAT = {fmt.upper()}."
            )
        if key in NOT_IMPLEMENTED:
            raise CopyIntoError(
                f"FORMAT_OPTIONS '{original}' is a Spark reader option headwater's COPY INTO does "
                "not implement yet; remove it (values are read in Spark's default form: ISO-8601 "
                "dates and timestamps, empty CSV values as null)."
            )
    return _check_names(lowered, known, f"FORMAT_OPTIONS of FILEFORMAT = {fmt.upper()}")


def _check_names(options: Mapping[str, str], known: set[str], context: str) -> dict[str, str]:
    lowered = {str(k).lower(): v for k, v in options.items() if v is not None}
    for key in lowered:
        if key in known:
            continue
        original = next(k for k in options if str(k).lower() == key)
        hint = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
        names = ", ".join(sorted(_CANONICAL.get(k, k) for k in known))
        raise CopyIntoError(
            f"Unknown option '{original}' in {context}."
            + (f" Did you mean '{_CANONICAL.get(hint[0], hint[0])}'?" if hint else "")
            + f" Known options: {names}."
        )
    return lowered
