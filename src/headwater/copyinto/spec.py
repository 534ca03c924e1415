"""What one COPY INTO asks for, checked before anything is read or written.

Every argument of :func:`headwater.copyinto.copy_into` is validated here, so bad input fails
fast with an error naming the clause or option at fault (and the closest known option name
for a misspelling), and no file is touched. The result, :class:`CopySpec`, holds plain
values only: it is what the planner, the executors and the load record work from.

FORMAT_OPTIONS are Spark's reader options, parsed by the option table of each format
(:mod:`headwater.formats.options`), the same one Auto Loader uses: an option is honoured by
the readers or refused by name (saying what happens instead), because an option that is
accepted and does nothing loads wrong data quietly. The generic file-source options and
``rescuedDataColumn`` are COPY INTO's own and are parsed here.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from headwater import storage
from headwater.errors import OptionError
from headwater.formats.options import (
    FORMATS,
    CsvOptions,
    FormatOptions,
    RecordText,
    parse_format_options,
)
from headwater.options import as_bool, unknown_option

MAX_FILES = 1000

# FORMAT_OPTIONS every format takes, besides the format's own (lower case -> spelling).
GENERIC = {
    name.lower(): name
    for name in (
        "ignoreCorruptFiles", "ignoreMissingFiles", "rescuedDataColumn", "pathGlobFilter",
        "modifiedAfter", "modifiedBefore", "recursiveFileLookup",
    )
}  # fmt: skip
COPY_OPTIONS = {"force": "force", "mergeschema": "mergeSchema"}


class CopyIntoError(OptionError):
    """A COPY INTO statement that cannot run as written (names the clause or option)."""


@dataclass(frozen=True)
class CopySpec:
    """One COPY INTO, validated. ``reader_options`` are the typed format options the readers
    take (CSV ``header`` defaulted to false, as in Spark)."""

    format: str
    source: str
    reader_options: FormatOptions
    select: tuple[str, ...] | None = None
    columns: tuple[str, ...] | None = None
    by_position: bool = False
    files: tuple[str, ...] | None = None
    pattern: str | None = None
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
    recursive: bool = False
    format_options: dict[str, str] = field(default_factory=dict)  # as given, for history

    @property
    def headerless_csv(self) -> bool:
        return isinstance(self.reader_options, CsvOptions) and not self.reader_options.header

    @property
    def positional(self) -> bool:
        """Source columns map to target columns by position (headerless CSV)."""
        return self.headerless_csv and (self.by_position or bool(self.columns))


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

    given = {str(k): v for k, v in (format_options or {}).items() if v is not None}
    fopts = {k.lower(): str(v) for k, v in given.items()}
    label = f"FILEFORMAT = {fmt.upper()}"
    try:
        reader = parse_format_options(
            fmt, given, own=GENERIC, context=f"FORMAT_OPTIONS of {label}", label=label
        )
    except OptionError as e:
        raise CopyIntoError(str(e)) from None
    if isinstance(reader, CsvOptions) and "header" not in fopts:
        reader = replace(reader, header=False)  # Spark's default; Auto Loader assumes one
    copts = _check_names(copy_options or {}, COPY_OPTIONS, "COPY_OPTIONS")
    if by_position and not (isinstance(reader, CsvOptions) and not reader.header):
        raise CopyIntoError(
            "BY POSITION applies to headerless CSV files only (FILEFORMAT = CSV without "
            "FORMAT_OPTIONS('header'='true')); other sources are matched by column name."
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
    infer = reader.infer_schema if isinstance(reader, RecordText) else None
    infer = fmt != "csv" if infer is None else infer
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
        mode=reader.mode or "failfast",
        ignore_corrupt=_bool(fopts.get("ignorecorruptfiles"), "ignoreCorruptFiles"),
        ignore_missing=_bool(fopts.get("ignoremissingfiles"), "ignoreMissingFiles"),
        glob=fopts.get("pathglobfilter"),
        modified_after=fopts.get("modifiedafter"),
        modified_before=fopts.get("modifiedbefore"),
        recursive=_bool(fopts.get("recursivefilelookup"), "recursiveFileLookup"),
        format_options={k: str(v) for k, v in given.items()},
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


def _check_names(
    options: Mapping[str, str], known: Mapping[str, str], context: str
) -> dict[str, str]:
    lowered = {str(k).lower(): v for k, v in options.items() if v is not None}
    for given in options:
        if str(given).lower() not in known:
            raise CopyIntoError(str(unknown_option(str(given), known, context, known)))
    return lowered
