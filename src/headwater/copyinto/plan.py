"""Planning a COPY INTO on the driver: which files to load, and the schema to read them with.

Files: the source is listed (Auto Loader's :func:`list_source`: hidden ``_``/``.`` files
skipped, ``pathGlobFilter`` and ``modifiedAfter``/``Before`` applied), narrowed by ``FILES``
or ``PATTERN``, and every file in the load record is dropped unless ``force``. A file is
identified by its path alone, so a file rewritten after it was loaded is not loaded again
(as in the known system); ``force`` loads it again.

Schema: the files are read with the table's own column types whenever the table knows the
columns, so values are converted once, in the reader, and a value that does not fit is
caught there (rescued, or reported). The files' schema is inferred only when something
needs it: a schemaless table, ``mergeSchema`` (to find new columns) or a ``SELECT`` list
(its expressions name source columns). Inference covers every file to be loaded, not a
sample, so a new column in any file is seen; beyond a few files it runs as a Spark job.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.fs as pafs
from pyspark.sql import SparkSession
from pyspark.sql.types import StringType, StructField, StructType

from headwater import storage
from headwater.autoloader.discovery import Listed, list_source, parse_time, partition_values
from headwater.autoloader.options import CloudFilesOptions
from headwater.copyinto.spec import CopyIntoError, CopySpec
from headwater.copyinto.target import Target
from headwater.formats import BINARY_FILE_SCHEMA, CorruptFileError, infer_file, merge, settle

DRIVER_INFERENCE_FILES = 32  # fewer files are inferred on the driver (no Spark job)
TARGET_GROUP_BYTES = 128 * 1024 * 1024


@dataclass
class FilePlan:
    files: list[Listed]  # to load
    skipped: int = 0  # already loaded
    partition_keys: list[str] = field(default_factory=list)  # from k=v directories

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files)


def source_base(spec: CopySpec) -> str:
    """The directory FILES and PATTERN are relative to (the source, or a file's directory)."""
    fs, inner = storage.filesystem(spec.source)
    if fs.get_file_info(inner).type == pafs.FileType.File:
        return spec.source.rsplit("/", 1)[0]
    return spec.source


def list_files(spec: CopySpec) -> list[Listed]:
    """The candidate files of the source, narrowed by FILES or PATTERN."""
    fs, inner = storage.filesystem(spec.source)
    if fs.get_file_info(inner).type == pafs.FileType.NotFound:
        raise CopyIntoError(f"COPY INTO source path {spec.source} does not exist.")
    opts = listing_options(spec)
    base = source_base(spec)
    if spec.files is not None:
        return _named_files(spec, base, opts)
    listed = list_source(spec.source, opts)
    if spec.pattern is None:
        return list(listed)
    regex = glob_regex(spec.pattern)
    prefix = storage.filesystem(base)[1].rstrip("/") + "/"
    return [f for f in listed if regex.match(storage.filesystem(f.path)[1][len(prefix) :])]


def _named_files(spec: CopySpec, base: str, opts: CloudFilesOptions) -> list[Listed]:
    fs, _ = storage.filesystem(base)
    paths = [storage.join(base, name) for name in dict.fromkeys(spec.files or ())]
    infos = fs.get_file_info([storage.filesystem(p)[1] for p in paths])
    missing = [p for p, i in zip(paths, infos, strict=True) if i.type != pafs.FileType.File]
    if missing and not spec.ignore_missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise CopyIntoError(
            f"FILES names {len(missing)} file(s) that do not exist under {base}: {shown}. "
            "Set FORMAT_OPTIONS('ignoreMissingFiles'='true') to skip them."
        )
    allowed = {f.path for f in _filtered(infos, opts)}
    out = []
    for path, info in zip(paths, infos, strict=True):
        if info.type == pafs.FileType.File and info.path in allowed:
            mtime = int(info.mtime_ns // 1_000_000) if info.mtime_ns is not None else 0
            out.append(Listed(storage.normalize(path), info.size or 0, mtime))
    return out


def _filtered(infos: list[pafs.FileInfo], opts: CloudFilesOptions) -> Iterator[Listed]:
    """The glob and modification-time filters of a listing, applied to named files."""
    after = parse_time(opts.modified_after, "modifiedAfter") if opts.modified_after else None
    before = parse_time(opts.modified_before, "modifiedBefore") if opts.modified_before else None
    for f in infos:
        if f.type != pafs.FileType.File:
            continue
        if opts.glob and not fnmatch.fnmatchcase(f.base_name, opts.glob):
            continue
        mtime = int(f.mtime_ns // 1_000_000) if f.mtime_ns is not None else 0
        if (after is not None and mtime <= after) or (before is not None and mtime >= before):
            continue
        yield Listed(f.path, f.size or 0, mtime)


def listing_options(spec: CopySpec) -> CloudFilesOptions:
    """Auto Loader's options for the listing and the readers of this load."""
    return CloudFilesOptions(
        format=spec.format,
        schema_location=None,
        infer_column_types=spec.infer_types,
        glob=spec.glob,
        recursive=spec.recursive,
        modified_after=spec.modified_after,
        modified_before=spec.modified_before,
        ignore_corrupt=spec.ignore_corrupt,
        ignore_missing=spec.ignore_missing,
        rescue_column=spec.rescue_column,
        format_options=spec.reader_options,
    )


def glob_regex(pattern: str) -> re.Pattern:
    """A Hadoop-style glob (``*``, ``?``, ``[abc]``, ``[^a]``, ``{a,b}``) over a path relative
    to the source; ``*`` and ``?`` do not cross ``/``."""
    out, i, depth = [], 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 2)
            if end < 0:
                raise CopyIntoError(f"PATTERN '{pattern}' has an unclosed '['.")
            body = pattern[i + 1 : end]
            body = "^" + body[1:] if body.startswith(("^", "!")) else body
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end
        elif c == "{":
            depth += 1
            out.append("(?:")
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
        elif c == "," and depth:
            out.append("|")
        elif c == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    if depth:
        raise CopyIntoError(f"PATTERN '{pattern}' has an unclosed '{{'.")
    return re.compile("".join(out) + r"\Z")


def plan_files(spec: CopySpec, loaded: set[str]) -> FilePlan:
    listed = list_files(spec)
    todo = listed if spec.force else [f for f in listed if f.path not in loaded]
    keys: list[str] = []
    if not listing_options(spec).recursive:
        base = source_base(spec)
        for f in todo:
            for key in partition_values(base, f.path):
                if key not in keys:
                    keys.append(key)
    return FilePlan(todo, len(listed) - len(todo), keys)


# -- the read schema ---------------------------------------------------------------------


@dataclass
class ReadSchema:
    """How the files are read: ``data`` (columns parsed from the files, partition keys
    included, values overwritten from the path), and whether it came from inference."""

    data: StructType
    inferred: bool
    corrupt: set[str] = field(default_factory=set)  # files inference could not read


def needs_inference(spec: CopySpec, target: Target) -> bool:
    if spec.format in ("text", "binaryfile") or spec.positional:
        return False
    return target.schemaless or spec.merge_schema or spec.select is not None


def read_schema(spark: SparkSession, spec: CopySpec, target: Target, plan: FilePlan) -> ReadSchema:
    if target.schemaless and not spec.merge_schema:
        raise CopyIntoError(
            f"Table {target.text} has no columns yet. Add COPY_OPTIONS('mergeSchema'='true') "
            "(and FORMAT_OPTIONS('inferSchema'='true') for typed CSV columns) to give it the "
            "files' schema."
        )
    if spec.format == "binaryfile":
        return ReadSchema(BINARY_FILE_SCHEMA, False)
    if spec.format == "text":
        return ReadSchema(StructType([StructField("value", StringType(), True)]), False)
    table = target.schema
    if spec.positional:
        return ReadSchema(_positional(spec, table), False)
    if spec.columns:  # by name: every table column is parsed, transform keeps the listed
        missing = [c for c in spec.columns if c.lower() not in {f.name.lower() for f in table}]
        if missing:
            raise CopyIntoError(
                f"The column list names {', '.join(missing)}, which table {target.text} does not "
                f"have (its columns: {', '.join(table.names) or 'none'})."
            )
        return ReadSchema(_nullable(table), False)
    if spec.headerless_csv and spec.select is None and not target.schemaless:
        raise CopyIntoError(
            f"CSV files without a header have no column names to match table {target.text}'s "
            "columns: add BY POSITION (or a column list) to map them by position, "
            "FORMAT_OPTIONS('header'='true') if the files have a header, or name them in "
            "FROM (SELECT _c0 AS a, _c1 AS b FROM ...)."
        )
    if not needs_inference(spec, target):
        return ReadSchema(_nullable(table), False)
    inferred, corrupt = infer(spark, spec, plan)
    keys = {k.lower() for k in plan.partition_keys}
    inferred = StructType([f for f in inferred if f.name.lower() not in keys])
    inferred = merge(
        inferred, StructType([StructField(k, StringType(), True) for k in plan.partition_keys])
    )
    if spec.select is not None or target.schemaless:
        return ReadSchema(inferred, True, corrupt)
    # mergeSchema into a table: the table's columns keep their types, new ones are added.
    known = {f.name.lower() for f in table}
    new = [f for f in inferred if f.name.lower() not in known]
    return ReadSchema(_nullable(StructType(list(table.fields) + new)), True, corrupt)


def _nullable(schema: StructType) -> StructType:
    return StructType([StructField(f.name, f.dataType, True) for f in schema])


def _positional(spec: CopySpec, table: StructType) -> StructType:
    """Headerless CSV: source column i goes to the i-th listed (or table) column."""
    if not table.fields:
        raise CopyIntoError(
            "BY POSITION or a column list needs a target table with columns; this one has none."
        )
    if spec.columns:
        by_name = {f.name.lower(): f for f in table}
        missing = [c for c in spec.columns if c.lower() not in by_name]
        if missing:
            raise CopyIntoError(
                f"The column list names {', '.join(missing)}, which the table does not have "
                f"(its columns: {', '.join(table.names)})."
            )
        return StructType(
            [
                StructField(by_name[c.lower()].name, by_name[c.lower()].dataType, True)
                for c in spec.columns
            ]
        )
    return _nullable(table)


def infer(spark: SparkSession, spec: CopySpec, plan: FilePlan) -> tuple[StructType, set[str]]:
    """The merged schema of every file to load, and the files that could not be read."""
    opts = listing_options(spec)
    if len(plan.files) <= DRIVER_INFERENCE_FILES:
        results = [_infer_group([(f.path, f.size) for f in plan.files], opts)]
    else:
        from headwater.copyinto.read import group_frame

        groups = balanced_groups(plan.files, spark.sparkContext.defaultParallelism)
        path_groups = [[(f.path, f.size) for f in g] for g in groups]

        def run(batches):
            for batch in batches:
                for group in batch.column(0).to_pylist():
                    schema, corrupt, error = _infer_group(json.loads(group), opts)
                    yield pa.RecordBatch.from_pydict(
                        {
                            "schema": [schema.json()],
                            "corrupt": [json.dumps(sorted(corrupt))],
                            "error": [error],
                        },
                        schema=pa.schema(
                            [
                                ("schema", pa.string()),
                                ("corrupt", pa.string()),
                                ("error", pa.string()),
                            ]
                        ),
                    )

        rows = (
            group_frame(spark, path_groups)
            .mapInArrow(run, "schema string, corrupt string, error string")
            .collect()
        )
        results = [
            (
                StructType.fromJson(json.loads(r["schema"])),
                set(json.loads(r["corrupt"])),
                r["error"],
            )
            for r in rows
        ]
    schema, corrupt = StructType([]), set[str]()
    for part, bad, error in results:
        if error:
            raise CopyIntoError(error)
        schema = merge(schema, part)
        corrupt |= bad
    return settle(schema, opts.format_options), corrupt


def _infer_group(
    files: list[tuple[str, int]], opts: CloudFilesOptions
) -> tuple[StructType, set[str], str | None]:
    schema, corrupt = StructType([]), set[str]()
    for path, size in files:
        if size == 0:
            continue  # an empty file has no columns (and Arrow's CSV reader refuses it)
        try:
            found = infer_file(path, opts.format_options, opts.infer_column_types, True)
            schema = merge(schema, found)  # NULL throughout a file: settled after the merge
        except FileNotFoundError:
            if not opts.ignore_missing:
                return schema, corrupt, f"Source file {path} was deleted during COPY INTO."
        except (pa.ArrowInvalid, OSError, UnicodeDecodeError, ValueError, CorruptFileError) as e:
            if opts.ignore_corrupt:
                corrupt.add(path)
                continue
            return (
                schema,
                corrupt,
                (
                    f"Cannot infer a schema from {path}: {e}. Fix or remove the file, or set "
                    "FORMAT_OPTIONS('ignoreCorruptFiles'='true') to skip unreadable files."
                ),
            )
    return schema, corrupt, None


def balanced_groups(files: list[Listed], parallelism: int) -> list[list[Listed]]:
    """Files in groups of similar total size, one Spark task each: at least one group per
    core (more for big loads), largest files placed first on the lightest group."""
    total = sum(f.size for f in files)
    n = max(1, parallelism, -(-total // TARGET_GROUP_BYTES))
    n = min(n, len(files)) or 1
    groups: list[list[Listed]] = [[] for _ in range(n)]
    sizes = [0] * n
    for f in sorted(files, key=lambda f: (-f.size, f.path)):
        i = sizes.index(min(sizes))
        groups[i].append(f)
        sizes[i] += f.size + 4096  # a per-file cost, so many tiny files spread out too
    for g in groups:
        g.sort(key=lambda f: f.path)
    return [g for g in groups if g]
