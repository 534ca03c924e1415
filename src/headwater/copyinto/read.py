"""Reading the planned files on executors, as Arrow batches, into a Spark DataFrame.

The files are split into groups of similar size (:func:`plan.balanced_groups`), one row
and one partition per group (:func:`group_frame`), and ``mapInArrow`` gives one task per
group: each task parses its files with the shared file-format readers
(:func:`headwater.formats.read_file`: pyarrow's C++ readers, values placed into the read
schema's types, the same readers and options as Auto Loader) and yields Arrow batches of up
to 64k rows, never Python rows. The DataFrame then flows into Spark's native Parquet writer,
so no file is read twice and nothing is collected on the driver.

A value that does not fit its column (a field the table lacks, a string in an int column,
a malformed JSON line) is never dropped silently: it lands in the ``rescuedDataColumn`` when
one is set; otherwise the reader rescues it into a hidden column and ``mode`` decides:
``FAILFAST`` (the default) fails the load naming the file and the value, ``DROPMALFORMED``
drops the row (and the reader drops CSV rows with too few values, as Spark does). ``PERMISSIVE`` (Spark's default, chosen explicitly here) reads as Spark does:
null in place of a misfit, and the record's text in the ``columnNameOfCorruptRecord`` column
when the table has one. Corrupt files (bad compression or encoding, unreadable Parquet) fail
the load unless ``ignoreCorruptFiles``; skipped ones are reported to the driver through an
accumulator and contribute no rows (each file is read whole before any of its rows go out).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.accumulators import AccumulatorParam
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StringType, StructField, StructType

from headwater.autoloader.discovery import partition_values
from headwater.errors import HeadwaterError
from headwater.formats import CorruptFileError, FormatOptions, read_file
from headwater.sqltypes import as_nullable

log = logging.getLogger(__name__)

MISFIT = "__headwater_misfit"  # the hidden rescue column when the user set none
BATCH_ROWS = 65536
_SHOWN = 300  # characters of a misfit value quoted in an error


class BadDataError(HeadwaterError):
    """A source file holds data that cannot be loaded as asked (names the file)."""


class _PathSet(AccumulatorParam):
    """Paths reported by tasks; a set, so a retried task cannot count a file twice."""

    def zero(self, value):
        return frozenset()

    def addInPlace(self, a, b):
        return frozenset(a) | frozenset(b)


@dataclass
class ReadTask:
    """Everything an executor needs, as plain picklable values."""

    groups: list[list[tuple[str, int]]]
    format: str
    data: StructType  # the read schema (partition keys included)
    options: FormatOptions
    rescue: str | None  # the user's rescue column
    mode: str
    ignore_corrupt: bool
    ignore_missing: bool
    base: str  # the source directory the partition keys are relative to
    partition_keys: list[str] = field(default_factory=list)

    @property
    def output(self) -> StructType:
        fields = [StructField(f.name, as_nullable(f.dataType), True) for f in self.data]
        if self.rescue:
            fields.append(StructField(self.rescue, StringType(), True))
        return StructType(fields)

    @property
    def reader_rescue(self) -> str | None:
        """The rescue column the reader fills: the user's; none for PERMISSIVE (the reader
        applies it, as Spark does); else the hidden one ``mode`` is applied to here."""
        if self.rescue or self.format == "binaryfile" or self.mode == "permissive":
            return self.rescue
        return MISFIT

    @property
    def reader_options(self) -> FormatOptions:
        """FAILFAST is judged here, on the hidden rescue column, so the error quotes the first
        value that does not fit; DROPMALFORMED also lets the reader drop what it cannot keep
        (records that do not parse, CSV rows with too few values)."""
        return replace(self.options, mode=None) if self.mode == "failfast" else self.options


def corrupt_accumulator(spark: SparkSession):
    return spark.sparkContext.accumulator(frozenset(), _PathSet())


def group_frame(spark: SparkSession, groups: list[list[tuple[str, int]]]) -> DataFrame:
    """One row (``files``: the group as JSON) per group, each in a partition of its own, so
    each Spark task gets its group with its data, not every group in its closure (a load of
    a million files ships each path once)."""
    rows = [(json.dumps(g),) for g in groups]
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, len(rows)), "files string")


def source_dataframe(spark: SparkSession, task: ReadTask, corrupt) -> DataFrame:
    """The rows of every file of ``task``: columns ``task.output``, one Spark task per group."""
    run = _run(replace(task, groups=[]), corrupt)
    return group_frame(spark, task.groups).mapInArrow(run, task.output)


def _run(task: ReadTask, corrupt) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        target = to_arrow_schema(task.output, timezone="UTC")
        pending: list[pa.RecordBatch] = []
        count = 0
        for batch in batches:
            for group in batch.column(0).to_pylist():
                for path, _size in json.loads(group):
                    for rb in _read(task, path, target, corrupt):
                        pending.append(rb)
                        count += rb.num_rows
                        if count >= BATCH_ROWS:
                            yield from _flush(pending, target)
                            pending, count = [], 0
        if pending:
            yield from _flush(pending, target)

    return run


def _flush(pending: list[pa.RecordBatch], target: pa.Schema) -> Iterator[pa.RecordBatch]:
    table = pa.Table.from_batches(pending, schema=target).combine_chunks()
    yield from table.to_batches(max_chunksize=BATCH_ROWS)


def _read(task: ReadTask, path: str, target: pa.Schema, corrupt) -> Iterator[pa.RecordBatch]:
    try:
        batches: Iterable[pa.RecordBatch] = read_file(
            path, task.data, task.reader_options, task.reader_rescue
        )
        if task.ignore_corrupt:
            batches = list(batches)  # all or nothing: a file failing midway adds no rows
        for batch in batches:
            batch = _misfits(task, path, _partitions(task, path, batch))
            if batch.num_rows:
                yield pa.RecordBatch.from_arrays(batch.columns, schema=target)
    except FileNotFoundError as e:
        if task.ignore_missing:
            log.warning("COPY INTO: %s disappeared before it was read; skipped", path)
            return
        raise BadDataError(
            f"Source file {path} was deleted during COPY INTO. Set "
            "FORMAT_OPTIONS('ignoreMissingFiles'='true') to skip files that disappear."
        ) from e
    except CorruptFileError as e:
        if task.ignore_corrupt:
            log.warning("COPY INTO: skipped corrupt file %s (ignoreCorruptFiles): %s", path, e)
            corrupt.add(frozenset([path]))
            return
        raise BadDataError(
            f"{e}. Set FORMAT_OPTIONS('ignoreCorruptFiles'='true') to skip corrupt files."
        ) from e


def _partitions(task: ReadTask, path: str, batch: pa.RecordBatch) -> pa.RecordBatch:
    """Partition columns take the value of their ``k=v`` directory."""
    if not task.partition_keys:
        return batch
    values = {k.lower(): v for k, v in partition_values(task.base, path).items()}
    columns = list(batch.columns)
    for i, name in enumerate(batch.schema.names):
        if name.lower() not in values or name == task.reader_rescue:
            continue
        value, kind = values[name.lower()], batch.schema.field(i).type
        text = pa.array([value] * batch.num_rows, pa.string())
        try:
            columns[i] = text if kind == pa.string() else pc.cast(text, kind)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise BadDataError(
                f"Partition value {name}={value!r} in the path of {path} is not a {kind}: {e}"
            ) from e
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def _misfits(task: ReadTask, path: str, batch: pa.RecordBatch) -> pa.RecordBatch:
    """Apply ``mode`` to the rows whose values did not fit; drop the hidden column."""
    if task.reader_rescue != MISFIT:
        return batch
    i = batch.schema.get_field_index(MISFIT)
    misfit = batch.column(i)
    bad = misfit.is_valid()
    if misfit.null_count < len(misfit):
        if task.mode == "failfast":
            first = misfit.filter(bad)[0].as_py()
            first = re.sub(r',"_file_path":.*\}$', "}", first)
            shown = first if len(first) <= _SHOWN else first[:_SHOWN] + "..."
            raise BadDataError(
                f"[COPY_INTO_BAD_DATA] File {path} holds {pc.sum(bad).as_py()} row(s) whose values "
                f"do not fit the table's columns (a column the table lacks, a value of another "
                f"type, or a malformed record), e.g. {shown}. Set COPY_OPTIONS('mergeSchema'="
                "'true') for new columns, FORMAT_OPTIONS('rescuedDataColumn'='_rescued_data') to "
                "keep such values in a column, 'mode'='DROPMALFORMED' to skip those rows, or "
                "'mode'='PERMISSIVE' to load null in their place."
            )
        if task.mode == "dropmalformed":
            batch = batch.filter(pc.invert(bad))
    return batch.drop_columns([MISFIT])
