"""Reads: ``spark.read``/``spark.readStream`` of Delta tables (by path or name) and of the
``cloudFiles`` source.

Delta batch reads go to :mod:`headwater.api` (Spark's native Parquet scan of the
snapshot's files; on a delta-spark session, delta-spark's own reads), but a pipeline's
reads, by name or by path, are its resolver's first (:mod:`.resolution`); a name that is
not a headwater table reaches Spark unchanged. Options of
``cloudFiles`` and of streaming ``delta`` reads are checked here, where the names are still
spelled as the user typed them, before Spark plans the Python source. A ``cloudFiles`` read
has Spark's hidden ``_metadata`` column (:mod:`headwater.autoloader.metadata_plan`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame
from pyspark.sql.types import DataType, StringType, StructField, StructType

from headwater import api, engines
from headwater.adapter import resolution
from headwater.adapter.errors import carried
from headwater.adapter.state import state_of
from headwater.autoloader import file_metadata, metadata_plan
from headwater.autoloader.options import CloudFilesOptions
from headwater.autoloader.source import FILE_METADATA, USER_SCHEMA_OPTION
from headwater.delta.options import STREAM_READ_OPTIONS, check_known
from headwater.errors import OptionError
from headwater.sqltypes import parse_schema

Method = Callable[..., Any]


def reader_load(original: Method) -> Method:
    def load(self, path=None, format=None, schema=None, **options):
        state = state_of(self)
        delta = state.is_format("delta", format, engines.delta_by_default(self._spark))
        if not delta or isinstance(path, (list, tuple)):
            return original(self, path, format, schema, **options)
        opts = state.merged(options)
        found = path or _pop_path(opts)
        _pop_path(opts)
        resolver = resolution.current()
        plain = found and not opts and schema is None and state.schema is None
        if resolver is not None and plain and "`" not in found:  # asked by its SQL name
            resolved = resolver.table(f"delta.`{found}`", False, {})
            if resolved is not None:
                return resolved
        if engines.of(self._spark) == engines.DELTA_SPARK:  # delta-spark serves the rest
            return original(self, path, format, schema, **options)
        path = found
        if schema is not None or state.schema is not None:
            raise OptionError(
                "A Delta table has its own schema; do not call .schema() when reading format('delta')."
            )
        if not path:
            raise OptionError("Reading format('delta') needs a path: .load('/path/to/table').")
        return api.for_path(self._spark, path).read(options=opts)

    return load


def reader_table(original: Method) -> Method:
    def table(self, tableName):
        resolver = resolution.current()
        resolved = resolver.table(tableName, False, state_of(self).merged()) if resolver else None
        if resolved is not None:
            return resolved
        found = api.find(self._spark, tableName)
        if found is None:
            return original(self, tableName)
        return found.read(options=state_of(self).merged())

    return table


def session_table(original: Method) -> Method:
    def table(self, tableName: str) -> DataFrame:
        return self.read.table(tableName)

    return table


def stream_reader_table(original: Method) -> Method:
    def table(self, tableName):
        resolver = resolution.current()
        resolved = resolver.table(tableName, True, state_of(self).merged()) if resolver else None
        if resolved is not None:
            return resolved
        found = api.find(self._spark, tableName)
        if found is None:
            return original(self, tableName)
        return found.read_stream(state_of(self).merged())

    return table


def reader_changes(original: Method) -> Method:
    """``spark.read.changes(t)`` / ``spark.readStream.changes(t)`` (Spark 4.2's change
    reader): a Delta table's change data feed, as ``readChangeFeed`` reads it (its options,
    ``startingVersion``... apply). Spark's own serves only catalogs with changelogs."""

    def changes(self, tableName):
        return self.option("readChangeFeed", "true").table(tableName)

    return changes


def stream_reader_load(original: Method) -> Method:
    def load(self, path=None, format=None, schema=None, **options):
        state = state_of(self)
        opts = state.merged(options)
        if state.is_format("cloudfiles", format):
            given = schema is not None or state.schema is not None
            resolver = resolution.current()
            default = resolver.schema_location() if resolver else None
            if default and not any(k.lower() == "cloudfiles.schemalocation" for k in opts):
                self.option("cloudFiles.schemaLocation", default)
                opts["cloudFiles.schemaLocation"] = default
            column = resolver.file_metadata_column() if resolver else None
            if column and not any(k.lower() == "headwater.filemetadatacolumn" for k in opts):
                self.option("headwater.fileMetadataColumn", column)
                opts["headwater.fileMetadataColumn"] = column
            parsed = CloudFilesOptions.parse(opts, user_schema=given)  # errors name options
            self.option(file_metadata.OPTION, "true")  # Spark's hidden _metadata
            if given:  # the source cannot tell a given schema from its own inference
                self.option(USER_SCHEMA_OPTION, "true")
                if parsed.rescue_column:  # the source's rows carry it: Spark must expect it
                    schema = with_column(schema or state.schema, parsed.rescue_column, StringType())
                schema = with_file_metadata(schema or state.schema, parsed.file_metadata_column)
            return metadata_plan.hide(_load(original, self, path, format, schema, options))
        elif state.is_format("delta", format, engines.delta_by_default(self._spark)):
            check_known(opts, STREAM_READ_OPTIONS, "streaming from a delta table")
        return _load(original, self, path, format, schema, options)

    return load


def _load(original: Method, reader, path, format, schema, options) -> DataFrame:
    try:
        return original(reader, path, format, schema, **options)
    except AnalysisException as e:
        found = carried(e)
        if found is None:
            raise
        raise found from None


def _pop_path(options: dict[str, str]) -> str | None:
    key = next((k for k in options if k.lower() == "path"), None)
    return options.pop(key) if key is not None else None


def with_file_metadata(schema: StructType | str, column: str | None) -> StructType:
    """A schema given to Auto Loader, plus its ``headwater.fileMetadataColumn`` (when
    set) and Spark's hidden ``_metadata``: the source's rows carry them, so Spark must
    expect them."""
    struct = schema if isinstance(schema, StructType) else parse_schema(schema)
    if column:
        struct = with_column(struct, column, FILE_METADATA, False)
    return file_metadata.with_field(struct)


def with_column(
    schema: StructType | str, column: str, dtype: DataType, nullable: bool = True
) -> StructType:
    """A schema given to Auto Loader, plus a column its source adds (the rescue column,
    the file metadata column), unless the schema names it already."""
    struct = schema if isinstance(schema, StructType) else parse_schema(schema)
    if column in struct.fieldNames():
        return struct
    return StructType([*struct.fields, StructField(column, dtype, nullable)])
