"""The table-valued functions Databricks SQL has and Spark lacks, as DataFrames.

* ``read_files(path, format => 'json', k => v ...)``: with the known platform's defaults,
  which differ from Auto Loader's: the format is guessed from file extensions when not
  given, and JSON and CSV columns get types (``inferColumnTypes`` true: integers, doubles,
  nested structs and arrays; JSON timestamps stay strings, CSV ones are typed, as Spark
  infers them), ``inferColumnTypes => false`` keeps strings, ``schemaHints`` override
  inferred types. Both forms add the rescue column ``_rescued_data`` when the schema is
  inferred: a value that does not fit its column (a type mismatch, a column differing only
  by case, a record that does not parse) is kept there as JSON, never dropped. A given
  ``schema`` has none unless ``rescuedDataColumn`` names one; ``schemaEvolutionMode =>
  'none'`` drops it. A batch read infers types with Spark's reader and reads the files with
  Auto Loader's readers (:func:`read_files`); under ``STREAM`` in a pipeline
  (:func:`read_files_stream`) it is Auto Loader, ``schemaEvolutionMode`` ``addNewColumns``.
  Both have Spark's hidden file metadata column ``_metadata``.
* ``cloud_files_state(location)``: Auto Loader's file state
  (:func:`headwater.autoloader.cloud_files_state`).
* ``table_changes(table, start[, end])``: the table's change data feed
  (``table_changes_by_path(path, ...)``: of the table at a path).
* ``event_log(storage)``: a declarative pipeline's event log (under its ``storage``).
* ``pipeline_quality(storage)``: its expectations' metrics, one row per update, dataset and
  expectation, with no JSON to dig through.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import replace

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from headwater import event_log_format, storage
from headwater.autoloader import file_metadata, metadata_plan
from headwater.autoloader.discovery import list_source, partition_values
from headwater.autoloader.options import CLOUD_OPTIONS, EVOLUTION_MODES, CloudFilesOptions
from headwater.autoloader.schema import apply_hints
from headwater.autoloader.source import CloudFilesStreamReader, FilesPartition, ResolvedSchema
from headwater.copyinto.plan import balanced_groups
from headwater.formats import FORMATS

_EXTENSIONS = {
    "json": "json", "jsonl": "json", "ndjson": "json", "csv": "csv", "tsv": "csv",
    "parquet": "parquet", "orc": "orc", "avro": "avro", "txt": "text", "text": "text",
    "xml": "xml",
}  # fmt: skip
_COMPRESSION = {"gz", "gzip", "bz2", "zst", "zstd", "snappy", "lz4", "deflate"}


def call(spark: SparkSession, name: str, args: list[str], named: dict[str, str]) -> DataFrame:
    if name == "read_files":
        return read_files(spark, *_args(name, args, 1, 1), **named)
    if named:
        raise ValueError(f"takes no named arguments (got {', '.join(named)}).")
    if name == "cloud_files_state":
        from headwater.autoloader import cloud_files_state

        (location,) = _args(name, args, 1, 1)
        return cloud_files_state(location, spark=spark)
    if name == "table_changes":
        return table_changes(spark, *_args(name, args, 2, 3))
    if name == "table_changes_by_path":
        return table_changes(spark, *_args(name, args, 2, 3), by_path=True)
    if name == "event_log":
        return event_log(spark, *_args(name, args, 1, 1))
    if name == "pipeline_quality":
        return pipeline_quality(spark, *_args(name, args, 1, 1))
    raise ValueError(f"unknown table function {name}")


def _args(name: str, args: list[str], least: int, most: int) -> list[str]:
    if not least <= len(args) <= most:
        wanted = str(least) if least == most else f"{least} to {most}"
        raise ValueError(f"takes {wanted} positional argument(s), got {len(args)}.")
    return args


def read_files(spark: SparkSession, path: str, **options: str) -> DataFrame:
    """Files under ``path``: the schema is given or inferred by Spark's reader (options as
    Spark's reader takes them); with a rescue column the rows come from Auto Loader's
    readers, which keep what does not fit instead of turning it into nulls. Either way the
    rows have Spark's hidden ``_metadata`` column (in SQL too: see
    :mod:`headwater.autoloader.metadata_plan`)."""
    return metadata_plan.hide(_read_files(spark, path, options))


def _read_files(spark: SparkSession, path: str, options: Mapping[str, str]) -> DataFrame:
    opts = dict(options)
    fmt = _format(opts, path)
    schema = _pop(opts, "schema")
    infer = _flag(_pop(opts, "inferColumnTypes"), "inferColumnTypes", True)
    hints = _pop(opts, "schemaHints")
    rescue = _rescue_column(opts, fmt, given=bool(schema))
    if fmt == "csv" and path.rstrip("/").lower().endswith(".tsv") and "sep" not in opts:
        opts["sep"] = "\t"
    reader_opts = dict(opts)
    if fmt == "csv" and _pop(opts, "inferSchema", keep=True) is None:
        reader_opts["inferSchema"] = str(infer).lower()
    reader = spark.read.format(fmt).options(**reader_opts)
    if schema:
        given = StructType.fromDDL(schema)
        if rescue and isinstance(given, StructType):
            return _rescued(spark, path, fmt, opts, given, rescue, True)
        return reader.schema(schema).load(path)
    if not hints and (fmt != "json" or infer) and not rescue:
        return reader.load(path)
    inferred = reader.load(path).schema
    if fmt == "json" and not infer:  # top-level strings; objects and arrays as JSON text
        inferred = StructType([StructField(f.name, StringType(), True) for f in inferred])
    inferred = apply_hints(inferred, hints)
    if rescue:
        corrupt = _pop(opts, "columnNameOfCorruptRecord", keep=True) or "_corrupt_record"
        kept = [f for f in inferred if f.name not in (corrupt, rescue)]
        return _rescued(spark, path, fmt, opts, StructType(kept), rescue, False)
    return reader.schema(inferred).load(path)


def _rescue_column(opts: dict[str, str], fmt: str, given: bool) -> str | None:
    """The known platform's rule: ``_rescued_data`` when the schema is inferred, none for a
    given schema, ``rescuedDataColumn`` names it (empty: none), and ``schemaEvolutionMode
    => 'none'`` drops it. Formats whose rows cannot misfit (text, binaryFile), and XML,
    which Auto Loader's readers do not read, have none."""
    named = _pop(opts, "rescuedDataColumn")
    mode = (_pop(opts, "schemaEvolutionMode") or "").lower()
    if mode and mode not in EVOLUTION_MODES:
        raise ValueError(
            f"schemaEvolutionMode must be addNewColumns, rescue, failOnNewColumns or none, "
            f"not '{mode}'."
        )
    if fmt not in FORMATS or fmt in ("text", "binaryfile"):
        return None
    if named is not None:
        return named or None
    return None if given or mode == "none" else "_rescued_data"


def _rescued(
    spark: SparkSession,
    path: str,
    fmt: str,
    options: Mapping[str, str],
    data: StructType,
    rescue: str,
    given: bool,
) -> DataFrame:
    """The files read as Auto Loader reads them (its option table, readers, partition
    values and corrupt-file handling) into ``data`` plus ``rescue``, one Spark task per
    group of files of similar size. A batch read keeps no schema versions nor file state,
    so the schema location Auto Loader's options require is never used."""
    root = storage.normalize(path)
    cloud = _cloud_options(fmt, options, infer_types=True)
    cloud.update({"rescuedDataColumn": rescue, "cloudFiles.schemaLocation": root})
    mode = "rescue" if given else "addNewColumns"
    cloud["cloudFiles.schemaEvolutionMode"] = mode
    opts = replace(CloudFilesOptions.parse(cloud, user_schema=given), schema_location=None)
    files = list(list_source(root, opts))
    parts = list(opts.partition_columns or [])
    if opts.partition_columns is None and not opts.recursive:
        parts = list(dict.fromkeys(k for f in files for k in partition_values(root, f.path)))
    meta = opts.file_metadata_column
    if given:  # the user's schema is the output, as is; partition columns only if named
        full = data if rescue in data.names else StructType([*data, _string(rescue)])
        parts = [p for p in parts if p in data.names]
        kept = StructType([f for f in data if f.name != rescue and f.name not in parts])
        resolved = ResolvedSchema(kept, parts, rescue, full, meta)
    else:
        lower = {p.lower() for p in parts}
        kept = StructType([f for f in data if f.name.lower() not in lower])
        resolved = ResolvedSchema(kept, parts, rescue, metadata=meta)
    if not files:
        return spark.createDataFrame([], resolved.with_hidden_metadata(True).full)
    groups = balanced_groups(files, spark.sparkContext.defaultParallelism)
    numbers = {f.path: i for i, f in enumerate(files)}  # each file's number, for _metadata
    rows = [
        (json.dumps([(f.path, f.size, f.mtime_ms, numbers[f.path]) for f in g]),) for g in groups
    ]
    frame = spark.createDataFrame(spark.sparkContext.parallelize(rows, len(rows)), "files string")
    reader = CloudFilesStreamReader(root, opts, resolved)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for group in batch.column(0).to_pylist():
                for path, size, mtime, number in json.loads(group):
                    for part in reader.read(FilesPartition([(path, size, mtime)])):
                        yield file_metadata.with_index(part, number)

    read = frame.mapInArrow(run, StructType([*resolved.full, file_metadata.index_field()]))
    return metadata_plan.from_file_index(read, [(f.path, f.size, f.mtime_ms) for f in files])


def _string(name: str) -> StructField:
    return StructField(name, StringType(), True)


def _cloud_options(fmt: str, options: Mapping[str, str], infer_types: bool) -> dict[str, str]:
    """``read_files``' options as Auto Loader's, written with or without ``cloudFiles.``."""
    cloud = {"cloudFiles.format": fmt, "cloudFiles.inferColumnTypes": str(infer_types).lower()}
    for key, value in options.items():
        cloud[CLOUD_OPTIONS.get(f"cloudfiles.{key.lower()}") or key] = value
    return cloud


def read_files_stream(
    spark: SparkSession, path: str, options: Mapping[str, str], infer_types: bool = True
) -> DataFrame:
    """``STREAM read_files(...)``: Auto Loader (``cloudFiles``) with ``read_files``'
    defaults, its options written with or without the ``cloudFiles.`` prefix.
    ``infer_types`` False for the older ``cloud_files``, which keeps Auto Loader's
    default (strings)."""
    opts = dict(options)
    fmt = _format(opts, path)
    schema = _pop(opts, "schema")
    mode = _pop(opts, "schemaEvolutionMode", keep=True)
    if (mode or "").lower() == "none" and _pop(opts, "rescuedDataColumn", keep=True) is None:
        opts["rescuedDataColumn"] = ""  # read_files drops the rescue column in mode none
    cloud = _cloud_options(fmt, opts, infer_types)
    reader = spark.readStream.format("cloudFiles").options(**cloud)
    return (reader.schema(schema) if schema else reader).load(path)


def _format(opts: dict[str, str], path: str) -> str:
    fmt = _pop(opts, "format") or guess_format(path)
    if fmt is None:
        raise ValueError(
            f"cannot tell the format of the files in {path}; pass format => 'json' (or csv, "
            "parquet, orc, text, binaryFile, ...)."
        )
    return "binaryFile" if fmt.lower() == "binaryfile" else fmt.lower()


def _flag(value: str | None, name: str, default: bool) -> bool:
    if value is None:
        return default
    if value.lower() not in ("true", "false"):
        raise ValueError(f"{name} must be true or false, not '{value}'.")
    return value.lower() == "true"


def guess_format(path: str) -> str | None:
    """The format named by the extension of ``path`` or of the first data file under it."""
    candidates = [path]
    if storage.is_dir(path):
        candidates = [
            f.path for f in storage.list_files(path) if not f.base_name.startswith(("_", "."))
        ][:20]
    for candidate in candidates:
        parts = candidate.rsplit("/", 1)[-1].lower().split(".")
        while len(parts) > 1 and parts[-1] in _COMPRESSION:
            parts.pop()
        if len(parts) > 1 and parts[-1] in _EXTENSIONS:
            return _EXTENSIONS[parts[-1]]
    return None


def table_changes(
    spark: SparkSession, table: str, start: str, end: str | None = None, *, by_path: bool = False
) -> DataFrame:
    """``table_changes('t', 2, 5)`` / ``table_changes('t', '2024-01-01 00:00:00')``;
    ``by_path``: ``table_changes_by_path('/path', ...)``, the table at a path."""
    reader = spark.read.format("delta").option("readChangeFeed", "true")
    reader = reader.option(*_bound("starting", start))
    if end is not None:
        reader = reader.option(*_bound("ending", end))
    return reader.load(table) if by_path else reader.table(table)


def event_log(spark: SparkSession, where: str) -> DataFrame:
    """A pipeline's event log: ``where`` is the pipeline's storage (its spec's ``storage``)
    or the event log table's own path."""
    for candidate in (event_log_format.location(where), where):
        if storage.is_dir(storage.delta_log_dir(candidate)):
            return spark.read.format("delta").load(candidate)
    raise ValueError(
        f"no pipeline event log under {where}: give the pipeline's storage folder "
        "(its spec's `storage`), after at least one update."
    )


def pipeline_quality(spark: SparkSession, where: str) -> DataFrame:
    """Per update, dataset and expectation: records passed and failed, summed over the
    flows of the update (from each flow's final ``flow_progress`` event), the action, the
    failure rate, and when the update's last flow finished."""
    log = event_log(spark, where)
    final = (
        log.where("event_type = 'flow_progress'")
        .selectExpr(
            "origin.update_id AS update_id",
            "timestamp",
            f"from_json(get_json_object(details, '$.flow_progress'), '{event_log_format.FLOW_PROGRESS_DDL}') AS p",
        )
        .where("p.status IN ('COMPLETED', 'FAILED', 'STOPPED') AND p.data_quality IS NOT NULL")
        .selectExpr("update_id", "timestamp", "explode(p.data_quality.expectations) AS e")
    )
    return (
        final.groupBy("update_id", "e.dataset", "e.name", "e.action")
        .agg(
            F.max("timestamp").alias("update_time"),
            F.sum("e.passed_records").alias("passed_records"),
            F.sum("e.failed_records").alias("failed_records"),
        )
        .selectExpr(
            "update_id",
            "update_time",
            "dataset",
            "name AS expectation",
            "action",
            "passed_records",
            "failed_records",
            "round(failed_records / nullif(passed_records + failed_records, 0), 4) AS failure_rate",
        )
        .orderBy("update_time", "dataset", "expectation")
    )


def _bound(prefix: str, value: str) -> tuple[str, str]:
    if value.lstrip("-").isdigit():
        return f"{prefix}Version", value
    return f"{prefix}Timestamp", value


def _pop(opts: dict[str, str], key: str, keep: bool = False) -> str | None:
    """Option ``key`` matched case-insensitively, as Spark matches option names."""
    for k in list(opts):
        if k.lower() == key.lower():
            return opts[k] if keep else opts.pop(k)
    return None
