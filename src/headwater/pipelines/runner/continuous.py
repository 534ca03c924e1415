"""Continuous updates: streams keep running, materialized views follow their inputs.

Every selected stream starts at once with a processing-time trigger (its upstream tables
were created when the update set up its tables, so a stream never waits for another to
start); once flows run a single time. Every interval the latest version of each
materialized view's inputs is read from their logs; a view whose inputs moved is
recomputed, one at a time, never while it is already being recomputed. The update ends
when ``stop`` is set (Ctrl-C or SIGTERM in the CLI): each stream stops after its current
micro-batch (a batch is one Delta commit, so stopping loses nothing), and the event log
is flushed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from headwater import api
from headwater.pipelines.graph.analysis import AnalysedFlow, Graph
from headwater.pipelines.runner.context import UpdateContext

FLUSH_EVERY_S = 10.0


def interval_seconds(text: str) -> float:
    """``"5 seconds"``, ``"1 minute"``, ``"500 ms"`` or a number of seconds."""
    parts = text.strip().lower().split()
    value = float(parts[0])
    unit = parts[1] if len(parts) > 1 else "seconds"
    scale = {"ms": 0.001, "millisecond": 0.001, "second": 1.0, "minute": 60.0, "hour": 3600.0}
    for name, factor in scale.items():
        if unit.startswith(name):
            return value * factor
    raise ValueError(f"Unknown interval unit in '{text}'.")


def run_continuous(
    ctx: UpdateContext,
    graph: Graph,
    to_run: list[AnalysedFlow],
    run_flow: Callable[..., None],
) -> None:
    """Run until ``ctx.stop`` is set; ``run_flow(graph, flow, trigger=None)`` runs one
    flow to its end (a stream under ``trigger`` until stopped)."""
    interval = ctx.options.trigger_interval
    trigger = {"processingTime": interval}
    threads = []
    for af in to_run:
        if af.streaming or af.flow.once:
            t = threading.Thread(
                target=run_flow,
                args=(graph, af, None if af.flow.once else trigger),
                name=f"flow-{af.flow.name}",
                daemon=True,
            )
            t.start()
            threads.append(t)
    views = [af for af in to_run if not af.streaming and not af.flow.once]
    seen: dict[str, tuple[int, ...]] = {}
    period = interval_seconds(interval)
    flushed = time.monotonic()
    while not ctx.stop.is_set():
        for af in views:
            inputs = sorted(graph.upstream(af) | graph.outside(af))
            versions = tuple(_version(ctx, key) for key in inputs)
            if seen.get(af.flow.name) != versions:
                run_flow(graph, af)
                seen[af.flow.name] = versions
        if time.monotonic() - flushed > FLUSH_EVERY_S:
            ctx.log.flush()
            flushed = time.monotonic()
        ctx.stop.wait(period)
    for t in threads:
        t.join()
    for af in views:
        ctx.runs[af.flow.name].update_ended()


def _version(ctx: UpdateContext, key: str) -> int:
    table = api.table(ctx.spark, key)
    found = table.log().version()
    return -1 if found is None else found
