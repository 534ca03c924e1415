"""One pipeline update, as its phases: spec -> definitions -> graph -> checks -> resets ->
tables -> flows -> result.

The shape of :mod:`headwater.copyinto` (spec, plan, execute), for a graph, and of Spark's
own pipeline server: a fixed update context (:mod:`.context`), the dataset manager
(:mod:`.datasets`: selection, crash-safe full refresh, tables), the graph's checks and
definition events (:mod:`.definitions`), a scheduler (:mod:`.triggered` or
:mod:`.continuous`) and the execution of one flow (:mod:`.flow_execution`). This module
only orders them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from pyspark.sql import SparkSession

from headwater import storage
from headwater.event_log_format import FlowStatus
from headwater.pipelines.define.loader import load
from headwater.pipelines.define.spec import PipelineSpec
from headwater.pipelines.graph.analysis import Graph, analyse
from headwater.pipelines.graph.reads import Names
from headwater.pipelines.graph.sql_flows import sql_loader
from headwater.pipelines.runner import change_feeds, datasets, definitions
from headwater.pipelines.runner.context import (
    UpdateContext,
    UpdateOptions,
    UpdateResult,
    event_log_name,
)
from headwater.pipelines.runner.continuous import run_continuous
from headwater.pipelines.runner.event_log import Listener
from headwater.pipelines.runner.flow_execution import FlowExecutor
from headwater.pipelines.runner.flows import FlowRun
from headwater.pipelines.runner.triggered import run_triggered

__all__ = ["Update", "UpdateOptions", "UpdateResult", "event_log_name"]


class Update:
    """One update of one pipeline; :meth:`run` once."""

    def __init__(
        self,
        spark: SparkSession,
        spec: PipelineSpec,
        options: UpdateOptions,
        listeners: Sequence[Listener] = (),
    ) -> None:
        self.ctx = UpdateContext.create(spark, spec, options, listeners)

    @property
    def update_id(self) -> str:
        return self.ctx.update_id

    def run(self) -> UpdateResult:
        try:
            return self._run()
        finally:
            self.ctx.settings.restore()  # the caller's session as the update found it

    def _run(self) -> UpdateResult:
        start = time.monotonic()
        ctx, o = self.ctx, self.ctx.options
        registry = load(ctx.settings, ctx.spec, sql_loader(ctx.settings, ctx.spec))
        names = Names(ctx.spec.database)
        selected = datasets.selection(ctx, registry, names)
        ctx.log.event("create_update", f"Update {ctx.update_id[:8]} started.", self._cause())
        ctx.log.user_action("START")
        ctx.log.update_progress("INITIALIZING")
        if not o.dry_run:  # (before the graph's analysis reads Auto Loader's state)
            datasets.adopt_renamed_progress(ctx, [f.name for f in registry.flows.values()])
        resets = set() if o.dry_run else datasets.resets(ctx, registry, names, selected)
        reset_flows = {f.name for f in registry.flows.values() if names.key(f.target) in resets}

        def source_state(flow: str, index: int) -> str | None:
            path = ctx.layout.source_state(flow, index)
            usable = flow not in reset_flows and storage.is_nonempty_dir(path)
            return path if usable else None

        graph = analyse(ctx.spark, registry, ctx.spec.database, source_state)
        fed = change_feeds.read_by_views(graph)  # (before the graph says they have it)
        graph = change_feeds.with_feeds(graph, fed)
        definitions.check_expectations(ctx.spark, graph)
        definitions.log_definitions(ctx.log, graph)
        if o.dry_run:
            ctx.log.update_progress("COMPLETED")
            return self._result(graph, "COMPLETED", start)
        datasets.ensure_pipeline_id(ctx)
        ctx.log.update_progress("SETTING_UP_TABLES")
        datasets.clear_progress(ctx, reset_flows, resets)
        datasets.set_up_tables(ctx, graph, selected, resets)
        change_feeds.turn_on(ctx, fed & selected)
        ctx.log.update_progress("RUNNING")
        to_run = [
            f
            for f in graph.flows.values()
            if f.target in selected and graph.datasets[f.target].kind != "temporary_view"
        ]
        for af in to_run:
            ctx.runs[af.flow.name] = FlowRun(af.flow.name, af.target)
        executor = FlowExecutor(ctx)
        try:
            if o.continuous:
                run_continuous(ctx, graph, to_run, executor.run_flow)
            else:
                run_triggered(ctx, graph, to_run, executor.run_flow)
        finally:
            failed = any(r.status == FlowStatus.FAILED for r in ctx.runs.values())
            state = "FAILED" if failed else "COMPLETED"
            if ctx.stop.is_set() and not o.continuous:
                state = "CANCELED"
            ctx.log.update_progress(state)
            ctx.log.flush()
        return self._result(graph, state, start)

    def _result(self, graph: Graph, state: str, start: float) -> UpdateResult:
        ctx = self.ctx
        seconds = round(time.monotonic() - start, 3)
        events = list(ctx.log.events)
        return UpdateResult(ctx.update_id, ctx.spec.name, state, graph, ctx.runs, seconds, events)

    def _cause(self) -> dict[str, Any]:
        o = self.ctx.options
        return {
            "cause": "API_CALL",
            "full_refresh": o.full_refresh_all,
            "refresh_selection": list(o.refresh or []),
            "full_refresh_selection": list(o.full_refresh),
            "dry_run": o.dry_run,
            "continuous": o.continuous,
        }
