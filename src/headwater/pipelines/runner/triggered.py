"""Triggered updates: every selected flow runs once over what is available (streams with
``availableNow``), each as soon as every flow into what it reads has finished, independent
flows at the same time (up to ``max_concurrent_flows``). A failed flow fails only itself
and the flows downstream of it (SKIPPED); a stop leaves the flows not yet started STOPPED.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from headwater.event_log_format import FlowStatus
from headwater.pipelines.graph.analysis import AnalysedFlow, Graph
from headwater.pipelines.runner.context import UpdateContext

# States of a flow after which the flows that wait for it are skipped.
SKIPS_DOWNSTREAM = (FlowStatus.FAILED, FlowStatus.SKIPPED, FlowStatus.STOPPED)


def run_triggered(
    ctx: UpdateContext,
    graph: Graph,
    to_run: list[AnalysedFlow],
    run_flow: Callable[[Graph, AnalysedFlow], None],
) -> None:
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
        ctx.log.flow_progress(name, pending[name].target, FlowStatus.QUEUED)
    with ThreadPoolExecutor(max(1, ctx.options.max_concurrent_flows)) as pool:
        while pending or running:
            for name, af in list(pending.items()):
                statuses = [ctx.runs[d].status for d in deps[name]]
                if ctx.stop.is_set():
                    _finish(ctx, af, FlowStatus.STOPPED)
                elif any(s in SKIPS_DOWNSTREAM for s in statuses):
                    _finish(ctx, af, FlowStatus.SKIPPED)
                elif all(s == FlowStatus.COMPLETED for s in statuses):
                    running[pool.submit(run_flow, graph, af)] = name
                else:
                    continue
                del pending[name]
            if running:
                done, _ = wait(list(running), return_when=FIRST_COMPLETED)
                for future in done:
                    running.pop(future)
                    future.result()


def _finish(ctx: UpdateContext, af: AnalysedFlow, status: FlowStatus) -> None:
    ctx.runs[af.flow.name].not_started(status)
    ctx.log.flow_progress(af.flow.name, af.target, status)
