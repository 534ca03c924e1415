"""The ``delta`` Python data source: what Spark calls for ``format("delta")``.

Batch reads here are the exact, general path (any partition encoding, file skipping from
log stats); ``spark.read.format("delta").load`` normally takes the native Parquet path in
:mod:`headwater.delta.read.batch` instead. Streaming reads always come here
(:mod:`headwater.delta.read.stream`). Writes are routed by :mod:`headwater.adapter`
to :mod:`headwater.delta.write.batch`, which uses Spark's native Parquet writer.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    EqualTo,
    Filter,
    In,
    InputPartition,
)
from pyspark.sql.types import StringType, StructField, StructType

from headwater.delta.files.arrow_read import (
    FilePartition,
    FileTask,
    physical_for,
    plan_partitions,
    read_files,
)
from headwater.delta.log.delta_log import DeltaLog
from headwater.delta.options import READ_OPTIONS, STREAM_READ_OPTIONS, check_known
from headwater.delta.read import change_feed as cdf
from headwater.delta.read.skipping import keep_mask
from headwater.delta.read.stream import DeltaStreamReader
from headwater.errors import OptionError

FILE_COLUMN_OPTION = "headwater.filepathcolumn"


class DeltaDataSource(DataSource):
    """Delta tables by path (``load(path)``), or the fixed table of a catalog subclass."""

    table_path: str | None = None  # set by catalog subclasses (one per named table)

    @classmethod
    def name(cls) -> str:
        return "delta"

    def _path(self) -> str:
        path = self.table_path or self.options.get("path")
        if not path:
            raise OptionError("Reading format('delta') needs a path: .load('/path/to/table').")
        return path

    def schema(self) -> StructType:
        opts = self.options
        if cdf.requested(dict(opts)):
            snapshot = DeltaLog(self._path()).snapshot()
            snapshot.check_readable()
            return cdf.cdf_schema(snapshot.schema)
        version = opts.get("versionAsOf")
        snapshot = DeltaLog(self._path()).snapshot(
            version=version, timestamp=opts.get("timestampAsOf")
        )
        snapshot.check_readable()
        file_column = opts.get(FILE_COLUMN_OPTION)
        if file_column:  # internal: DML finds the files holding the rows it touches
            return StructType([*snapshot.schema.fields, StructField(file_column, StringType())])
        return snapshot.schema

    def reader(self, schema: StructType) -> DataSourceReader:
        opts = check_known(dict(self.options), READ_OPTIONS, "reading a delta table")
        if cdf.requested(opts):
            return ChangeFeedReader(self._path(), opts, schema)
        return DeltaBatchReader(self._path(), dict(self.options), schema)

    def streamReader(self, schema: StructType):
        opts = check_known(dict(self.options), STREAM_READ_OPTIONS, "streaming from a delta table")
        return DeltaStreamReader(self._path(), opts, schema)


class DeltaBatchReader(DataSourceReader):
    def __init__(self, path: str, options: dict[str, str], schema: StructType) -> None:
        self.path = path
        self.options = options
        self.schema = schema
        self.filters: list[Filter] = []

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        # Used only to skip files; every filter goes back to Spark, which applies it.
        self.filters = list(filters)
        yield from filters

    def partitions(self) -> Sequence[InputPartition]:
        # Spark hands Python sources their options with lower-cased keys.
        opts = {k.lower(): v for k, v in self.options.items()}
        snapshot = DeltaLog(self.path).snapshot(
            version=opts.get("versionasof"), timestamp=opts.get("timestampasof")
        )
        snapshot.check_readable()
        snapshot.check_python_readable()
        files = snapshot.files
        if self.filters and files:
            mask = keep_mask(snapshot.add_actions, self.filters, snapshot.partition_columns)
            keep = pa.array(mask).to_pylist()
            files = [f for f, k in zip(files, keep, strict=True) if k]
        wanted = self._wanted_paths(opts.get(FILE_COLUMN_OPTION))
        if wanted is not None:
            files = [f for f in files if f.absolute(snapshot.root) in wanted]
        dvs = snapshot.deletion_vectors
        tasks = [
            FileTask(
                f.absolute(snapshot.root),
                f.size,
                tuple(sorted(f.partition_values.items())),
                dvs.get(f.path),
            )
            for f in files
        ]
        return plan_partitions(tasks, physical=physical_for(snapshot, self.schema))

    def _wanted_paths(self, file_column: str | None) -> set[str] | None:
        """The files named by an ``IN``/``=`` filter on the file column (DML's rewrite)."""
        if not file_column:
            return None
        wanted = None
        for flt in self.filters:
            if isinstance(flt, (In, EqualTo)) and flt.attribute == (file_column,):
                values = set(flt.value) if isinstance(flt, In) else {flt.value}
                wanted = values if wanted is None else wanted & values
        return wanted

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, FilePartition)
        opts = {k.lower(): v for k, v in self.options.items()}
        file_column = opts.get(FILE_COLUMN_OPTION)
        if not file_column:
            yield from read_files(partition.tasks, self.schema, partition.physical_schema)
            return
        data = StructType([f for f in self.schema.fields if f.name != file_column])
        physical = partition.physical_schema
        if physical is not None:
            physical = StructType([f for f in physical.fields if f.name != file_column])
        for task in partition.tasks:
            for batch in read_files([task], data, physical):
                path = pa.repeat(pa.scalar(task.path, pa.string()), batch.num_rows)
                yield pa.RecordBatch.from_arrays(
                    [*batch.columns, path], names=[*batch.schema.names, file_column]
                )


class ChangeFeedReader(DataSourceReader):
    """``readChangeFeed``: the changes of a version range, in batch."""

    def __init__(self, path: str, options: dict[str, str], schema: StructType) -> None:
        self.path = path
        self.options = options
        self.schema = schema

    def partitions(self) -> Sequence[InputPartition]:
        dlog = DeltaLog(self.path)
        start, end = cdf.resolve_range(dlog, self.options)
        tasks = cdf.range_tasks(dlog, start, end)
        physical = physical_for(dlog.snapshot(), cdf.data_part(self.schema))
        return plan_partitions(tasks, physical=physical)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, FilePartition)
        yield from cdf.read_changes(partition.tasks, self.schema, partition.physical_schema)
