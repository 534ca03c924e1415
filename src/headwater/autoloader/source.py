"""The ``cloudFiles`` streaming source (Auto Loader).

Driver (the stream reader, one long-lived process): discovery into the durable file state,
admission control, offsets ``{"seq": n, "state": id}`` that index the discovery log.
Executors: each task parses its files into Arrow batches (:mod:`headwater.formats`),
rescuing what does not fit, and adds partition values from ``k=v`` paths. A file whose new
columns the schema lacks stops the query in ``addNewColumns`` mode after recording the
widened schema, so the next start reads them (see
:func:`headwater.autoloader.run_with_schema_evolution`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxFiles,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from headwater import formats, storage, stream_runner
from headwater.autoloader import file_metadata, small_files
from headwater.autoloader.discovery import (
    list_after,
    list_source,
    partition_values,
    stat_landed,
)
from headwater.autoloader.landing_probe import LandingProbe
from headwater.autoloader.notifications import SAFETY_LISTING_MS, FileEvents, IdleWait
from headwater.autoloader.options import CloudFilesOptions
from headwater.autoloader.schema import (
    SchemaInferenceError,
    SchemaStore,
    apply_hints,
    infer,
    sample,
)
from headwater.autoloader.state import FileState
from headwater.errors import HeadwaterError, OptionError
from headwater.sqltypes import arrow_schema

log = logging.getLogger(__name__)

USER_SCHEMA_OPTION = "headwater.userschema"  # set by the DataStreamReader hook
TARGET_PARTITION_BYTES = 64 * 1024 * 1024
# The fields of Spark's ``_metadata`` column for file sources that say where a row came from.
FILE_METADATA = StructType(
    [
        StructField("file_path", StringType(), False),
        StructField("file_name", StringType(), False),
        StructField("file_size", LongType(), False),
        StructField("file_modification_time", TimestampType(), False),
    ]
)
MAX_FILES_PER_PARTITION = 256


class UnknownFieldsError(HeadwaterError):
    """New columns arrived; the stream stops so the next start reads them."""


class CorruptSourceFileError(HeadwaterError):
    """A source file could not be read and ``ignoreCorruptFiles`` is off."""


@dataclass(frozen=True)
class ResolvedSchema:
    data: StructType  # columns parsed from file contents
    partitions: list[str]
    rescue: str | None
    given: StructType | None = None  # a user's schema is the output schema, as is
    metadata: str | None = None  # headwater.fileMetadataColumn
    hidden: str | None = None  # Spark's _metadata, last (hidden from the DataFrame's columns)

    @property
    def full(self) -> StructType:
        if self.given is not None:
            fields = list(self.given.fields)
        else:
            fields = list(self.data.fields)
            names = {f.name.lower() for f in fields}
            fields += [
                StructField(p, StringType(), True)
                for p in self.partitions
                if p.lower() not in names
            ]
            if self.rescue:
                fields.append(StructField(self.rescue, StringType(), True))
        if self.metadata and self.metadata not in {f.name for f in fields}:
            fields.append(StructField(self.metadata, FILE_METADATA, False))
        if self.hidden:
            fields.append(file_metadata.field(self.hidden))
        return StructType(fields)

    def with_hidden_metadata(self, wanted: bool) -> ResolvedSchema:
        """This schema with Spark's ``_metadata`` column last when ``wanted``, named after
        the columns it must not clash with."""
        if not wanted:
            return self
        return replace(self, hidden=file_metadata.column_name(self.full.fieldNames()))


def resolve_schema(
    path: str, opts: CloudFilesOptions, user_schema: StructType | None = None
) -> ResolvedSchema:
    """The schema of a stream: given, stored, or inferred now (and stored). binaryFile's
    is fixed: without a schema location it is inferred (its partition columns) at each
    start, as nothing needs a stored version of it."""
    if user_schema is not None:
        rescue = opts.rescue_column
        if rescue is None and any(f.name == "_rescued_data" for f in user_schema):
            rescue = "_rescued_data"
        names = {f.name for f in user_schema}
        parts = [p for p in (opts.partition_columns or []) if p in names]
        hidden = next((f.name for f in user_schema if file_metadata.is_field(f)), None)
        given = StructType(
            [f for f in user_schema if f.name not in (opts.file_metadata_column, hidden)]
        )
        data = StructType([f for f in given if f.name != rescue and f.name not in parts])
        return ResolvedSchema(data, parts, rescue, given, opts.file_metadata_column, hidden)
    store = (
        SchemaStore(opts.location) if opts.schema_location or opts.format != "binaryfile" else None
    )
    latest = store.latest() if store is not None else None
    if latest is not None:
        _, data, parts = latest
    else:
        files = list(list_source(path, opts, now_ms=int(time.time() * 1000)))
        if not files and not opts.schema_hints and opts.format != "binaryfile":
            raise SchemaInferenceError(
                f"No files in {path} to infer a schema from. Give the schema with .schema(...) or "
                "cloudFiles.schemaHints, or start the stream once files have landed."
            )
        data, parts = infer(sample(files), opts, path)
        data = apply_hints(data, opts.schema_hints)
        if store is not None:
            store.write(data, parts, "initial inference")
    # Hints apply to data columns; partition columns are strings from the paths.
    data = apply_hints(data, opts.schema_hints)
    resolved = ResolvedSchema(data, parts, opts.rescue_column, metadata=opts.file_metadata_column)
    return resolved.with_hidden_metadata(opts.hidden_file_metadata)


class CloudFilesDataSource(DataSource):
    """``spark.readStream.format("cloudFiles").option("cloudFiles.format", ...).load(path)``"""

    @classmethod
    def name(cls) -> str:
        return "cloudFiles"

    def _path(self) -> str:
        path = self.options.get("path")
        if not path:
            raise OptionError("The cloudFiles source needs a directory: .load('/path/to/landing').")
        return storage.normalize(path)

    def _options(self, user_schema: bool) -> CloudFilesOptions:
        opts = {k: v for k, v in self.options.items() if k.lower() != USER_SCHEMA_OPTION}
        return CloudFilesOptions.parse(opts, user_schema=user_schema)

    def schema(self) -> StructType:
        return resolve_schema(self._path(), self._options(False)).full

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        user = str(self.options.get(USER_SCHEMA_OPTION, "false")).lower() == "true"
        opts = self._options(user)
        resolved = resolve_schema(self._path(), opts, schema if user else None)
        return CloudFilesStreamReader(self._path(), opts, resolved)


class FilesPartition(InputPartition):
    """Files (path, size, modification time in ms) read by one task."""

    def __init__(self, files: list[tuple[str, int, int]]) -> None:
        super().__init__(files)
        self.files = files

    def input_bytes(self) -> int:
        """What the task reads (a stream's sink collects a small batch to the driver:
        headwater.delta.write.small_batch)."""
        return sum(size for _, size, _ in self.files)


class CloudFilesStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, path: str, opts: CloudFilesOptions, schema: ResolvedSchema) -> None:
        stream_runner.pyarrow_without_pandas()  # (the stream's start: headwater.stream_runner)
        self.path = path
        self.opts = opts
        self.resolved = schema
        self.target: int | None = None
        self._state: FileState | None = None
        self._last_full_listing: int | None = None  # epoch ms; None: none yet in this run
        self._events: FileEvents | None = None  # cloudFiles.useNotifications, once started
        self.available_now = False  # Trigger.AvailableNow: one listing, nothing to wait for
        self._idle = IdleWait()
        self._probe: LandingProbe | None = None  # listing mode on a local folder, once used

    @property
    def state(self) -> FileState:
        if self._state is None:
            self._state = FileState(self.opts.file_state_location)
        return self._state

    def __getstate__(self):  # executors get a copy without the SQLite connection
        d = dict(self.__dict__)
        d["_state"] = None
        d["_events"] = None
        d["_probe"] = None
        return d

    def stop(self) -> None:
        if self._events is not None:
            self._events.stop()

    # -- offsets ---------------------------------------------------------------------------

    def _offset(self, seq: int) -> dict:
        return {"seq": seq, "state": self.state.state_id}

    def _seq(self, offset: dict) -> int:
        if offset.get("state") not in (None, self.state.state_id):
            raise HeadwaterError(
                f"The checkpoint refers to file state {offset.get('state')}, but "
                f"{self.state.dir} holds state {self.state.state_id}: the file state was "
                "replaced. Use a new checkpoint, or restore the schema location."
            )
        return int(offset["seq"])

    def discover(self) -> int:
        now = int(time.time() * 1000)
        events = self._watch()
        if events is not None and not self._listing_due(now):
            landed, relist = events.take()
            if not relist:
                found = stat_landed(self.path, landed, self.opts, now)
                listed = ((f.path, f.size, f.mtime_ms) for f in found)
                return self.state.record(listed, self.opts.allow_overwrites)
        if events is not None:
            events.take()  # what lands from now on is announced again after this listing
            self._last_full_listing = None  # a full listing, not one after the last name
        last = self.listing_start(now)
        if last is None:
            found = list_source(self.path, self.opts, now)
            self._last_full_listing = now
        else:
            found = list_after(self.path, last, self.opts, now)
        listed = ((f.path, f.size, f.mtime_ms) for f in found)
        added = self.state.record(listed, self.opts.allow_overwrites)
        if added:
            how = "full" if last is None else "incremental"
            log.info("cloudFiles %s: discovered %d new file(s) (%s listing)", self.path, added, how)
        return added

    def _watch(self) -> FileEvents | None:
        """The file events of the landing folder in notification mode (started on first
        use), None when the stream lists: not asked for, an object store, or no folder."""
        if not self.opts.use_notifications or self.available_now:
            return None
        if self._events is None:
            if storage.is_remote(self.path):
                log.info(
                    "cloudFiles.useNotifications: no file notification service for %s; "
                    "Auto Loader lists the directory at each trigger instead",
                    self.path,
                )
                self.opts = replace(self.opts, use_notifications=False)
                return None
            root = storage.stat(self.path)
            if root is None or root.is_file:
                return None  # watched once the folder exists; listed until then
            self._events = FileEvents(self.path)
        return self._events if self._events.start() else None

    def _listing_due(self, now: int) -> bool:
        """A full listing in notification mode: the first of the run, then every
        ``backfillInterval`` (default one minute), the safety net for missed events."""
        if self._last_full_listing is None:
            return True
        interval = self.opts.backfill_interval_ms or SAFETY_LISTING_MS
        return now - self._last_full_listing >= interval

    def listing_start(self, now: int) -> str | None:
        """The path to list after, or None for a full listing: the first of each run, every
        ``cloudFiles.backfillInterval``, and always when names do not sort in arrival order
        (``auto`` decides that from the files seen, and only on object stores, where
        listing after a key saves requests)."""
        mode = self.opts.incremental_listing
        if mode == "false" or self._last_full_listing is None:
            return None
        interval = self.opts.backfill_interval_ms
        if interval is not None and now - self._last_full_listing >= interval:
            return None
        if mode == "auto" and not (storage.is_remote(self.path) and self.state.arrival_ordered()):
            return None
        return self.state.last_path()

    def initialOffset(self) -> dict:
        self.discover()
        if not self.opts.include_existing:
            seq = self.state.max_seq()
            self.state.mark_skipped_upto(seq)
            return self._offset(seq)
        return self._offset(0)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_bytes is not None and self.opts.max_files == 1000:
            return ReadMaxBytes(self.opts.max_bytes)
        return ReadMaxFiles(self.opts.max_files or 1000)

    def prepareForTriggerAvailableNow(self) -> None:
        self.available_now = True
        self.discover()
        self.target = self.state.max_seq()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        after = self._seq(start)
        # Spark asks for the next offset only once the batch ending at ``start`` is in
        # the sink; its own commit() call for that batch comes later, or never for the last.
        self._mark_committed(after)
        started = time.monotonic()
        probe = self._landing_probe()
        if self.target is None:
            probe = probe if probe is not None and probe.mark() else None
            self.discover()
        end = self._admit(after, limit)
        if end == after and self.target is None:
            # Nothing new: wait for a file to land rather than for the next trigger.
            deadline = started + self._idle.seconds(started)  # the listing counts in it
            end = self._wait_for_files(after, limit, deadline, probe)
        if end == after:
            self._idle.idle(started)
        else:
            self._idle.busy()
        return self._offset(end)

    def _wait_for_files(
        self, after: int, limit: ReadLimit, deadline: float, probe: LandingProbe | None
    ) -> int:
        """The end of a batch of files landing before ``deadline`` (monotonic), told by
        file events or by the landing folder's directory times (listing mode); ``after``
        when none."""
        if self._events is not None:
            if not self._events.wait(deadline - time.monotonic()):
                return after
            self.discover()
            return self._admit(after, limit)
        while probe is not None and probe.wait(deadline - time.monotonic()):
            probe.mark()  # what lands while the folder is listed is the next change
            self.discover()
            end = self._admit(after, limit)
            if end != after:
                return end
        return after

    def _landing_probe(self) -> LandingProbe | None:
        """The directory-time probe of a listing stream on a local or mounted folder (not
        with file events, ``availableNow`` or on an object store)."""
        if self.opts.use_notifications or self.available_now or storage.is_remote(self.path):
            return None
        if self._probe is None:
            self._probe = LandingProbe(self.path)
        return self._probe

    def _admit(self, after: int, limit: ReadLimit) -> int:
        unlimited = isinstance(limit, ReadAllAvailable)
        return self.state.admit(
            after,
            None if unlimited else self.opts.max_files,
            None if unlimited else self.opts.max_bytes,
            upto=self.target,
        )

    def reportLatestOffset(self) -> dict:
        """Shown as ``latestOffset`` in the query progress: the backlog of the stream."""
        n, size = self.state.outstanding()
        return {"seq": self.state.max_seq(), "numFilesOutstanding": n, "numBytesOutstanding": size}

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        entries = self.state.between(self._seq(start), self._seq(end))
        self.state.note_reading(self._seq(end))  # read now: no longer in the backlog
        parts: list[FilesPartition] = []
        current: list[tuple[str, int, int]] = []
        size = 0
        for e in entries:
            if current and (
                size + e.size > TARGET_PARTITION_BYTES or len(current) >= MAX_FILES_PER_PARTITION
            ):
                parts.append(FilesPartition(current))
                current, size = [], 0
            current.append((e.path, e.size, e.modification_time))
            size += e.size
        if current:
            parts.append(FilesPartition(current))
        return parts

    def commit(self, end: dict) -> None:
        self._mark_committed(self._seq(end))

    def _mark_committed(self, seq: int) -> None:
        self.state.mark_committed(seq)
        now = int(time.time() * 1000)
        if self.opts.clean_source != "off":
            self._clean(now)
        if self.opts.max_file_age_ms:
            self.state.forget_older_than(now - self.opts.max_file_age_ms, seq)

    def _clean(self, now: int) -> None:
        done = []
        for entry in self.state.to_archive(now - self.opts.clean_retention_ms):
            try:
                if self.opts.clean_source == "delete":
                    storage.delete_file(entry.path)
                else:
                    rel = storage.relative(entry.path, self.path)
                    destination = storage.normalize(self.opts.move_destination or "")
                    storage.move(entry.path, storage.join(destination, rel))
                done.append(entry.seq)
            except OSError as e:  # best effort, retried at the next commit
                log.warning(
                    "cloudFiles.cleanSource could not %s %s: %s",
                    self.opts.clean_source,
                    entry.path,
                    e,
                )
        if done:
            self.state.mark_archived(done)

    # -- data (executors) ------------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, FilesPartition)
        target = arrow_schema(self.resolved.full)
        detect = self.opts.evolution_mode in ("addnewcolumns", "failonnewcolumns")
        rescue = self.resolved.rescue
        if small_files.applies(self.opts.format_options, partition.files):
            fmt = self.opts.format_options
            together = small_files.read_together(
                partition.files, self.resolved.data, fmt, rescue, detect
            )
            if together is not None:
                yield from self._rows_together(*together, partition.files, target)
                return
        for path, size, mtime in partition.files:
            parts: dict[str, Any] = (
                dict(partition_values(self.path, path)) if self.resolved.partitions else {}
            )
            if self.resolved.metadata:
                parts[self.resolved.metadata] = source_file(path, size, mtime)
            try:
                for batch in formats.read_file(
                    path,
                    self.resolved.data,
                    self.opts.format_options,
                    rescue,
                    detect_new=detect,
                ):
                    if self.resolved.hidden:
                        hidden = file_metadata.arrow_column(path, size, mtime, batch.num_rows)
                        parts[self.resolved.hidden] = hidden
                    yield _with_partitions(batch, target, parts, self.resolved)
            except formats.NewColumnsFound as e:
                self._on_new_columns(e)
            except FileNotFoundError as e:
                if self.opts.ignore_missing:
                    log.warning(
                        "cloudFiles: %s disappeared before it was read; skipped (ignoreMissingFiles)",
                        path,
                    )
                    continue
                raise CorruptSourceFileError(
                    f"Source file {path} was deleted after it was discovered. Set ignoreMissingFiles=true "
                    "to skip such files."
                ) from e
            except formats.CorruptFileError as e:
                if self.opts.ignore_corrupt:
                    log.warning(
                        "cloudFiles: skipped corrupt file %s (ignoreCorruptFiles): %s", path, e
                    )
                    continue
                raise CorruptSourceFileError(
                    f"{e}. Set ignoreCorruptFiles=true to skip corrupt files (they stay in the file state)."
                ) from e

    def _rows_together(
        self, table: pa.Table, counts: list[int], files: list, target: pa.Schema
    ) -> Iterator[pa.RecordBatch]:
        """The rows of many files read at once (:mod:`headwater.autoloader.small_files`)
        with their per-file columns, as :func:`_with_partitions` adds them file by file."""
        r = self.resolved
        arrays: list[pa.Array | pa.ChunkedArray] = []
        for field in target:
            if field.name in table.column_names:
                arrays.append(table.column(field.name))
            elif field.name == r.metadata:
                values = pa.array([source_file(*f) for f in files], field.type)
                arrays.append(small_files.per_row(values, counts))
            elif field.name == r.hidden:
                arrays.append(small_files.hidden_metadata(files, counts))
            elif field.name in r.partitions:
                found = [partition_values(self.path, f[0]).get(field.name) for f in files]
                column = small_files.per_row(pa.array(found, pa.string()), counts)
                arrays.append(column.cast(field.type) if field.type != pa.string() else column)
            else:
                arrays.append(pa.nulls(len(table), field.type))
        rows = pa.Table.from_arrays(arrays, schema=target).combine_chunks()
        yield from rows.to_batches(max_chunksize=65536)

    def _on_new_columns(self, found: formats.NewColumnsFound) -> None:
        names = ", ".join(found.columns)
        if self.opts.evolution_mode == "failonnewcolumns":
            raise UnknownFieldsError(
                f"[UNKNOWN_FIELD_EXCEPTION.NEW_FIELDS_IN_FILE] New column(s) {names} in file {found.path}; "
                "cloudFiles.schemaEvolutionMode is failOnNewColumns. Add them with cloudFiles.schemaHints "
                "or .schema(), or use addNewColumns or rescue."
            )
        store = SchemaStore(self.opts.location)
        latest = store.latest()
        current = latest[1] if latest else self.resolved.data
        parts = latest[2] if latest else self.resolved.partitions
        file_schema = formats.infer_file(
            found.path, self.opts.format_options, self.opts.infer_column_types
        )
        added = StructType(
            [f for f in file_schema if f.name.lower() in {c.lower() for c in found.columns}]
        )
        version = store.write(
            formats.merge(current, added), parts, f"new columns {names} in {found.path}"
        )
        raise UnknownFieldsError(
            f"[UNKNOWN_FIELD_EXCEPTION.NEW_FIELDS_IN_FILE] Encountered new column(s) {names} in file "
            f"{found.path}. Auto Loader added them to the schema (version {version} in "
            f"{store.dir}); restart the stream to read them. "
            "headwater.autoloader.run_with_schema_evolution() restarts automatically."
        )


def _with_partitions(
    batch: pa.RecordBatch, target: pa.Schema, parts: dict, resolved: ResolvedSchema
) -> pa.RecordBatch:
    n = batch.num_rows
    arrays = []
    for field in target:
        if field.name in batch.schema.names:
            arrays.append(batch.column(field.name))
        elif field.name == resolved.metadata:
            arrays.append(pa.array([parts[field.name]] * n, field.type))
        elif field.name == resolved.hidden:
            arrays.append(parts[field.name])
        elif field.name in resolved.partitions:
            value = parts.get(field.name)
            column = (
                pa.array([value] * n, pa.string())
                if value is not None
                else pa.nulls(n, pa.string())
            )
            arrays.append(column.cast(field.type) if field.type != pa.string() else column)
        else:
            arrays.append(pa.nulls(n, field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def source_file(path: str, size: int, mtime_ms: int) -> dict:
    """The ``headwater.fileMetadataColumn`` value of every row of one file."""
    return {
        "file_path": path,
        "file_name": path.rstrip("/").rsplit("/", 1)[-1],
        "file_size": size,
        "file_modification_time": mtime_ms * 1000,
    }
