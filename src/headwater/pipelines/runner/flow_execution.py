"""One flow run to its end (Spark's pipeline server splits this into a flow planner and
the flow's execution): set up its reads, pick the plan of its kind — AUTO CDC, a stream
into a table or sink, a materialized view's recompute, a batch appended once — and run it,
restarting a stream that Auto Loader stopped for new columns and retrying a failure up to
the update's retries (a transient one at least :data:`.retry.TRANSIENT_RETRIES` times).
A failed flow fails only itself: what it raises is recorded on its :class:`FlowRun`."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame

from headwater import api
from headwater.errors import ExpectationViolationError
from headwater.event_log_format import FlowStatus
from headwater.pipelines.define.elements import Dataset
from headwater.pipelines.graph.analysis import AnalysedFlow, Graph, evaluate
from headwater.pipelines.graph.reads import PipelineReads, unnarrowed
from headwater.pipelines.refresh.plan import NotIncrementalizable, Technique, named_text
from headwater.pipelines.runner import affected_keys, partition_refresh, view_avg, view_refresh
from headwater.pipelines.runner import flows as flow_runs
from headwater.pipelines.runner import retry as run_retry
from headwater.pipelines.runner.context import UpdateContext
from headwater.pipelines.runner.expectations import FILE_METADATA, Rules, quarantine_name, violation
from headwater.pipelines.runner.failures import in_one_line
from headwater.pipelines.runner.flows import FlowRun
from headwater.pipelines.runner.interrupt import BatchGate

SCHEMA_RESTARTS = 10  # restarts of a stream Auto Loader stopped for new columns
# Read options with which a flow picks its own version of an input (a view's pin yields).
TIME_TRAVEL = {"versionasof", "timestampasof"}


class FlowExecutor:
    """Runs the flows of one update, each in the thread that calls :meth:`run_flow`."""

    def __init__(self, ctx: UpdateContext) -> None:
        self.ctx = ctx

    def run_flow(
        self, graph: Graph, af: AnalysedFlow, trigger: dict[str, Any] | None = None
    ) -> None:
        """Run ``af`` to the end (a stream: until ``availableNow`` has drained, or until
        stopped under ``trigger``), retrying up to ``max_retries`` times (a transient
        failure at least :data:`.retry.TRANSIENT_RETRIES` times)."""
        run = self.ctx.runs[af.flow.name]
        start = time.monotonic()
        attempt = 0
        while True:
            try:
                self.attempt(graph, af, run, trigger or {"availableNow": True})
                stopped = self.ctx.stop.is_set() and (trigger is not None or run.stopped)
                run.completed(stopped)
                break
            except Exception as e:  # the flow fails; the update goes on
                again = not isinstance(e, ExpectationViolationError) and not self.ctx.stop.is_set()
                if attempt < run_retry.retries(e, self.ctx.options.max_retries) and again:
                    attempt += 1
                    self.ctx.log.flow_progress(
                        af.flow.name, af.target, FlowStatus.RETRYING, error=e
                    )
                    if not self.ctx.stop.wait(run_retry.pause(e, attempt)):
                        continue
                run.failed(in_one_line(e))
                break
        run.seconds = flow_runs.elapsed(start)
        self.ctx.log.flow_progress(
            af.flow.name,
            af.target,
            run.status,
            run.metrics,
            run.data_quality,
            error=run.error,
            seconds=run.seconds,
        )

    def attempt(
        self, graph: Graph, af: AnalysedFlow, run: FlowRun, trigger: dict[str, Any]
    ) -> None:
        flow = af.flow
        once_key = f"{af.flow.name}@{self.ctx.layout.read_state('epochs').get(af.target, 0)}"
        if flow.once and self.ctx.layout.read_state("once").get(once_key):
            run.completed()
            return
        run.starting()
        self.ctx.log.flow_progress(flow.name, af.target, FlowStatus.STARTING)
        for key, value in flow.spark_conf.items():
            self.ctx.settings.set(key, value, flow.name)
        for restart in range(SCHEMA_RESTARTS + 1):
            try:
                self.write(graph, af, run, trigger, once_key)
                break
            except flow_runs.SchemaChanged as e:
                if restart == SCHEMA_RESTARTS:
                    raise
                self.ctx.log.flow_progress(flow.name, af.target, FlowStatus.RESTARTING, error=e)
        if flow.once:
            with self.ctx.state_lock:
                done = self.ctx.layout.read_state("once")
                done[once_key] = True
                self.ctx.layout.write_state("once", done)

    def write(
        self, graph: Graph, af: AnalysedFlow, run: FlowRun, trigger: dict[str, Any], once_key: str
    ) -> None:
        """Evaluate the flow against the real tables and write its rows once, checked by
        its dataset's expectations."""
        flow, dataset = af.flow, graph.datasets[af.target]
        rules = Rules(af.target, dataset.expectations)
        aside = quarantine_name(dataset, af.target) if rules.quarantines else None
        view = dataset.kind == "materialized_view" and flow.auto_cdc is None
        frames: dict[str, list[DataFrame]] = {}  # the stored inputs' reads, for a view's plan
        versions = view_refresh.input_versions(self.ctx.spark, graph, af) if view else {}
        reads = self.reads(
            graph, af, run, rules.quarantines, frames=frames if view else None, pins=versions
        )
        run.after_commit.clear()
        run.gate = BatchGate(self.ctx.stop)
        try:
            if view:  # (its query is built only if its refresh needs it)
                run.running([])
                self.ctx.log.flow_progress(flow.name, af.target, FlowStatus.RUNNING)
                result = self.refresh_view(
                    graph,
                    af,
                    reads,
                    versions=versions,
                    frames=frames,
                    run=run,
                    rules=rules,
                    aside=aside,
                )
                if result is None and run.technique == Technique.NO_OP.value:
                    return
                self.count_rows(run, result)
                return
            df = evaluate(flow, reads)
            run.running(
                [self.ctx.layout.source_state(flow.name, i) for i in range(reads.sources_seen)]
            )
            self.ctx.log.flow_progress(flow.name, af.target, FlowStatus.RUNNING)
            stream_trigger = {"availableNow": True} if flow.once else trigger
            query_name = f"{self.ctx.spec.name}.{flow.name}"
            if flow.auto_cdc is not None:
                app_id = f"headwater-cdc:{self.ctx.log.pipeline_id}:{once_key}"
                run.query = flow_runs.apply_changes(
                    self.ctx.spark,
                    af,
                    dataset,
                    df,
                    self.ctx.layout,
                    stream_trigger,
                    query_name=query_name,
                    run=run,
                    app_id=app_id,
                )
            elif df.isStreaming:
                run.query = flow_runs.start_stream(
                    self.ctx.spark,
                    af,
                    dataset,
                    df,
                    self.ctx.layout,
                    stream_trigger,
                    query_name=query_name,
                    run=run,
                    rules=rules,
                    quarantine=aside,
                )
            if flow.auto_cdc is not None or df.isStreaming:
                if run.query is not None:  # (snapshots are applied in batch; idle: none)
                    flow_runs.await_stream(run.query, run, self.ctx.stop, self.batch_done)
                return
            app_id = f"headwater-pipeline:{self.ctx.log.pipeline_id}:{once_key}"
            result = flow_runs.append_once(
                self.ctx.spark, af, dataset, df, app_id, run=run, rules=rules, quarantine=aside
            )
            self.count_rows(run, result)
        except Exception as e:
            found = violation(e, flow.name)
            if found is None:
                raise
            raise found from None
        finally:
            reads.drop_views()

    @staticmethod
    def count_rows(run: FlowRun, result: flow_runs.WriteResult | None) -> None:
        run.num_output_rows = result.num_rows if result else 0
        if result is not None and result.version is not None:
            for count in run.after_commit:
                count()

    def refresh_view(
        self,
        graph: Graph,
        af: AnalysedFlow,
        reads: PipelineReads,
        *,
        versions: Mapping[str, int | None],
        frames: Mapping[str, list[DataFrame]],
        run: FlowRun,
        rules: Rules,
        aside: str | None,
    ) -> flow_runs.WriteResult | None:
        """A materialized view's refresh by the technique its plan chose (logged first),
        planned on the query the graph's analysis kept where that plan needs no other;
        the query on the real tables (``reads``) is built only when the refresh runs it."""
        flow, dataset = af.flow, graph.datasets[af.target]
        built: list[DataFrame] = []

        def query() -> DataFrame:
            if not built:
                built.append(evaluate(flow, reads))
            return built[0]

        written = graph.written(af)
        try:
            plan, record, changed = view_refresh.plan_view(
                self.ctx.spark,
                af,
                dataset,
                versions,
                lambda: (query(), frames),
                quarantines=aside is not None,
                state_folder=view_avg.state_folder(self.ctx.layout.checkpoint(flow.name)),
            )
        except NotIncrementalizable as refused:  # inputs named as the query wrote them
            raise NotIncrementalizable(named_text(str(refused), written)) from refused
        plan = plan.named(written)
        self.ctx.log.event(
            "planning_information",
            f"'{af.target}' is refreshed by {plan.technique.value}: {plan.reason}.",
            plan.to_details(),
            flow_name=flow.name,
            dataset_name=af.target,
        )
        run.technique = plan.technique.value
        if plan.technique == Technique.NO_OP:
            return None
        if plan.technique == Technique.PARTITION_OVERWRITE or plan.keyed is not None:
            # The changed partitions, or the keys the changed rows hold, again: the query on
            # its inputs' rows in them only.
            if plan.keyed is not None:
                assert changed is not None and changed.removed is not None
                keys = affected_keys.touched_keys(plan.keyed, changed.added, changed.removed)
                pinned = affected_keys.keyed_inputs(self.ctx.spark, plan.keyed, keys, versions)
            else:
                assert plan.overwrite is not None
                pinned = partition_refresh.filtered_inputs(self.ctx.spark, plan.overwrite, versions)
            reads = self.reads(graph, af, run, pins=versions, appended=pinned)
            try:
                df = evaluate(flow, reads)
                if plan.keyed is not None and plan.view_version is not None:
                    return affected_keys.replace_keys(
                        self.ctx.spark,
                        af,
                        dataset,
                        df,
                        plan.keyed,
                        keys=keys,
                        view_version=plan.view_version,
                        run=run,
                        rules=rules,
                        user_metadata=record,
                        merge=plan.merge,
                    )
                assert plan.overwrite is not None
                return partition_refresh.overwrite_partitions(
                    self.ctx.spark,
                    af,
                    dataset,
                    df,
                    plan.overwrite,
                    run=run,
                    rules=rules,
                    user_metadata=record,
                )
            finally:
                reads.drop_views()
        if changed is not None and changed.arrow is not None:  # a small change, no Spark job
            done = view_refresh.refresh_in_arrow(self.ctx.spark, af.target, changed.arrow, record)
            if done is None:  # (averages past their bound: the state is written, recompute)
                return self.recompute_averages(af, dataset, query(), run, rules, record)
            return done
        if changed is not None:
            # The same query on the changed inputs' added rows (and, to take back, on their
            # removed rows) with the others' rows at the versions recorded: the rows a
            # recompute would add (append), or the touched groups' aggregates (group
            # aggregate).
            opened = [self.reads(graph, af, run, pins=versions, appended=changed.added)]
            if changed.removed is not None:
                opened.append(self.reads(graph, af, run, pins=versions, appended=changed.removed))
            try:
                rows = evaluate(flow, opened[0])
                if plan.technique == Technique.GROUP_AGGREGATE:
                    assert plan.aggregation is not None and plan.view_version is not None
                    removed = evaluate(flow, opened[1]) if len(opened) > 1 else None
                    kept = None
                    if plan.kept is not None:
                        kept = view_avg.keep(self.ctx.spark, plan, rows, removed)
                        if not kept.exact:
                            return self.recompute_averages(af, dataset, query(), run, rules, record)
                    rows = view_refresh.signed_groups(rows, removed, plan.aggregation)
                    if kept is not None and plan.kept is not None and plan.merge:
                        rows = view_avg.touched(view_refresh.regrouped(rows, plan.kept), plan, kept)
                    if plan.merge:
                        return view_refresh.merge_groups(
                            self.ctx.spark,
                            af.target,
                            rows,
                            plan.aggregation,
                            record,
                            retract=plan.retract,
                        )
                    rows = view_refresh.combined_groups(
                        self.ctx.spark,
                        af.target,
                        plan.view_version,
                        rows,
                        plan.aggregation,
                        retract=plan.retract,
                    )
                    if kept is not None:
                        rows = view_avg.averaged(rows, plan, kept)
                return flow_runs.refresh_view(
                    self.ctx.spark,
                    af,
                    dataset,
                    rows,
                    run=run,
                    rules=rules,
                    user_metadata=record,
                    append=plan.technique == Technique.APPEND,
                )
            finally:
                for rows_read in opened:
                    rows_read.drop_views()
        df = query()
        if plan.kept is not None:
            view_avg.keep_all(self.ctx.spark, df, plan)
        return flow_runs.refresh_view(
            self.ctx.spark,
            af,
            dataset,
            df,
            run=run,
            rules=rules,
            quarantine=aside,
            user_metadata=record,
        )

    def recompute_averages(
        self,
        af: AnalysedFlow,
        dataset: Dataset,
        df: DataFrame,
        run: FlowRun,
        rules: Rules,
        record: str,
    ) -> flow_runs.WriteResult | None:
        """A view whose kept sums are exact but whose averages could differ from Spark's
        (a group past the bound of :mod:`headwater.pipelines.refresh.averages`):
        recomputed, its record naming the state already written."""
        why = view_avg.PAST_BOUND
        self.ctx.log.event(
            "planning_information",
            f"'{af.target}' is refreshed by {Technique.FULL_RECOMPUTE.value}: {why}.",
            {"chosen": Technique.FULL_RECOMPUTE.value, "reason": why},
            flow_name=af.flow.name,
            dataset_name=af.target,
        )
        run.technique = Technique.FULL_RECOMPUTE.value
        return flow_runs.refresh_view(
            self.ctx.spark, af, dataset, df, run=run, rules=rules, user_metadata=record
        )

    def batch_done(self, run: FlowRun) -> None:
        self.ctx.log.flow_progress(
            run.name, run.target, FlowStatus.RUNNING, run.metrics, run.data_quality
        )

    def reads(
        self,
        graph: Graph,
        af: AnalysedFlow,
        run: FlowRun,
        quarantines: bool = False,
        *,
        frames: dict[str, list[DataFrame]] | None = None,
        pins: Mapping[str, int | None] | None = None,
        appended: Mapping[str, DataFrame] | None = None,
    ) -> PipelineReads:
        """The flow's reads of the pipeline's datasets and of Delta tables outside it
        (``frames`` collects the stored ones by key; ``pins``: read those at these versions, unless the flow time-travels
        itself; ``appended``: read only these rows of those inputs)."""

        def source(
            reads: PipelineReads, key: str, streaming: bool, options: Mapping[str, str]
        ) -> DataFrame:
            dataset = graph.datasets.get(key)  # (None: a Delta table outside the pipeline)
            if dataset is not None and dataset.kind == "temporary_view":
                df = evaluate(graph.flows_into(key)[0].flow, reads)
                if not dataset.expectations:
                    return df
                counted = self.ctx.counts_view(key, af.flow.name)
                return flow_runs.check_view(df, Rules(key, dataset.expectations), run, counted)
            table = api.table(self.ctx.spark, key)
            if streaming:
                return table.read_stream(options)
            version = (pins or {}).get(key)
            if appended is not None and key in appended:
                rows = appended[key]
            elif version is not None and not TIME_TRAVEL & {k.lower() for k in options}:
                rows = table.read(version=version, options=options)
            else:
                rows = table.read(options=options)
            if frames is not None:  # (a view's: a read its plan can tell)
                rows = unnarrowed(rows)
                frames.setdefault(key, []).append(rows)
            return rows

        return PipelineReads(
            self.ctx.spark,
            graph.names,
            set(graph.datasets),
            source,
            af.flow.origin,
            lambda i: self.ctx.layout.source_state(af.flow.name, i),
            file_column=FILE_METADATA if quarantines else None,
        )
