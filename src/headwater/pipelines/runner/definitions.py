"""The graph checked and described before anything runs: every expectation against the
rows of every flow into its dataset, then one ``flow_definition`` event per flow (what the
report and ``pipeline_quality`` read to know the graph)."""

from __future__ import annotations

from pyspark.sql import SparkSession

from headwater.errors import PipelineDefinitionError
from headwater.pipelines.define.elements import Dataset
from headwater.pipelines.graph.analysis import AnalysedFlow, Graph
from headwater.pipelines.runner.event_log import EventLog
from headwater.pipelines.runner.expectations import Rules


def check_expectations(spark: SparkSession, graph: Graph) -> None:
    """Every constraint parses, names known columns and is boolean, checked against the
    rows of every flow into its dataset, before anything runs."""
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
        rules.validate(spark, af.schema, dataset)


def flow_type(af: AnalysedFlow, dataset: Dataset) -> str:
    """``flow_definition.flow_type``, as the known system's event log names them."""
    cdc = af.flow.auto_cdc
    if cdc is not None:
        return "CHANGE" if not cdc.from_snapshot else "SNAPSHOT_CHANGE"
    return "COMPLETE" if dataset.kind == "materialized_view" else "APPEND"


def log_definitions(log: EventLog, graph: Graph) -> None:
    """One ``flow_definition`` event per flow: its kind, inputs, schema and checks."""
    for af in graph.flows.values():
        dataset = graph.datasets[af.target]
        log.event(
            "flow_definition",
            f"Flow '{af.flow.name}' is defined as {'a stream' if af.streaming else 'a batch'} "
            f"into {dataset.kind.replace('_', ' ')} '{af.target}'.",
            {
                "output_dataset": af.target,
                # Delta tables outside the pipeline too, named as the user wrote them
                "input_datasets": [*af.inputs, *outside_inputs(af)],
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


def outside_inputs(af: AnalysedFlow) -> list[str]:
    """The tables outside the pipeline a flow reads, as the user wrote them: those read in
    batch (versioned inputs), then those only streamed."""
    batch = [name for _, name in af.written]
    return batch + [name for name in af.streamed if name not in batch]
