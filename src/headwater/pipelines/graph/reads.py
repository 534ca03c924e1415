"""Reads of datasets by name while a definition runs: the pipeline's answer to
``spark.table``, ``spark.readStream.table``, ``dlt.read*`` and ``spark.sql``.

Installed through :mod:`headwater.adapter.resolution` for one evaluation of one flow. It
turns a name as written (``x``, ``LIVE.x``, ``db.x``) into a dataset of the pipeline,
records the read (the graph's edges come from these records, never from users), and asks
its ``source`` callback for the rows: the graph's analysis answers with empty stand-ins of
the right schema, the runner with the real tables. Names that are not the pipeline's go
on to Spark as usual, but for batch reads of Delta tables (by name, in headwater's catalog
or Spark's, or by path): those are versioned inputs, keyed by their location
(:func:`outside_key`, never a dataset's key), recorded in :attr:`PipelineReads.outside`
and read through ``source`` like a dataset, so a materialized view over them is refreshed
by their versions as over the pipeline's own tables. SQL text is parsed by the pipeline's SQL front, its dataset reads
(``STREAM(x)``, ``read_files``/``cloud_files``, ``read_kafka``) become temporary views, and
Spark runs the rewritten query.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame

from headwater import api
from headwater.adapter.resolution import resolving
from headwater.catalog.names import delta_path, parse
from headwater.errors import OptionError, PipelineDefinitionError
from headwater.pipelines.define.elements import Origin
from headwater.pipelines.graph.kafka import read_kafka
from headwater.pipelines.sql_files.queries import FileSource, Reference, SqlQuery, parse_query
from headwater.sql import functions
from headwater.sql.functions import guess_format
from headwater.sql.kafka_arguments import KafkaSource

SQL_QUERY_STARTS = ("select", "with", "from", "values", "table", "(")


@dataclass(frozen=True)
class Names:
    """Dataset names as the pipeline keys them: ``database.table``, lower case; the
    ``LIVE.`` prefix only says "of this pipeline"."""

    database: str | None

    def key(self, name: str) -> str:
        text = name.strip()
        if text.lower().startswith("live."):
            text = text[5:]
        try:
            parsed = parse(text)
        except OptionError as e:
            raise PipelineDefinitionError(f"[PIPELINE_INVALID_NAME] {e}") from None
        explicit = "." in text.replace("`.`", ".")
        if not explicit and self.database:
            return f"{self.database.lower()}.{parsed.table}"
        return str(parsed)


Source = Callable[["PipelineReads", str, bool, Mapping[str, str]], DataFrame]


def outside_key(location: str) -> str:
    """The key of a Delta table outside the pipeline read as an input: its location as a
    ``delta.`/path``` name, which :func:`headwater.api.table` opens on either engine and
    no dataset's key (``database.table``) can equal."""
    return f"delta.`{location}`"


def unnarrowed(df: DataFrame) -> DataFrame:
    """``df`` (a read of a Delta table) as a plain DataFrame, for a materialized view's
    query. A headwater scan's ``filter``/``where`` narrows its file list to the files the
    log's stats admit (as delta-spark skips files): the query then reads another relation
    than the input's read holds, which the view's refresh plan cannot tell for a read of
    that input, so it would recompute the view. Spark's Parquet reader still skips row
    groups by the pushed filters."""
    return ClassicDataFrame(df._jdf, df.sparkSession)


@dataclass
class PipelineReads:
    """One evaluation's reads. ``source(reads, key, streaming)`` gives the rows of a
    dataset, or of a Delta table outside the pipeline by its :func:`outside_key`;
    ``schema_root(i)`` the state folder of the i-th Auto Loader source."""

    spark: SparkSession
    names: Names
    datasets: set[str]
    source: Source
    origin: Origin
    schema_root: Callable[[int], str | None]
    file_column: str | None = None  # headwater.fileMetadataColumn for Auto Loader reads
    reads: list[tuple[str, bool]] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)  # Delta tables outside, by outside_key
    # ... and each one's name as the user wrote it (``src.orders``, ``delta.`/p```), for
    # the messages that name it: its key is its location.
    written: dict[str, str] = field(default_factory=dict)
    streamed: list[str] = field(default_factory=list)  # outside tables read as streams
    views: list[str] = field(default_factory=list)
    sources_seen: int = 0

    def table(
        self, name: str, streaming: bool, options: Mapping[str, str] | None = None
    ) -> DataFrame | None:
        if delta_path(name) is not None:  # delta.`/path`: never a dataset
            return self.outside_read(name, streaming, options or {})
        key = self.names.key(name)
        if key not in self.datasets:
            if name.strip().lower().startswith("live."):
                raise PipelineDefinitionError(
                    f"[PIPELINE_UNDEFINED_DATASET] '{name}' is read here but no dataset of "
                    "this pipeline has that name. Define it, or drop the LIVE. prefix to read "
                    "a table outside the pipeline.",
                    self.origin.file,
                    self.origin.line,
                )
            in_database = self.in_database(name, key)
            return self.outside_read(
                key if in_database else name, streaming, options or {}, in_database
            )
        if (key, streaming) not in self.reads:
            self.reads.append((key, streaming))
        return self.source(self, key, streaming, options or {})

    def in_database(self, name: str, key: str) -> bool:
        """Whether ``name``, a table outside the pipeline written without a database, is
        one of the pipeline's database (``key``: the name there): read from there, as Spark
        resolves names against the spec's database; else the name goes on to Spark, which
        looks in the session's current database."""
        if not self.names.database or "." in name.strip().replace("`.`", "."):
            return False
        with resolving(None):
            try:
                return bool(self.spark.catalog.tableExists(key))
            except PySparkException:  # a name Spark's parser does not take as written
                return False

    def outside_read(
        self, name: str, streaming: bool, options: Mapping[str, str], in_database: bool = False
    ) -> DataFrame | None:
        """A table outside the pipeline. A batch read without options (no time travel, no
        change feed) of a Delta table is an input with versions: recorded by its
        :func:`outside_key` and its rows asked of ``source``. Any other read is Spark's
        (None), but a name found in the pipeline's database (``in_database``) is read
        from there."""
        if streaming:  # (its name for the flow's definition event)
            shown = name.strip() if delta_path(name) is None else f"delta.`{delta_path(name)}`"
            if shown not in self.streamed:
                self.streamed.append(shown)
        if not streaming and not options:
            found = api.find(self.spark, name)
            if found is not None and found.exists():
                key = outside_key(found.location)
                if key not in self.outside:
                    self.outside.append(key)
                path = delta_path(name)  # (SQL's front gives `delta.`/p`` unquoted)
                self.written.setdefault(key, name.strip() if path is None else f"delta.`{path}`")
                return self.source(self, key, False, {})
        if not in_database:
            return None
        with resolving(None):
            reader = self.spark.readStream if streaming else self.spark.read
            return reader.options(**dict(options)).table(name)

    def schema_location(self) -> str | None:
        location = self.schema_root(self.sources_seen)
        self.sources_seen += 1
        return location

    def file_metadata_column(self) -> str | None:
        return self.file_column

    def sql(self, text: str) -> DataFrame | None:
        if not text.lstrip().lower().startswith(SQL_QUERY_STARTS):
            return None
        query = parse_query(text, self.origin.file, self.origin.line or 1)
        return self.run_query(query)

    def run_query(self, query: SqlQuery) -> DataFrame:
        names: dict[Reference | FileSource | KafkaSource, str] = {}
        for ref in query.references:
            df = self.table(f"LIVE.{ref.name}" if ref.live else ref.name, ref.streaming)
            if df is None and ref.streaming:
                df = self.stream_outside(ref.name)
            if df is not None:
                names[ref] = self.view_of(df)
        for src in query.file_sources:
            if isinstance(src, KafkaSource):
                names[src] = self.view_of(read_kafka(self.spark, src, self.origin))
            else:
                names[src] = self.view_of(self.read_files(src))
        with resolving(None):
            return self.spark.sql(query.render(names, self.names.database))

    def stream_outside(self, name: str) -> DataFrame:
        """``STREAM x`` of a table outside the pipeline: a streaming read of it, as
        ``spark.readStream.table("x")`` is in Python (the rendered query drops ``STREAM``,
        so left as written it would be a batch read)."""
        with resolving(None):
            return self.spark.readStream.table(name)

    def read_files(self, src: FileSource) -> DataFrame:
        """``read_files``/``cloud_files``: Auto Loader under ``STREAM`` (its options may be
        written without the ``cloudFiles.`` prefix), else a batch read. ``read_files``
        has the known platform's defaults (:mod:`headwater.sql.functions`); the older
        ``cloud_files`` keeps Auto Loader's (strings unless ``inferColumnTypes``)."""
        fmt = src.format or guess_format(src.path)
        if fmt is None:
            raise PipelineDefinitionError(
                f"[PIPELINE_READ_FILES_FORMAT] {src.function}('{src.path}'): give the "
                "format (format => 'json').",
                self.origin.file,
                self.origin.line,
            )
        options = {"format": fmt, **dict(src.options)}
        if not src.streaming:
            return functions.read_files(self.spark, src.path, **options)
        infer = src.function == "read_files"
        return functions.read_files_stream(self.spark, src.path, options, infer_types=infer)

    def view_of(self, df: DataFrame) -> str:
        name = f"__headwater_read_{uuid.uuid4().hex[:12]}"
        df.createOrReplaceTempView(name)
        self.views.append(name)
        return name

    def drop_views(self) -> None:
        for name in self.views:
            self.spark.catalog.dropTempView(name)
        self.views.clear()
