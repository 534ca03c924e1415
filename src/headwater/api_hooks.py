"""Routes PySpark's reader/writer entry points for Delta tables to headwater.

Why hooks: a Python data source cannot prune columns, cannot be the target of
``saveAsTable``, gets no options as a catalog table, and moves every row through a Python
worker. Users still type ``spark.read.format("delta").load(p)``, ``df.write.saveAsTable(n)``,
``df.writeStream.toTable(n)``. So the session wraps those methods: calls about Delta go to
:mod:`headwater.delta` (native Parquet I/O, one Delta commit per write) and the catalog;
every other call reaches PySpark's original method untouched. The builders remember what
was set on them (format, options, mode, partitioning) in a ``_hw`` dict, because PySpark
keeps that state only on the JVM side.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.readwriter import DataFrameReader, DataFrameWriter
from pyspark.sql.streaming.readwriter import DataStreamReader, DataStreamWriter

from headwater import originals
from headwater.errors import OptionError

_ORIGINALS: dict[str, Callable[..., Any]] = {}


def original(key: str) -> Callable[..., Any]:
    """PySpark's own method, e.g. ``original("DataFrameReader.load")``."""
    if key in _ORIGINALS:
        return _ORIGINALS[key]
    cls_name, attr = key.split(".")
    cls = {
        c.__name__: c
        for c in (
            DataFrameReader,
            DataFrameWriter,
            DataStreamReader,
            DataStreamWriter,
            SparkSession,
        )
    }[cls_name]
    return getattr(cls, attr)


def _state(builder: Any) -> dict[str, Any]:
    state = builder.__dict__.get("_hw")
    if state is None:
        state = {
            "format": None,
            "options": {},
            "mode": None,
            "partition_by": None,
            "output_mode": None,
        }
        builder.__dict__["_hw"] = state
    return state


def _patch(cls: type, attr: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    key = f"{cls.__name__}.{attr}"
    if key in _ORIGINALS:
        return
    orig = originals.keep(cls, attr)
    _ORIGINALS[key] = orig
    wrapper = make(orig)
    wrapper.__doc__ = getattr(orig, "__doc__", None)
    wrapper.__name__ = attr
    setattr(cls, attr, wrapper)


def _record(cls: type) -> None:
    """Make the builder remember format/option/options/mode/partitionBy/outputMode calls."""

    def fmt(orig):
        def format(self, source: str):
            _state(self)["format"] = str(source).lower()
            return orig(self, source)

        return format

    def opt(orig):
        def option(self, key: str, value: Any):
            _state(self)["options"][str(key)] = _to_str(value)
            return orig(self, key, value)

        return option

    def opts(orig):
        def options(self, **options: Any):
            _state(self)["options"].update({k: _to_str(v) for k, v in options.items()})
            return orig(self, **options)

        return options

    _patch(cls, "format", fmt)
    _patch(cls, "option", opt)
    _patch(cls, "options", opts)
    if hasattr(cls, "mode"):

        def mode(orig):
            def mode(self, saveMode):
                _state(self)["mode"] = saveMode
                return orig(self, saveMode)

            return mode

        _patch(cls, "mode", mode)
    if hasattr(cls, "partitionBy"):

        def part(orig):
            def partitionBy(self, *cols):
                if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
                    cols = tuple(cols[0])
                _state(self)["partition_by"] = list(cols)
                return orig(self, *cols)

            return partitionBy

        _patch(cls, "partitionBy", part)
    if hasattr(cls, "outputMode"):

        def out(orig):
            def outputMode(self, outputMode: str):
                _state(self)["output_mode"] = outputMode
                return orig(self, outputMode)

            return outputMode

        _patch(cls, "outputMode", out)
    if hasattr(cls, "schema"):

        def sch(orig):
            def schema(self, schema):
                _state(self)["schema"] = schema
                return orig(self, schema)

            return schema

        _patch(cls, "schema", sch)


def _to_str(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _is_delta(state: dict[str, Any], fmt: str | None, default_delta: bool = False) -> bool:
    chosen = (fmt or state["format"] or ("delta" if default_delta else "")).lower()
    return chosen == "delta"


def _catalog(spark: SparkSession):
    from headwater.catalog import Catalog

    return Catalog.of(spark)


# -- batch reads ---------------------------------------------------------------------------


def _reader_load(orig):
    def load(self, path=None, format=None, schema=None, **options):
        state = _state(self)
        if not _is_delta(state, format) or isinstance(path, (list, tuple)):
            return orig(self, path, format, schema, **options)
        from headwater.delta.read import read_delta

        if schema is not None or state.get("schema") is not None:
            raise OptionError(
                "A Delta table has its own schema; do not call .schema() when reading format('delta')."
            )
        opts = {**state["options"], **{k: _to_str(v) for k, v in options.items()}}
        path = path or opts.pop("path", None)
        if not path:
            raise OptionError("Reading format('delta') needs a path: .load('/path/to/table').")
        opts.pop("path", None)
        return read_delta(self._spark, path, opts)

    return load


def _reader_table(orig):
    def table(self, tableName: str):
        from headwater.catalog.names import delta_path
        from headwater.delta.read import read_delta

        opts = {k: v for k, v in _state(self)["options"].items()}
        by_path = delta_path(tableName)
        if by_path is not None:
            return read_delta(self._spark, by_path, opts)
        entry = _catalog(self._spark).get(tableName)
        if entry is None:
            return orig(self, tableName)
        return read_delta(self._spark, entry.location, opts)

    return table


def _session_table(orig):
    def table(self, tableName: str) -> DataFrame:
        return self.read.table(tableName)

    return table


def _session_sql(orig):
    """Statements Spark's parser lacks (Delta DDL/DML, OPTIMIZE, time travel, COPY INTO...)
    go to :mod:`headwater.sql`; every other statement reaches Spark unchanged, with ``args``
    and ``{df}`` keyword substitution as PySpark does them."""

    def sql(self, sqlQuery: str, args=None, **kwargs) -> DataFrame:
        from headwater.sql.dispatch import route

        return route(self, sqlQuery, args, kwargs, orig)

    return sql


# -- batch writes --------------------------------------------------------------------------


def _writer_save(orig):
    def save(self, path=None, format=None, mode=None, partitionBy=None, **options):
        state = _state(self)
        if not _is_delta(state, format):
            return orig(self, path, format, mode, partitionBy, **options)
        from headwater.delta import WriteSpec, write

        opts = {**state["options"], **{k: _to_str(v) for k, v in options.items()}}
        path = path or opts.pop("path", None)
        opts.pop("path", None)
        if not path:
            raise OptionError("Writing format('delta') needs a path: .save('/path/to/table').")
        parts = _partitions(partitionBy, state)
        write(self._df, path, WriteSpec.from_options(opts, mode or state["mode"], parts))

    return save


def _writer_save_as_table(orig):
    def saveAsTable(self, name, format=None, mode=None, partitionBy=None, **options):
        state = _state(self)
        if not _is_delta(state, format, default_delta=True):
            return orig(self, name, format, mode, partitionBy, **options)
        from headwater.catalog.names import delta_path
        from headwater.delta import WriteSpec, write
        from headwater.errors import TableAlreadyExistsError

        opts = {**state["options"], **{k: _to_str(v) for k, v in options.items()}}
        location = opts.pop("path", None)
        parts = _partitions(partitionBy, state)
        save_mode = (mode or state["mode"] or "errorifexists").lower()
        by_path = delta_path(name)
        if by_path is not None:
            write(self._df, by_path, WriteSpec.from_options(opts, save_mode, parts))
            return None
        catalog = _catalog(self._df.sparkSession)
        existing = catalog.get(name)
        if existing is not None:
            if save_mode in ("error", "errorifexists", "default"):
                raise TableAlreadyExistsError(
                    f"[TABLE_OR_VIEW_ALREADY_EXISTS] Table {existing.name} already exists; "
                    "use mode('append') or mode('overwrite')."
                )
            if save_mode == "ignore":
                return None
        entry = catalog.entry_for_write(name, location)
        write_mode = save_mode if save_mode in ("append", "overwrite") else "append"
        result = write(self._df, entry.location, WriteSpec.from_options(opts, write_mode, parts))
        if existing is None or result.schema_changed:
            catalog.register_in_spark(entry)
        return None

    return saveAsTable


def _partitions(arg, state) -> list[str] | None:
    if arg is None:
        return state["partition_by"]
    return [arg] if isinstance(arg, str) else list(arg)


# -- streaming -----------------------------------------------------------------------------


def _stream_reader_table(orig):
    def table(self, tableName: str):
        from headwater.catalog.names import delta_path

        by_path = delta_path(tableName)
        if by_path is not None:
            return self.format("delta").load(by_path)
        entry = _catalog(self._spark).get(tableName)
        if entry is None:
            return orig(self, tableName)
        return self.format("delta").load(entry.location)

    return table


def _stream_reader_load(orig):
    def load(self, path=None, format=None, schema=None, **options):
        state = _state(self)
        if (format or state["format"] or "").lower() == "cloudfiles" and (
            schema is not None or state.get("schema") is not None
        ):
            # The source cannot tell a given schema from its own inference; say so.
            from headwater.autoloader.source import USER_SCHEMA_OPTION

            original("DataStreamReader.option")(self, USER_SCHEMA_OPTION, "true")
        return orig(self, path, format, schema, **options)

    return load


def _start_delta(writer, path: str, mode, partition_by, query_name, options, on_commit=None):
    from headwater.delta.sink import DeltaStreamSink, output_mode, sink_spec

    state = _state(writer)
    opts = {**state["options"], **{k: _to_str(v) for k, v in options.items()}}
    checkpoint = next((v for k, v in opts.items() if k.lower() == "checkpointlocation"), None)
    spark = writer._df.sparkSession
    if checkpoint is None:
        base = spark.conf.get("spark.sql.streaming.checkpointLocation", None)
        if base and query_name:
            checkpoint = os.path.join(base, query_name)
    sink = DeltaStreamSink(
        path,
        checkpoint,
        output_mode(mode or state["output_mode"]),
        sink_spec(opts, _partitions(partition_by, state)),
        on_commit,
    )
    if mode:
        original("DataStreamWriter.outputMode")(writer, mode)
    if checkpoint:
        original("DataStreamWriter.option")(writer, "checkpointLocation", checkpoint)
    writer.foreachBatch(sink)
    return original("DataStreamWriter.start")(writer, queryName=query_name)


def _stream_writer_start(orig):
    def start(
        self, path=None, format=None, outputMode=None, partitionBy=None, queryName=None, **options
    ):
        state = _state(self)
        if not _is_delta(state, format):
            return orig(self, path, format, outputMode, partitionBy, queryName, **options)
        path = path or state["options"].get("path") or options.get("path")
        if not path:
            raise OptionError(
                "Streaming into format('delta') needs a path: .start('/path/to/table')."
            )
        return _start_delta(self, path, outputMode, partitionBy, queryName, options)

    return start


def _stream_writer_to_table(orig):
    def toTable(
        self, tableName, format=None, outputMode=None, partitionBy=None, queryName=None, **options
    ):
        state = _state(self)
        if not _is_delta(state, format, default_delta=True):
            return orig(self, tableName, format, outputMode, partitionBy, queryName, **options)
        from headwater.catalog.names import delta_path

        by_path = delta_path(tableName)
        if by_path is not None:
            return _start_delta(self, by_path, outputMode, partitionBy, queryName, options)
        catalog = _catalog(self._df.sparkSession)
        location = state["options"].get("path") or options.get("path")
        entry = catalog.entry_for_write(tableName, location)

        def on_commit(result) -> None:
            if result.created or result.schema_changed:
                catalog.register_in_spark(entry)

        return _start_delta(
            self, entry.location, outputMode, partitionBy, queryName, options, on_commit
        )

    return toTable


def install_hooks() -> None:
    """Wrap PySpark's classic reader/writer classes once per process."""
    for cls in (DataFrameReader, DataFrameWriter, DataStreamReader, DataStreamWriter):
        _record(cls)
    _patch(DataFrameReader, "load", _reader_load)
    _patch(DataFrameReader, "table", _reader_table)
    _patch(SparkSession, "table", _session_table)
    _patch(SparkSession, "sql", _session_sql)
    _patch(DataFrameWriter, "save", _writer_save)
    _patch(DataFrameWriter, "saveAsTable", _writer_save_as_table)
    _patch(DataStreamReader, "table", _stream_reader_table)
    _patch(DataStreamReader, "load", _stream_reader_load)
    _patch(DataStreamWriter, "start", _stream_writer_start)
    _patch(DataStreamWriter, "toTable", _stream_writer_to_table)
    if not hasattr(DataStreamWriter, "table"):
        # The notes users learn from write ``writeStream....table("name")``.
        DataStreamWriter.table = DataStreamWriter.toTable  # type: ignore[attr-defined]
