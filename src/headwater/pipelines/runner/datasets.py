"""The update's datasets before any flow runs (Spark's pipeline server calls this the
dataset manager): which datasets it refreshes, which it resets, and their tables created or
emptied.

Full refresh is crash-safe: the datasets to clear are recorded first, then their flows'
checkpoints (and Auto Loader state) are removed, then the tables are emptied, then the
record is removed. An update that finds the record redoes the refresh before anything else.
"""

from __future__ import annotations

import uuid

from headwater import api
from headwater.errors import PipelineDefinitionError
from headwater.pipelines.define.elements import earlier_spellings
from headwater.pipelines.define.registry import Registry
from headwater.pipelines.graph.analysis import Graph
from headwater.pipelines.graph.reads import Names
from headwater.pipelines.runner import flows as flow_runs
from headwater.pipelines.runner.context import UpdateContext
from headwater.pipelines.runner.expectations import Rules, quarantine_name

RESET_ALLOWED = "pipelines.reset.allowed"


def selection(ctx: UpdateContext, registry: Registry, names: Names) -> set[str]:
    """The dataset keys this update refreshes; unknown names are errors."""
    known = {names.key(d.name): d for d in registry.datasets.values()}
    o = ctx.options
    for option, given in (("--refresh", o.refresh or ()), ("--full-refresh", o.full_refresh)):
        for name in given:
            if names.key(name) not in known:
                listed = ", ".join(sorted(d.name for d in known.values()))
                raise PipelineDefinitionError(
                    f"[PIPELINE_UNKNOWN_DATASET] {option} names '{name}', which is not a "
                    f"dataset of pipeline '{ctx.spec.name}'. Its datasets: {listed}."
                )
    if o.refresh is None and not o.full_refresh:
        return set(known)
    return {names.key(n) for n in [*(o.refresh or ()), *o.full_refresh]}


def resets(ctx: UpdateContext, registry: Registry, names: Names, selected: set[str]) -> set[str]:
    """The datasets this update clears: those asked for, and those of a refresh an earlier
    update began and did not finish. Nothing is changed yet."""
    o = ctx.options
    wanted = set(selected) if o.full_refresh_all else {names.key(n) for n in o.full_refresh}
    wanted |= set(ctx.layout.read_state("full_refresh").get("datasets", []))
    keys = set()
    for key in sorted(wanted):
        dataset = next((d for d in registry.datasets.values() if names.key(d.name) == key), None)
        if dataset is None or dataset.kind in ("sink", "temporary_view"):
            continue
        if dataset.table_properties.get(RESET_ALLOWED, "true").lower() == "false":
            ctx.log.event(
                "full_refresh_skipped",
                f"'{dataset.name}' is not reset: its table property {RESET_ALLOWED} is false.",
                {"dataset": key},
                level="WARN",
                dataset_name=key,
            )
            continue
        keys.add(key)
    return keys


def clear_progress(ctx: UpdateContext, flows: set[str], keys: set[str]) -> None:
    """Record the refresh, then forget the progress of the flows into its datasets (their
    tables are emptied next, by :func:`set_up_tables`)."""
    if not keys:
        return
    ctx.layout.write_state("full_refresh", {"datasets": sorted(keys)})
    for flow in sorted(flows):
        ctx.layout.reset_flow(flow)
    epochs = ctx.layout.read_state("epochs")
    for key in keys:
        epochs[key] = int(epochs.get(key, 0)) + 1
    ctx.layout.write_state("epochs", epochs)


def adopt_renamed_progress(ctx: UpdateContext, flows: list[str]) -> None:
    """Each flow's progress kept under an earlier spelling of its name (before names were
    made canonical, a SQL source's ```bronze``` kept its checkpoint as such) becomes its
    own, so it continues rather than reading its sources again."""
    for flow in flows:
        earlier = ctx.layout.adopt(flow, earlier_spellings(flow))
        if earlier is not None:
            ctx.log.event(
                "flow_renamed",
                f"Flow '{flow}' continues the progress kept as '{earlier}'.",
                {"flow": flow, "earlier_name": earlier},
                flow_name=flow,
            )


def set_up_tables(ctx: UpdateContext, graph: Graph, selected: set[str], resets: set[str]) -> None:
    """Create the streaming tables that do not exist yet, empty those being reset (and
    their quarantine tables, keeping their columns), then drop the refresh's record."""
    for key, dataset in graph.datasets.items():
        if key not in selected or dataset.kind not in ("streaming_table", "materialized_view"):
            continue
        table = api.table(ctx.spark, key)
        exists = table.exists()
        if key in resets and exists:
            empty = ctx.spark.createDataFrame([], graph.schemas[key])
            table.write(empty, flow_runs.table_spec(dataset, "overwrite"))
        if key in resets and Rules(key, dataset.expectations).quarantines:
            aside = api.find(ctx.spark, quarantine_name(dataset, key))
            if aside is not None:
                rows = aside.read()
                aside.write(rows.limit(0), flow_runs.quarantine_spec("overwrite"))
        elif not exists and dataset.kind == "streaming_table":
            empty = ctx.spark.createDataFrame([], graph.schemas[key])
            table.write(empty, flow_runs.table_spec(dataset, "append"))
    if resets:
        ctx.layout.write_state("full_refresh", {"datasets": []})


def ensure_pipeline_id(ctx: UpdateContext) -> None:
    """The pipeline's id, made on its first real update and kept in its storage."""
    state = ctx.layout.read_state("pipeline")
    if "pipeline_id" not in state:
        state = {"pipeline_id": str(uuid.uuid4()), "name": ctx.spec.name}
        ctx.layout.write_state("pipeline", state)
    ctx.log.pipeline_id = state["pipeline_id"]
