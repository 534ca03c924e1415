"""Streaming writes into Delta tables: ``writeStream...start(path)`` and ``toTable(name)``.

``df.writeStream`` (any sink, either engine) first drops the hidden ``_metadata`` column
from the ``cloudFiles`` reads of a query that does not select it, so the source does not
make it (:func:`headwater.autoloader.metadata_plan.unselected_dropped`). ``start`` and
``toTable`` (any sink, either engine) give a ``cloudFiles`` read without
``cloudFiles.schemaLocation`` its file state under the query's checkpoint
(:mod:`headwater.autoloader.checkpoint_state`).

The query runs as Spark's own streaming query whose micro-batches go to
:class:`headwater.delta.write.sink.DeltaStreamSink` (``foreachBatch``), which commits each batch
exactly once. The checkpoint is found as Spark finds it: the ``checkpointLocation``
option, else ``spark.sql.streaming.checkpointLocation``/<queryName> (a random name without
``queryName``, as Spark does).
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Callable
from typing import Any

from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

from headwater import api, engines, storage
from headwater.adapter.state import state_of
from headwater.adapter.writes import refuse_layout
from headwater.autoloader import checkpoint_state, metadata_plan
from headwater.delta.options import output_mode, sink_spec
from headwater.engines.door import Operation
from headwater.errors import OptionError
from headwater.originals import original as spark_method
from headwater.storage.checkpoints import clear_unwritten_first_batch

Method = Callable[..., Any]


def stream_writer_init(original: Method) -> Method:
    def __init__(self, df) -> None:
        original(self, metadata_plan.unselected_dropped(df))

    return __init__


def stream_writer_start(original: Method) -> Method:
    def start(
        self, path=None, format=None, outputMode=None, partitionBy=None, queryName=None, **options
    ):
        with_file_state(self, options, queryName)
        state = state_of(self)
        # Without a format, a path is a Delta table's where Delta is the default; without a
        # path either, the sink is Spark's (foreachBatch, foreach).
        spark = self._df.sparkSession
        given = path or any(k.lower() == "path" for k in state.merged(options))
        implied = bool(given) and engines.delta_by_default(spark)
        if not state.is_format("delta", format, implied):
            return original(self, path, format, outputMode, partitionBy, queryName, **options)
        opts = state.merged(options)
        path = path or next((v for k, v in opts.items() if k.lower() == "path"), None)
        if not path:
            raise OptionError(
                "Streaming into format('delta') needs a path: .start('/path/to/table')."
            )
        target = api.for_path(self._df.sparkSession, path)
        return _start(self, target, outputMode, partitionBy, queryName, options)

    return start


def stream_writer_to_table(original: Method) -> Method:
    def toTable(
        self, tableName, format=None, outputMode=None, partitionBy=None, queryName=None, **options
    ):
        with_file_state(self, options, queryName)
        state = state_of(self)
        delta = engines.delta_by_default(self._df.sparkSession)
        if not state.is_format("delta", format, delta):
            return original(self, tableName, format, outputMode, partitionBy, queryName, **options)
        location = next((v for k, v in state.merged(options).items() if k.lower() == "path"), None)
        target = api.table(self._df.sparkSession, tableName, location)
        return _start(self, target, outputMode, partitionBy, queryName, options, create=True)

    return toTable


def file_state_only(original: Method) -> Method:
    """``start``/``toTable`` where delta-spark serves Delta tables: PySpark's own, after
    :func:`with_file_state` (both take ``queryName`` fifth)."""

    def start(self, *args, **options):
        name = options.get("queryName", args[4] if len(args) > 4 else None)
        with_file_state(self, options, name)
        return original(self, *args, **options)

    return start


def with_file_state(
    writer: DataStreamWriter, options: dict[str, Any], query_name: str | None
) -> None:
    """Bind the query's ``cloudFiles`` reads that have no ``cloudFiles.schemaLocation`` to
    ``<checkpoint>/sources/<n>`` (see :mod:`headwater.autoloader.checkpoint_state`). A
    checkpoint Spark would choose under ``spark.sql.streaming.checkpointLocation`` is chosen
    now and set, so the state is in the one Spark uses; a query with none at all (Spark's
    temporary checkpoint, memory and console sinks) keeps it in a temporary folder."""
    if not checkpoint_state.unbound(writer._df):
        return
    state = state_of(writer)
    opts = state.merged(options)
    checkpoint = checkpoint_location(writer, opts, query_name or state.query_name)
    if checkpoint is None:
        checkpoint = tempfile.mkdtemp(prefix="cloudFiles-state-")
    elif not any(k.lower() == "checkpointlocation" for k in opts):
        writer.option("checkpointLocation", checkpoint)
    checkpoint_state.bind(writer, checkpoint)


def _start(
    writer: DataStreamWriter,
    target: api.TableDoor,
    mode: str | None,
    partition_by: str | list[str] | None,
    query_name: str | None,
    options: dict[str, Any],
    create: bool = False,
) -> StreamingQuery:
    """Start the query; ``create``: create the table (empty, of the stream's schema and
    layout) first when it does not exist yet, as Spark's ``toTable`` does, so it can be
    read as soon as the query starts and not only after the first micro-batch."""
    state = state_of(writer)
    refuse_layout(state, f"the stream into {target.name}")
    opts = state.merged(options)
    name = query_name or state.query_name
    checkpoint = checkpoint_location(writer, opts, name)
    parts = [partition_by] if isinstance(partition_by, str) else partition_by
    sink = target.sink(
        checkpoint or "",
        output_mode(mode or state.output_mode),
        sink_spec(opts, parts if parts is not None else state.partition_by),
    )
    if create and not target.exists():
        spark = writer._df.sparkSession
        spec = sink.spec  # version 0 is a CREATE TABLE, as delta-spark's toTable commits it
        operation = Operation.create_table(spec.partition_by, dict(spec.configuration or {}), None)
        target.write(spark.createDataFrame([], writer._df.schema), spec, operation)
    if state.partition_by is not None:
        _clear_spark_partitioning(writer)  # the sink partitions the table itself
    if mode:
        spark_method(DataStreamWriter, "outputMode")(writer, mode)
    spark_method(DataStreamWriter, "option")(writer, "checkpointLocation", checkpoint)
    if checkpoint:
        clear_unwritten_first_batch(checkpoint)  # what a first batch killed midway left
    writer.foreachBatch(sink)
    return spark_method(DataStreamWriter, "start")(writer, queryName=query_name)


def _clear_spark_partitioning(writer: DataStreamWriter) -> None:
    """Spark refuses ``foreachBatch`` on a writer given ``partitionBy`` (and has no way to
    take it back), while a Delta sink partitions by it: set Spark's own writer's
    partitioning back to none, by reflection, as it was before ``partitionBy``."""
    jwriter = writer._jwrite
    jvm = writer._df.sparkSession._jvm
    assert jvm is not None
    cls = jwriter.getClass()
    while cls is not None:
        fields = {f.getName(): f for f in cls.getDeclaredFields()}
        if "partitioningColumns" in fields:
            field = fields["partitioningColumns"]
            field.setAccessible(True)
            field.set(jwriter, getattr(getattr(jvm.scala, "None$"), "MODULE$"))
            return
        cls = cls.getSuperclass()


def checkpoint_location(
    writer: DataStreamWriter, options: dict[str, str], query_name: str | None
) -> str | None:
    """Where the query keeps its progress, by Spark's rule."""
    given = next((v for k, v in options.items() if k.lower() == "checkpointlocation"), None)
    if given:
        return given
    base = writer._df.sparkSession.conf.get("spark.sql.streaming.checkpointLocation", None)
    if base:
        return storage.join(base, query_name or str(uuid.uuid4()))
    return None
