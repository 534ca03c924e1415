"""The PySpark adapter: users keep typing PySpark's API, Delta tables go to headwater.

Why patch at all: a Python data source cannot prune columns, cannot be the target of
``saveAsTable``, gets no options as a catalog table, and moves every row through a Python
worker. So :func:`install` wraps the PySpark methods listed in :data:`PATCHES` (one table,
nothing else is touched): setters record what the builder was told (:mod:`.state`), and
terminal calls about Delta tables go to the typed API (:mod:`headwater.api`); every other
call reaches PySpark's own method unchanged. ``cloudFiles`` reads, ``df.writeStream`` and
``spark.sql`` also keep Spark's hidden ``_metadata`` column of files
(:mod:`headwater.autoloader.metadata_plan`); ``spark.sql``, ``selectExpr`` and a string
``filter`` take the known system's ``col:a.b`` JSON paths on string columns
(:mod:`.expressions`). :func:`uninstall` puts PySpark's methods back.

Each row names the signature of the PySpark method it wraps; a test compares them with the
installed PySpark, so a PySpark release that moves one fails loudly instead of silently
misrouting arguments.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.classic.dataframe import DataFrame  # classic sessions' frames
from pyspark.sql.readwriter import DataFrameReader, DataFrameWriter, DataFrameWriterV2
from pyspark.sql.streaming.readwriter import DataStreamReader, DataStreamWriter

from headwater import originals
from headwater.adapter import expressions, reads, recording, sessions, streams, writes
from headwater.adapter.sql import session_sql

Method = Callable[..., Any]

_OPTION = "(self, key: str, value: 'OptionalPrimitiveType')"
_OPTIONS = "(self, **options: 'OptionalPrimitiveType')"
_FORMAT = "(self, source: str)"
_SCHEMA = "(self, schema: Union[pyspark.sql.types.StructType, str])"
_NONE = "(self) -> None"


@dataclass(frozen=True)
class Patch:
    """One PySpark method headwater wraps: ``make(original)`` builds the wrapper;
    ``signature`` is the original's, as ``inspect.signature`` prints it."""

    cls: type
    name: str
    make: Callable[[Method], Method]
    signature: str
    # for a method of DELTA_ROUTING: its wrapper where delta-spark serves Delta tables
    # (None: PySpark's own method there)
    unrouted: Callable[[Method], Method] | None = None

    @property
    def key(self) -> str:
        return f"{self.cls.__name__}.{self.name}"

    def installed(self) -> bool:
        return getattr(getattr(self.cls, self.name, None), "__headwater_patch__", False)

    def apply(self) -> None:
        if self.installed():
            return
        original = originals.keep(self.cls, self.name)
        wrapper = functools.wraps(original)(self.make(original))
        wrapper.__headwater_patch__ = True  # type: ignore[attr-defined]
        setattr(self.cls, self.name, wrapper)

    def restore(self) -> None:
        if self.installed():
            setattr(self.cls, self.name, originals.forget(self.cls, self.name))

    def signature_drift(self) -> str | None:
        """How PySpark's method now differs from the signature the wrapper was written
        for (None: it does not)."""
        current = str(inspect.signature(originals.original(self.cls, self.name)))
        expected = self.signature
        if not current.startswith(expected):
            return f"{self.key}: expected {expected}..., found {current}"
        return None


def _setters(cls: type, *extra: Patch) -> tuple[Patch, ...]:
    ret = f" -> '{cls.__name__}'"
    return (
        Patch(cls, "format", recording.format_, _FORMAT + ret),
        Patch(cls, "option", recording.option, _OPTION + ret),
        Patch(cls, "options", recording.options, _OPTIONS + ret),
        *extra,
    )


def _foreach_batch(original: Method) -> Method:
    """``foreachBatch``: one patch per method (a second on the same one is not applied),
    so the recording of the sink and the batch's session are one wrapper."""
    return sessions.foreach_batch(recording.foreach_batch(original))


PATCHES: tuple[Patch, ...] = (
    # what builders were told
    *_setters(
        DataFrameReader,
        Patch(DataFrameReader, "schema", recording.schema, _SCHEMA),
    ),
    *_setters(
        DataFrameWriter,
        Patch(DataFrameWriter, "mode", recording.mode, "(self, saveMode: Optional[str])"),
        Patch(DataFrameWriter, "partitionBy", recording.partition_by, "(self, *cols"),
        Patch(DataFrameWriter, "bucketBy", recording.bucket_by, "(self, numBuckets: int"),
        Patch(DataFrameWriter, "sortBy", recording.sort_by, "(self, col"),
        Patch(DataFrameWriter, "clusterBy", recording.cluster_by, "(self, *cols"),
    ),
    *_setters(
        DataStreamReader,
        Patch(DataStreamReader, "schema", recording.schema, _SCHEMA),
    ),
    *_setters(
        DataStreamWriter,
        Patch(DataStreamWriter, "outputMode", recording.output_mode, "(self, outputMode: str)"),
        Patch(DataStreamWriter, "partitionBy", recording.partition_by, "(self, *cols: str)"),
        Patch(DataStreamWriter, "queryName", recording.query_name, "(self, queryName: str)"),
        Patch(DataStreamWriter, "clusterBy", recording.cluster_by, "(self, *cols: str)"),
        # recorded as the writer's format, and run knowing its batch's session (below)
        Patch(DataStreamWriter, "foreachBatch", _foreach_batch, "(self, func: Callable"),
        Patch(DataStreamWriter, "foreach", recording.foreach, "(self, f: "),
    ),
    Patch(DataFrameWriterV2, "using", recording.using, "(self, provider: str)"),
    Patch(DataFrameWriterV2, "option", recording.option, _OPTION),
    Patch(DataFrameWriterV2, "options", recording.options, _OPTIONS),
    Patch(DataFrameWriterV2, "tableProperty", recording.table_property, "(self, property: str"),
    Patch(DataFrameWriterV2, "partitionedBy", recording.partitioned_by, "(self, col"),
    Patch(DataFrameWriterV2, "clusterBy", recording.cluster_by, "(self, col: str, *cols: str)"),
    # terminal calls: reads
    Patch(DataFrameReader, "load", reads.reader_load, "(self, path: Union[str, List[str]"),
    Patch(DataFrameReader, "table", reads.reader_table, "(self, tableName: str)"),
    Patch(SparkSession, "table", reads.session_table, "(self, tableName: str)"),
    Patch(DataStreamReader, "load", reads.stream_reader_load, "(self, path: Optional[str]"),
    Patch(DataStreamReader, "table", reads.stream_reader_table, "(self, tableName: str)"),
    Patch(DataFrameReader, "changes", reads.reader_changes, "(self, tableName: str)"),
    Patch(DataStreamReader, "changes", reads.reader_changes, "(self, tableName: str)"),
    Patch(SparkSession, "sql", session_sql, "(self, sqlQuery: str, args:"),
    # SQL expression text: the known system's ':' JSON paths on string columns
    Patch(DataFrame, "selectExpr", expressions.select_expr, "(self, *expr: Union[str, List[str]])"),
    Patch(DataFrame, "filter", expressions.filter_, "(self, condition: Union["),
    # sessions Spark derives (foreachBatch's clone, newSession) join the installed one
    Patch(SparkSession, "__init__", sessions.session_init, "(self, sparkContext: 'SparkContext'"),
    # (and foreachBatch's function runs knowing its batch's session: _foreach_batch)
    # terminal calls: writes
    Patch(DataFrameWriter, "save", writes.writer_save, "(self, path: Optional[str] = None"),
    Patch(DataFrameWriter, "saveAsTable", writes.writer_save_as_table, "(self, name: str"),
    Patch(DataFrameWriter, "insertInto", writes.writer_insert_into, "(self, tableName: str"),
    Patch(DataFrame, "writeTo", writes.dataframe_write_to, "(self, table: str)"),
    Patch(DataFrameWriterV2, "append", writes.v2_append, _NONE),
    Patch(DataFrameWriterV2, "overwrite", writes.v2_overwrite, "(self, condition:"),
    Patch(DataFrameWriterV2, "overwritePartitions", writes.v2_overwrite_partitions, _NONE),
    Patch(DataFrameWriterV2, "create", writes.v2_create, _NONE),
    Patch(DataFrameWriterV2, "replace", writes.v2_replace, _NONE),
    Patch(DataFrameWriterV2, "createOrReplace", writes.v2_create_or_replace, _NONE),
    # (either engine: a cloudFiles read without schemaLocation keeps its state in the checkpoint)
    Patch(
        DataStreamWriter,
        "start",
        streams.stream_writer_start,
        "(self, path: Optional[str]",
        streams.file_state_only,
    ),
    Patch(
        DataStreamWriter,
        "toTable",
        streams.stream_writer_to_table,
        "(self, tableName: str",
        streams.file_state_only,
    ),
    # df.writeStream: the whole streaming query is known (unselected _metadata dropped)
    Patch(DataStreamWriter, "__init__", streams.stream_writer_init, "(self, df: 'DataFrame')"),
)

# ``writeStream....table("name")``, as the notes users learn from write it: an alias
# PySpark does not have, added by install() and removed by uninstall().
_ALIAS = (DataStreamWriter, "table")


# The terminal calls that route Delta tables to headwater's engine: on a delta-spark session
# they stay PySpark's (delta-spark serves them; start and toTable bind cloudFiles' file
# state to the checkpoint first, on both engines: Patch.unrouted); the rest (what builders
# were told, the pipelines' reads, cloudFiles' options, spark.sql) serve both engines.
# (``load`` serves both: a pipeline's reads by path are its resolver's; the rest, on
# delta-spark, delta-spark's.)
DELTA_ROUTING = frozenset(
    f"{cls.__name__}.{name}"
    for cls, names in (
        (DataFrameWriter, ("save", "saveAsTable", "insertInto")),
        (DataFrame, ("writeTo",)),
        (DataFrameWriterV2, ("append", "overwrite", "overwritePartitions", "create")),
        (DataFrameWriterV2, ("replace", "createOrReplace")),
        (DataStreamWriter, ("start", "toTable")),
    )
    for name in names
)


def install(delta_routing: bool = True) -> None:
    """Wrap the methods of :data:`PATCHES` (idempotent, process-wide); without
    ``delta_routing``, those of :data:`DELTA_ROUTING` are left to PySpark (and delta-spark)."""
    for patch in PATCHES:
        if not delta_routing and patch.key in DELTA_ROUTING:
            if patch.unrouted is None:
                continue
            patch = replace(patch, make=patch.unrouted)
        patch.apply()
    if not hasattr(DataStreamWriter, _ALIAS[1]):
        DataStreamWriter.table = DataStreamWriter.toTable  # type: ignore[attr-defined]


def uninstall() -> None:
    """Put PySpark's own methods back."""
    if getattr(DataStreamWriter, _ALIAS[1], None) is DataStreamWriter.toTable:
        delattr(DataStreamWriter, _ALIAS[1])
    for patch in reversed(PATCHES):
        patch.restore()


def installed() -> bool:
    return all(p.installed() for p in PATCHES)
