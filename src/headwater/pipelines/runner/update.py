"""One pipeline update: spec -> definitions -> graph -> resets -> tables -> flows.

The shape of :mod:`headwater.copyinto` (spec, plan, execute), for a graph. Triggered
updates run every selected flow once over what is available (streams with
``availableNow``): each flow as soon as every flow into what it reads has finished,
independent flows at the same time. Continuous updates (:mod:`.continuous`) keep streams
running and recompute materialized views when their inputs change. A failed flow fails
only itself and the flows downstream of it (SKIPPED); the rest complete.

Full refresh is crash-safe: the datasets to clear are recorded first, then their flows'
checkpoints (and Auto Loader state) are removed, then the tables are emptied, then the
record is removed. An update that finds the record redoes the refresh before anything else.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from headwater import api, storage
from headwater.errors import ExpectationViolationError, PipelineDefinitionError
from headwater.event_log_format import FlowStatus
from headwater.pipelines.define.elements import Dataset
from headwater.pipelines.define.loader import load
from headwater.pipelines.define.registry import Registry
from headwater.pipelines.define.spec import PipelineSpec
from headwater.pipelines.graph.analysis import AnalysedFlow, Graph, analyse, evaluate
from headwater.pipelines.graph.reads import Names, PipelineReads
from headwater.pipelines.graph.sql_flows import sql_loader
from headwater.pipelines.layout.folders import Layout
from headwater.pipelines.runner import flows as flow_runs
from headwater.pipelines.runner import retry as run_retry
from headwater.pipelines.runner.continuous import run_continuous
from headwater.pipelines.runner.event_log import Event, EventLog, Listener
from headwater.pipelines.runner.expectations import FILE_METADATA, Rules, quarantine_name, violation
from headwater.pipelines.runner.flows import FlowRun
from headwater.pipelines.runner.interrupt import BatchGate

RESET_ALLOWED = "pipelines.reset.allowed"
SCHEMA_RESTARTS = 10  # restarts of a stream Auto Loader stopped for new columns
# States of a flow after which the flows that wait for it are skipped.
SKIPS_DOWNSTREAM = (FlowStatus.FAILED, FlowStatus.SKIPPED, FlowStatus.STOPPED)


@dataclass(frozen=True)
class UpdateOptions:
    """What an update does. ``refresh``: only these datasets (None: all);
    ``full_refresh``: clear these and reprocess them (``full_refresh_all``: every one)."""

    refresh: Sequence[str] | None = None
    full_refresh: Sequence[str] = ()
    full_refresh_all: bool = False
    dry_run: bool = False
    continuous: bool = False
    trigger_interval: str = "5 seconds"
    max_retries: int = 0
    max_concurrent_flows: int = 4
    stop: threading.Event | None = None


@dataclass
class UpdateResult:
    """What an update did: its state, each flow's run, the graph it ran, its events."""

    update_id: str
    pipeline: str
    state: str
    graph: Graph
    flows: dict[str, FlowRun]
    seconds: float = 0.0
    events: list[Event] = field(default_factory=list, repr=False)

    @property
    def ok(self) -> bool:
        return self.state == "COMPLETED"

    def failed(self) -> list[FlowRun]:
        return [r for r in self.flows.values() if r.status == FlowStatus.FAILED]


def event_log_name(spec: PipelineSpec) -> str:
    """The event log's table name: ``<database>.<pipeline>_event_log``."""
    name = "".join(c if c.isalnum() else "_" for c in spec.name.lower()) + "_event_log"
    return f"{spec.database}.{name}" if spec.database else name


def flow_type(af: AnalysedFlow, dataset: Dataset) -> str:
    """``flow_definition.flow_type``, as the known system's event log names them."""
    cdc = af.flow.auto_cdc
    if cdc is not None:
        return "CHANGE" if not cdc.from_snapshot else "SNAPSHOT_CHANGE"
    return "COMPLETE" if dataset.kind == "materialized_view" else "APPEND"


class Update:
    """One update of one pipeline; :meth:`run` once."""

    def __init__(
        self,
        spark: SparkSession,
        spec: PipelineSpec,
        options: UpdateOptions,
        listeners: Sequence[Listener] = (),
    ) -> None:
        self.spark = spark
        self.spec = spec
        self.options = options
        self.layout = Layout(spec.storage_path)
        self.update_id = str(uuid.uuid4())
        dry = options.dry_run
        pipeline_id = self.layout.read_state("pipeline").get("pipeline_id", "")
        self.log = EventLog(
            None if dry else spark,
            None if dry else self.layout.event_log,
            pipeline_id,
            spec.name,
            self.update_id,
            listeners=list(listeners),
            table_name=event_log_name(spec),
        )
        self.runs: dict[str, FlowRun] = {}
        self.stop = options.stop or threading.Event()
        self.state_lock = threading.Lock()

    # -- the update ------------------------------------------------------------------------

    def run(self) -> UpdateResult:
        start = time.monotonic()
        o = self.options
        registry = load(self.spark, self.spec, sql_loader(self.spark, self.spec))
        names = Names(self.spec.database)
        selected = self._selection(registry, names)
        self.log.event("create_update", f"Update {self.update_id[:8]} started.", self._cause())
        self.log.update_progress("INITIALIZING")
        resets = set() if o.dry_run else self._resets(registry, names, selected)
        reset_flows = {f.name for f in registry.flows.values() if names.key(f.target) in resets}

        def source_state(flow: str, index: int) -> str | None:
            path = self.layout.source_state(flow, index)
            usable = flow not in reset_flows and storage.is_nonempty_dir(path)
            return path if usable else None

        graph = analyse(self.spark, registry, self.spec.database, source_state)
        self._check_expectations(graph)
        self._definitions(graph)
        if o.dry_run:
            self.log.update_progress("COMPLETED")
            return self._result(graph, "COMPLETED", start)
        self._ensure_pipeline_id()
        self.log.update_progress("SETTING_UP_TABLES")
        self._clear_progress(reset_flows, resets)
        self._set_up_tables(graph, selected, resets)
        self.log.update_progress("RUNNING")
        to_run = [
            f
            for f in graph.flows.values()
            if f.target in selected and graph.datasets[f.target].kind != "temporary_view"
        ]
        for af in to_run:
            self.runs[af.flow.name] = FlowRun(af.flow.name, af.target)
        try:
            if o.continuous:
                run_continuous(self, graph, to_run)
            else:
                self._run_triggered(graph, to_run)
        finally:
            failed = any(r.status == FlowStatus.FAILED for r in self.runs.values())
            state = "FAILED" if failed else "COMPLETED"
            if self.stop.is_set() and not o.continuous:
                state = "CANCELED"
            self.log.update_progress(state)
            self.log.flush()
        return self._result(graph, state, start)

    def _result(self, graph: Graph, state: str, start: float) -> UpdateResult:
        return UpdateResult(
            self.update_id,
            self.spec.name,
            state,
            graph,
            self.runs,
            round(time.monotonic() - start, 3),
            list(self.log.events),
        )

    def _ensure_pipeline_id(self) -> None:
        state = self.layout.read_state("pipeline")
        if "pipeline_id" not in state:
            state = {"pipeline_id": str(uuid.uuid4()), "name": self.spec.name}
            self.layout.write_state("pipeline", state)
        self.log.pipeline_id = state["pipeline_id"]

    def _cause(self) -> dict[str, Any]:
        o = self.options
        return {
            "cause": "API_CALL",
            "full_refresh": o.full_refresh_all,
            "refresh_selection": list(o.refresh or []),
            "full_refresh_selection": list(o.full_refresh),
            "dry_run": o.dry_run,
            "continuous": o.continuous,
        }

    # -- what the update touches -------------------------------------------------------------

    def _selection(self, registry: Registry, names: Names) -> set[str]:
        """The dataset keys this update refreshes; unknown names are errors."""
        known = {names.key(d.name): d for d in registry.datasets.values()}
        o = self.options
        for option, given in (("--refresh", o.refresh or ()), ("--full-refresh", o.full_refresh)):
            for name in given:
                if names.key(name) not in known:
                    listed = ", ".join(sorted(d.name for d in known.values()))
                    raise PipelineDefinitionError(
                        f"[PIPELINE_UNKNOWN_DATASET] {option} names '{name}', which is not a "
                        f"dataset of pipeline '{self.spec.name}'. Its datasets: {listed}."
                    )
        if o.refresh is None and not o.full_refresh:
            return set(known)
        return {names.key(n) for n in [*(o.refresh or ()), *o.full_refresh]}

    def _resets(self, registry: Registry, names: Names, selected: set[str]) -> set[str]:
        """The datasets this update clears: those asked for, and those of a refresh an
        earlier update began and did not finish. Nothing is changed yet."""
        o = self.options
        wanted = set(selected) if o.full_refresh_all else {names.key(n) for n in o.full_refresh}
        wanted |= set(self.layout.read_state("full_refresh").get("datasets", []))
        keys = set()
        for key in sorted(wanted):
            dataset = next(
                (d for d in registry.datasets.values() if names.key(d.name) == key), None
            )
            if dataset is None or dataset.kind in ("sink", "temporary_view"):
                continue
            if dataset.table_properties.get(RESET_ALLOWED, "true").lower() == "false":
                self.log.event(
                    "full_refresh_skipped",
                    f"'{dataset.name}' is not reset: its table property {RESET_ALLOWED} is false.",
                    {"dataset": key},
                    level="WARN",
                    dataset_name=key,
                )
                continue
            keys.add(key)
        return keys

    def _clear_progress(self, flows: set[str], keys: set[str]) -> None:
        """Record the refresh, then forget the progress of the flows into its datasets
        (their tables are emptied next, by :meth:`_set_up_tables`)."""
        if not keys:
            return
        self.layout.write_state("full_refresh", {"datasets": sorted(keys)})
        for flow in sorted(flows):
            self.layout.reset_flow(flow)
        epochs = self.layout.read_state("epochs")
        for key in keys:
            epochs[key] = int(epochs.get(key, 0)) + 1
        self.layout.write_state("epochs", epochs)

    def _set_up_tables(self, graph: Graph, selected: set[str], resets: set[str]) -> None:
        """Create the streaming tables that do not exist yet, empty those being reset."""
        for key, dataset in graph.datasets.items():
            if key not in selected or dataset.kind not in ("streaming_table", "materialized_view"):
                continue
            table = api.table(self.spark, key)
            exists = table.exists()
            if key in resets and exists:
                empty = self.spark.createDataFrame([], graph.schemas[key])
                table.write(empty, flow_runs.table_spec(dataset, "overwrite"))
            if key in resets and Rules(key, dataset.expectations).quarantines:
                aside = api.find(self.spark, quarantine_name(dataset, key))
                if aside is not None:  # emptied with its dataset, keeping its columns
                    rows = aside.read()
                    aside.write(rows.limit(0), flow_runs.quarantine_spec("overwrite"))
            elif not exists and dataset.kind == "streaming_table":
                empty = self.spark.createDataFrame([], graph.schemas[key])
                table.write(empty, flow_runs.table_spec(dataset, "append"))
        if resets:
            self.layout.write_state("full_refresh", {"datasets": []})

    def _check_expectations(self, graph: Graph) -> None:
        """Every constraint parses, names known columns and is boolean, checked against
        the rows of every flow into its dataset, before anything runs."""
        for af in graph.flows.values():
            dataset = graph.datasets[af.target]
            if not dataset.expectations:
                continue
            rules = Rules(af.target, dataset.expectations)
            if rules.quarantines and not dataset.persisted:
                raise PipelineDefinitionError(
                    f"[PIPELINE_QUARANTINE_ON_VIEW] '{dataset.name}' is a view: it has no "
                    "table beside which to keep quarantined rows. Quarantine in the dataset "
                    "that reads it, or use expect_or_drop here.",
                    dataset.origin.file,
                    dataset.origin.line,
                )
            rules.validate(self.spark, af.schema, dataset)

    def _definitions(self, graph: Graph) -> None:
        for af in graph.flows.values():
            dataset = graph.datasets[af.target]
            self.log.event(
                "flow_definition",
                f"Flow '{af.flow.name}' is defined as {'a stream' if af.streaming else 'a batch'} "
                f"into {dataset.kind.replace('_', ' ')} '{af.target}'.",
                {
                    "output_dataset": af.target,
                    "input_datasets": list(af.inputs),
                    "flow_type": flow_type(af, dataset),
                    "streaming": af.streaming,
                    "once": af.flow.once,
                    "dataset_type": dataset.kind.upper(),
                    "source_code_location": str(af.flow.origin),
                    "schema": [
                        {"name": f.name, "data_type": f.dataType.simpleString()}
                        for f in af.schema.fields
                    ],
                    "sql": af.flow.sql,
                    "expectations": [
                        {"name": e.name, "constraint": e.constraint, "action": e.action}
                        for e in dataset.expectations
                    ],
                },
                flow_name=af.flow.name,
                dataset_name=af.target,
            )

    # -- triggered ---------------------------------------------------------------------------

    def _run_triggered(self, graph: Graph, to_run: list[AnalysedFlow]) -> None:
        names = {af.flow.name for af in to_run}
        deps = {
            af.flow.name: {
                w.flow.name
                for key in graph.upstream(af)
                for w in graph.flows_into(key)
                if w.flow.name in names and w.flow.name != af.flow.name
            }
            for af in to_run
        }
        pending = {af.flow.name: af for af in to_run}
        running: dict[Future[None], str] = {}
        for name in pending:
            self.log.flow_progress(name, pending[name].target, FlowStatus.QUEUED)
        with ThreadPoolExecutor(max(1, self.options.max_concurrent_flows)) as pool:
            while pending or running:
                for name, af in list(pending.items()):
                    statuses = [self.runs[d].status for d in deps[name]]
                    if self.stop.is_set():
                        self._finish(af, FlowStatus.STOPPED)
                    elif any(s in SKIPS_DOWNSTREAM for s in statuses):
                        self._finish(af, FlowStatus.SKIPPED)
                    elif all(s == FlowStatus.COMPLETED for s in statuses):
                        running[pool.submit(self.run_flow, graph, af)] = name
                    else:
                        continue
                    del pending[name]
                if running:
                    done, _ = wait(list(running), return_when=FIRST_COMPLETED)
                    for future in done:
                        running.pop(future)
                        future.result()

    def _finish(self, af: AnalysedFlow, status: FlowStatus) -> None:
        self.runs[af.flow.name].not_started(status)
        self.log.flow_progress(af.flow.name, af.target, status)

    # -- one flow ----------------------------------------------------------------------------

    def run_flow(
        self, graph: Graph, af: AnalysedFlow, trigger: dict[str, Any] | None = None
    ) -> None:
        """Run ``af`` to the end (a stream: until ``availableNow`` has drained, or until
        stopped under ``trigger``), retrying up to ``max_retries`` times (a transient
        failure at least :data:`.retry.TRANSIENT_RETRIES` times)."""
        run = self.runs[af.flow.name]
        start = time.monotonic()
        attempt = 0
        while True:
            try:
                self._attempt(graph, af, run, trigger or {"availableNow": True})
                stopped = self.stop.is_set() and (trigger is not None or run.stopped)
                run.completed(stopped)
                break
            except Exception as e:  # the flow fails; the update goes on
                again = not isinstance(e, ExpectationViolationError) and not self.stop.is_set()
                if attempt < run_retry.retries(e, self.options.max_retries) and again:
                    attempt += 1
                    self.log.flow_progress(af.flow.name, af.target, FlowStatus.RETRYING, error=e)
                    if not self.stop.wait(run_retry.pause(e, attempt)):
                        continue
                run.failed(e)
                break
        run.seconds = flow_runs.elapsed(start)
        self.log.flow_progress(
            af.flow.name,
            af.target,
            run.status,
            run.metrics,
            run.data_quality,
            error=run.error,
            seconds=run.seconds,
        )

    def _attempt(
        self, graph: Graph, af: AnalysedFlow, run: FlowRun, trigger: dict[str, Any]
    ) -> None:
        flow = af.flow
        once_key = f"{af.flow.name}@{self.layout.read_state('epochs').get(af.target, 0)}"
        if flow.once and self.layout.read_state("once").get(once_key):
            run.completed()
            return
        run.starting()
        self.log.flow_progress(flow.name, af.target, FlowStatus.STARTING)
        for key, value in flow.spark_conf.items():
            self.spark.conf.set(key, value)
        for restart in range(SCHEMA_RESTARTS + 1):
            try:
                self._write(graph, af, run, trigger, once_key)
                break
            except flow_runs.SchemaChanged as e:
                if restart == SCHEMA_RESTARTS:
                    raise
                self.log.flow_progress(flow.name, af.target, FlowStatus.RESTARTING, error=e)
        if flow.once:
            with self.state_lock:
                done = self.layout.read_state("once")
                done[once_key] = True
                self.layout.write_state("once", done)

    def _write(
        self, graph: Graph, af: AnalysedFlow, run: FlowRun, trigger: dict[str, Any], once_key: str
    ) -> None:
        """Evaluate the flow against the real tables and write its rows once, checked by
        its dataset's expectations."""
        flow, dataset = af.flow, graph.datasets[af.target]
        rules = Rules(af.target, dataset.expectations)
        aside = quarantine_name(dataset, af.target) if rules.quarantines else None
        reads = self._reads(graph, af, run, rules.quarantines)
        run.after_commit.clear()
        run.gate = BatchGate(self.stop)
        try:
            df = evaluate(flow, reads)
            run.running([self.layout.source_state(flow.name, i) for i in range(reads.sources_seen)])
            self.log.flow_progress(flow.name, af.target, FlowStatus.RUNNING)
            stream_trigger = {"availableNow": True} if flow.once else trigger
            query_name = f"{self.spec.name}.{flow.name}"
            if flow.auto_cdc is not None:
                app_id = f"headwater-cdc:{self.log.pipeline_id}:{once_key}"
                run.query = flow_runs.apply_changes(
                    self.spark,
                    af,
                    dataset,
                    df,
                    self.layout,
                    stream_trigger,
                    query_name=query_name,
                    run=run,
                    app_id=app_id,
                )
            elif df.isStreaming:
                run.query = flow_runs.start_stream(
                    self.spark,
                    af,
                    dataset,
                    df,
                    self.layout,
                    stream_trigger,
                    query_name=query_name,
                    run=run,
                    rules=rules,
                    quarantine=aside,
                )
            if flow.auto_cdc is not None or df.isStreaming:
                if run.query is not None:  # (snapshot flows are applied in batch)
                    flow_runs.await_stream(run.query, run, self.stop, self._batch_done)
                return
            if dataset.kind == "materialized_view":
                result = flow_runs.refresh_view(
                    self.spark, af, dataset, df, run=run, rules=rules, quarantine=aside
                )
            else:
                app_id = f"headwater-pipeline:{self.log.pipeline_id}:{once_key}"
                result = flow_runs.append_once(
                    self.spark, af, dataset, df, app_id, run=run, rules=rules, quarantine=aside
                )
            run.num_output_rows = result.num_rows if result else 0
            if result is not None and result.version is not None:
                for count in run.after_commit:
                    count()
        except Exception as e:
            found = violation(e, flow.name)
            if found is None:
                raise
            raise found from None
        finally:
            reads.drop_views()

    def _batch_done(self, run: FlowRun) -> None:
        self.log.flow_progress(
            run.name, run.target, FlowStatus.RUNNING, run.metrics, run.data_quality
        )

    def _reads(
        self, graph: Graph, af: AnalysedFlow, run: FlowRun, quarantines: bool = False
    ) -> PipelineReads:
        def source(
            reads: PipelineReads, key: str, streaming: bool, options: Mapping[str, str]
        ) -> DataFrame:
            dataset = graph.datasets[key]
            if dataset.kind == "temporary_view":
                df = evaluate(graph.flows_into(key)[0].flow, reads)
                if not dataset.expectations:
                    return df
                return flow_runs.check_view(df, Rules(key, dataset.expectations), run)
            table = api.table(self.spark, key)
            return table.read_stream(options) if streaming else table.read(options=options)

        return PipelineReads(
            self.spark,
            graph.names,
            set(graph.datasets),
            source,
            af.flow.origin,
            lambda i: self.layout.source_state(af.flow.name, i),
            file_column=FILE_METADATA if quarantines else None,
        )
