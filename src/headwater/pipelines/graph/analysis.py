"""The dataflow graph: definitions analysed in dependency order, edges learned from reads.

Users never declare edges. Each flow's function is evaluated with the pipeline's reads
installed (:mod:`.reads`); a read of a dataset not analysed yet stops the evaluation, the
flow waits, and is tried again once that dataset is known. What comes out is, per flow,
the datasets it reads, whether it is a stream, and its schema; per dataset, its concrete
kind (``dlt.table`` becomes a streaming table or a materialized view here). Every error is
found before anything is written: a cycle, a read of an undefined dataset, a flow into a
dataset that does not exist, a streaming read of a materialized view, a stream into a
materialized view or a batch query into a streaming table.
"""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

from headwater import api, storage
from headwater.adapter.resolution import resolving
from headwater.errors import HeadwaterError, PipelineDefinitionError
from headwater.pipelines.cdc.snapshots import snapshot_schema
from headwater.pipelines.define.auto_cdc import (
    CHANGE_TYPE,
    COMMIT_TIMESTAMP,
    COMMIT_VERSION,
    resolve,
)
from headwater.pipelines.define.elements import Dataset, DatasetKind, Flow
from headwater.pipelines.define.registry import Registry
from headwater.pipelines.graph.kafka import (
    check_sink_rows,
    connector_missing,
    is_connector_missing,
)
from headwater.pipelines.graph.reads import Names, PipelineReads, unnarrowed


@dataclass(frozen=True)
class AnalysedQuery:
    """A batch flow's query as analysed, over the stand-ins of the stored datasets it reads
    and the reads of the Delta tables outside the pipeline it reads (as they were:
    ``reads``, by key). Kept only where its plan is the one the real tables give but for
    those leaves: it reads stored datasets alone (no temporary view, whose expectations
    the run adds), with no read options, and sets no Spark conf of its own. A materialized
    view's refresh plans on it (each stand-in is its own RDD, so Spark's ``sameResult``
    tells them apart as it tells the real reads apart): a refresh that needs no query on
    the real tables (nothing changed, or a small change aggregated in Arrow) builds none."""

    df: DataFrame
    reads: Mapping[str, tuple[DataFrame, ...]]


@dataclass(frozen=True)
class AnalysedFlow:
    flow: Flow
    target: str  # the dataset's key
    inputs: tuple[str, ...]  # keys of the datasets it reads (temporary views included)
    streaming: bool
    schema: StructType
    # Delta tables outside the pipeline it reads in batch, by their location's key
    # (:func:`.reads.outside_key`): versioned inputs of a materialized view.
    outside: tuple[str, ...] = ()
    query: AnalysedQuery | None = field(default=None, compare=False, repr=False)
    # (outside key, the name as the user wrote it) of each table in ``outside``.
    written: tuple[tuple[str, str], ...] = ()
    # Tables outside the pipeline it reads as a stream, named as the user wrote them.
    streamed: tuple[str, ...] = ()


@dataclass
class Graph:
    """Datasets (by key, kinds resolved) and analysed flows (by name), in definition order."""

    names: Names
    datasets: dict[str, Dataset]
    flows: dict[str, AnalysedFlow]
    schemas: dict[str, StructType] = field(default_factory=dict)

    def flows_into(self, key: str) -> list[AnalysedFlow]:
        return [f for f in self.flows.values() if f.target == key]

    def upstream(self, flow: AnalysedFlow) -> set[str]:
        """The stored datasets a flow depends on, looking through temporary views."""
        return self._through_views(flow)[0]

    def outside(self, flow: AnalysedFlow) -> set[str]:
        """The Delta tables outside the pipeline a flow reads in batch (by key), looking
        through temporary views."""
        return self._through_views(flow)[1]

    def written(self, flow: AnalysedFlow) -> dict[str, str]:
        """The name as the user wrote it of each Delta table outside the pipeline a flow
        reads (by key, looking through temporary views): what messages call it."""
        return self._through_views(flow)[2]

    def _through_views(self, flow: AnalysedFlow) -> tuple[set[str], set[str], dict[str, str]]:
        found: set[str] = set()
        outside = set(flow.outside)
        written = dict(flow.written)
        todo = list(flow.inputs)
        seen: set[str] = set()
        while todo:
            key = todo.pop()
            if key in seen:
                continue
            seen.add(key)
            if self.datasets[key].kind == "temporary_view":
                for view_flow in self.flows_into(key):
                    todo.extend(view_flow.inputs)
                    outside.update(view_flow.outside)
                    written = dict(view_flow.written) | written
            else:
                found.add(key)
        return found, outside, written

    def describe(self) -> str:
        """The graph as text: one line per flow, in the order they can run."""
        lines = []
        for f in self.flows.values():
            kind = self.datasets[f.target].kind.replace("_", " ")
            reads = ", ".join(f.inputs) or "-"
            mode = "stream" if f.streaming else "batch"
            lines.append(f"{f.flow.name} ({mode}) -> {f.target} [{kind}]  reads: {reads}")
        return "\n".join(lines)


class Waiting(Exception):
    """A flow read a dataset not analysed yet (internal: retried later)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


Evaluate = Callable[[Flow, PipelineReads], DataFrame]


def evaluate(flow: Flow, reads: PipelineReads) -> DataFrame:
    """Run a flow's function with ``reads`` answering its reads; user errors become
    definition errors at the flow's origin."""
    with resolving(reads):
        try:
            df = flow.func()
        except (Waiting, PipelineDefinitionError):
            raise
        except AnalysisException as e:
            if e.getCondition() == "TABLE_OR_VIEW_NOT_FOUND":
                raise PipelineDefinitionError(
                    f"[PIPELINE_UNDEFINED_DATASET] Flow '{flow.name}' reads a table that is "
                    f"neither a dataset of this pipeline nor in the catalog: {e}",
                    flow.origin.file,
                    flow.origin.line,
                ) from None
            if is_connector_missing(e):
                raise connector_missing(flow.origin) from None
            raise _failed(flow, e) from e
        except (HeadwaterError, Exception) as e:
            raise _failed(flow, e) from e
    if not isinstance(df, DataFrame):
        raise PipelineDefinitionError(
            f"[PIPELINE_NOT_A_DATAFRAME] Flow '{flow.name}' returned "
            f"{type(df).__name__}, not a DataFrame.",
            flow.origin.file,
            flow.origin.line,
        )
    return df


def _failed(flow: Flow, e: BaseException) -> PipelineDefinitionError:
    return PipelineDefinitionError(
        f"[PIPELINE_FLOW_ANALYSIS_FAILED] Flow '{flow.name}' failed while its query was "
        f"analysed: {type(e).__name__}: {e}",
        flow.origin.file,
        flow.origin.line,
    )


def declared_schema(spark: SparkSession, dataset: Dataset) -> StructType | None:
    if dataset.schema is None or isinstance(dataset.schema, StructType):
        return dataset.schema
    try:
        return spark.createDataFrame([], dataset.schema).schema
    except Exception as e:
        raise PipelineDefinitionError(
            f"[PIPELINE_INVALID_SCHEMA] Dataset '{dataset.name}' has a schema Spark cannot "
            f"read: {e}",
            dataset.origin.file,
            dataset.origin.line,
        ) from None


def analyse(
    spark: SparkSession,
    registry: Registry,
    database: str | None,
    schema_root: Callable[[str, int], str | None] | None = None,
) -> Graph:
    """Analyse every definition. ``schema_root(flow, i)`` is where the i-th Auto Loader
    source of a flow keeps its state, when that state exists already; otherwise analysis
    infers into a scratch folder, so nothing is persisted before the graph is known."""
    names = Names(database)
    datasets = _keyed(names, registry)
    flows = list(registry.flows.values())
    _check_targets(names, datasets, flows)
    graph = Graph(names, datasets, {})
    for key, dataset in datasets.items():
        schema = declared_schema(spark, dataset)
        if schema is not None:
            graph.schemas[key] = schema
    scratch = tempfile.mkdtemp(prefix="headwater-analysis-")
    storage.make_dir(f"{scratch}/empty")

    def root(flow: str, i: int) -> str:
        given = schema_root(flow, i) if schema_root else None
        return given or f"{scratch}/{flow}/sources/{i}"

    pending = {f.name: f for f in flows}
    blocked: dict[str, str] = {}
    analysed_views: dict[str, DataFrame] = {}
    taken: dict[str, list[DataFrame]] = {}  # the flow analysed now: its stand-ins, by key
    plain = [True]  # ... and whether it read only stored datasets, with no options

    def stand_in(
        reads: PipelineReads, key: str, streaming: bool, options: Mapping[str, str]
    ) -> DataFrame:
        if key not in datasets:  # a Delta table outside the pipeline: its rows as they are
            found = unnarrowed(api.table(spark, key).read())
            taken.setdefault(key, []).append(found)
            return found
        origin = reads.origin
        dataset = datasets[key]
        if dataset.kind == "sink":
            raise PipelineDefinitionError(
                f"[PIPELINE_READ_OF_SINK] '{dataset.name}' is a sink: flows write to it, "
                "nothing in the pipeline can read it.",
                origin.file,
                origin.line,
            )
        into = [f for f in flows if names.key(f.target) == key]
        if not into and key not in graph.schemas:
            raise PipelineDefinitionError(
                f"[PIPELINE_DATASET_WITHOUT_FLOW] '{dataset.name}' is read here but has no "
                "flow and no schema: add a flow into it or give it a schema.",
                origin.file,
                origin.line,
            )
        if any(f.name not in graph.flows for f in into):
            raise Waiting(key)
        kind = datasets[key].kind
        if streaming and kind == "materialized_view":
            raise PipelineDefinitionError(
                f"[PIPELINE_STREAMING_READ_OF_MATERIALIZED_VIEW] '{dataset.name}' is a "
                "materialized view (recomputed whole), so it cannot be read as a stream. "
                "Read it with spark.read.table / dlt.read, or make it a streaming table.",
                origin.file,
                origin.line,
            )
        if kind == "temporary_view":
            view = analysed_views[key]
            if streaming and not view.isStreaming:
                raise PipelineDefinitionError(
                    f"[PIPELINE_STREAMING_READ_OF_BATCH_VIEW] '{dataset.name}' is a batch "
                    "view; read it with spark.read.table / dlt.read.",
                    origin.file,
                    origin.line,
                )
            plain[0] = False
            return view
        found = _placeholder(spark, _as_read(graph.schemas[key], options), streaming, scratch)
        plain[0] = plain[0] and not streaming and not options
        taken.setdefault(key, []).append(found)
        return found

    while pending:
        progress = False
        for name, flow in list(pending.items()):
            reads = PipelineReads(
                spark, names, set(datasets), stand_in, flow.origin, functools.partial(root, name)
            )
            taken.clear()
            plain[0] = not flow.spark_conf and flow.auto_cdc is None
            try:
                df = evaluate(flow, reads)
            except Waiting as w:
                blocked[name] = w.key
                continue
            finally:
                reads.drop_views()
            key = names.key(flow.target)
            schema = df.schema
            if flow.auto_cdc is not None:
                schema = _cdc_schema(spark, flow, df)
            query = None
            if plain[0] and not df.isStreaming:
                query = AnalysedQuery(df, {k: tuple(v) for k, v in taken.items()})
            result = AnalysedFlow(
                flow,
                key,
                tuple(k for k, _ in reads.reads),
                df.isStreaming,
                schema,
                tuple(reads.outside),
                query,
                tuple(reads.written.items()),
                tuple(reads.streamed),
            )
            _check_flow_kind(datasets, result)
            if datasets[key].kind == "sink" and (datasets[key].format or "").lower() == "kafka":
                check_sink_rows(datasets[key], flow, schema)
            graph.flows[name] = result
            if datasets[key].kind == "table":
                kind: DatasetKind = "streaming_table" if df.isStreaming else "materialized_view"
                datasets[key] = replace(datasets[key], kind=kind)
            if datasets[key].kind == "temporary_view":
                analysed_views[key] = df
            graph.schemas.setdefault(key, schema)
            blocked.pop(name, None)
            del pending[name]
            progress = True
        if not progress:
            raise _cycle(names, pending, blocked)
    graph.flows = {n: graph.flows[n] for n in _order(graph)}
    return graph


def _cdc_schema(spark: SparkSession, flow: Flow, df: DataFrame) -> StructType:
    """The target's columns of an AUTO CDC flow (its arguments checked against the
    source's columns)."""
    assert flow.auto_cdc is not None
    if flow.auto_cdc.from_snapshot:
        return snapshot_schema(spark, flow.auto_cdc, df, flow.origin)
    if not df.isStreaming:
        raise PipelineDefinitionError(
            f"[PIPELINE_AUTO_CDC_BATCH_SOURCE] AUTO CDC flow '{flow.name}' reads "
            f"'{flow.auto_cdc.source}' as a batch; its source must be a stream (a streaming "
            "table, or a view over spark.readStream).",
            flow.origin.file,
            flow.origin.line,
        )
    return resolve(spark, flow.auto_cdc, df.schema, flow.origin).schema


def _keyed(names: Names, registry: Registry) -> dict[str, Dataset]:
    keyed: dict[str, Dataset] = {}
    for dataset in registry.datasets.values():
        key = names.key(dataset.name)
        if key in keyed:
            first = keyed[key]
            raise PipelineDefinitionError(
                f"[PIPELINE_DUPLICATE_DATASET] '{dataset.name}' and '{first.name}' (at "
                f"{first.origin}) name the same table {key}.",
                dataset.origin.file,
                dataset.origin.line,
            )
        keyed[key] = dataset
    return keyed


def _check_targets(names: Names, datasets: dict[str, Dataset], flows: Iterable[Flow]) -> None:
    per_target: dict[str, list[Flow]] = {}
    for flow in flows:
        key = names.key(flow.target)
        if key not in datasets:
            raise PipelineDefinitionError(
                f"[PIPELINE_FLOW_TARGET_NOT_FOUND] Flow '{flow.name}' writes into "
                f"'{flow.target}', which is not defined. Declare it first "
                "(create_streaming_table / CREATE STREAMING TABLE).",
                flow.origin.file,
                flow.origin.line,
            )
        per_target.setdefault(key, []).append(flow)
    for key, into in per_target.items():
        dataset = datasets[key]
        if dataset.kind in ("materialized_view", "temporary_view") and len(into) > 1:
            second = into[1]
            raise PipelineDefinitionError(
                f"[PIPELINE_MULTIPLE_FLOWS_INTO_VIEW] '{dataset.name}' is a "
                f"{dataset.kind.replace('_', ' ')}: it has one query, so flow "
                f"'{second.name}' cannot also write into it. Use a streaming table.",
                second.origin.file,
                second.origin.line,
            )


def _check_flow_kind(datasets: dict[str, Dataset], result: AnalysedFlow) -> None:
    dataset = datasets[result.target]
    flow = result.flow
    if dataset.kind == "materialized_view" and result.streaming:
        raise PipelineDefinitionError(
            f"[PIPELINE_STREAM_INTO_MATERIALIZED_VIEW] '{dataset.name}' is a materialized "
            "view but its query is a stream. Read its inputs with spark.read.table, or make "
            "it a streaming table (@dp.table).",
            flow.origin.file,
            flow.origin.line,
        )
    snapshots = flow.auto_cdc is not None and flow.auto_cdc.from_snapshot
    if dataset.kind == "streaming_table" and not result.streaming and not (flow.once or snapshots):
        raise PipelineDefinitionError(
            f"[PIPELINE_BATCH_INTO_STREAMING_TABLE] Flow '{flow.name}' into streaming table "
            f"'{dataset.name}' is a batch query: read with spark.readStream / STREAM(...), "
            "make it a one-time backfill (append_flow(once=True)), or make the dataset a "
            "materialized view.",
            flow.origin.file,
            flow.origin.line,
        )


def _cycle(
    names: Names, pending: dict[str, Flow], blocked: dict[str, str]
) -> PipelineDefinitionError:
    """The error for flows that wait on each other."""
    into: dict[str, list[str]] = {}
    for name, flow in pending.items():
        into.setdefault(names.key(flow.target), []).append(name)
    start = next(iter(pending))
    path = [start]
    while True:
        waits_on = blocked.get(path[-1])
        nxt = next(iter(into.get(waits_on or "", [])), None)
        if nxt is None or nxt in path:
            if nxt is not None:
                path = path[path.index(nxt) :] + [nxt]
            break
        path.append(nxt)
    flow = pending[path[0]]
    chain = " -> ".join(f"{p} (reads {blocked.get(p)})" for p in path[:-1]) + f" -> {path[-1]}"
    return PipelineDefinitionError(
        f"[PIPELINE_CYCLE] Flows read each other in a cycle: {chain}. Break the cycle.",
        flow.origin.file,
        flow.origin.line,
    )


def _order(graph: Graph) -> list[str]:
    """Flow names, each after the flows into what it reads (stable: definition order)."""
    done: list[str] = []
    placed: set[str] = set()
    remaining = list(graph.flows)
    while remaining:
        for name in remaining:
            needs = graph.flows[name].inputs
            writers = {f.flow.name for k in needs for f in graph.flows_into(k)} - {name}
            if writers <= placed:
                done.append(name)
                placed.add(name)
                remaining.remove(name)
                break
        else:  # flows into one table reading each other: keep definition order
            done.extend(remaining)
            break
    return done


def _as_read(schema: StructType, options: Mapping[str, str]) -> StructType:
    """A dataset's columns as a read with ``options`` gives them: its change data feed
    (``readChangeFeed``) adds the feed's columns."""
    feed = any(
        k.lower() == "readchangefeed" and str(v).lower() == "true" for k, v in options.items()
    )
    if not feed:
        return schema
    added = [
        StructField(CHANGE_TYPE, StringType()),
        StructField(COMMIT_VERSION, LongType()),
        StructField(COMMIT_TIMESTAMP, TimestampType()),
    ]
    return StructType([*schema.fields, *added])


def _placeholder(
    spark: SparkSession, schema: StructType, streaming: bool, scratch: str
) -> DataFrame:
    """Empty rows of ``schema``, as a batch or a stream: what a dataset looks like to the
    flows reading it while the graph is analysed."""
    if not streaming:
        return spark.createDataFrame([], schema)
    return spark.readStream.schema(schema).format("parquet").load(f"{scratch}/empty")
