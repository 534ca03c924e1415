"""Capturing definitions: SDP's registry interface, implemented in-process.

``pyspark.pipelines`` decorators hand their frozen graph elements to whatever
``GraphElementRegistry`` is active (``graph_element_registration_context``); Spark's own
runner sends them to a Spark Connect server. This one keeps them, converted to
:mod:`headwater.pipelines.elements`, so the same user code runs with no server. headwater's
``dlt``-style functions register here directly; SQL files go through
:mod:`headwater.pipelines.sql_definitions` (via :meth:`Registry.register_sql`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pyspark.pipelines import output as sdp_output
from pyspark.pipelines.flow import AutoCdcFlow as SdpAutoCdcFlow
from pyspark.pipelines.flow import Flow as SdpFlow
from pyspark.pipelines.graph_element_registry import GraphElementRegistry
from pyspark.pipelines.source_code_location import SourceCodeLocation

from headwater.errors import PipelineDefinitionError
from headwater.pipelines.elements import Dataset, DatasetKind, Flow, Origin

SqlLoader = Callable[["Registry", str, Path], None]


def origin_of(location: SourceCodeLocation) -> Origin:
    return Origin(location.filename, location.line_number)


class Registry(GraphElementRegistry):
    """The datasets and flows one pipeline's sources define, in definition order."""

    def __init__(self, sql_loader: SqlLoader | None = None) -> None:
        self.datasets: dict[str, Dataset] = {}
        self.flows: dict[str, Flow] = {}
        self.sql_conf: dict[str, str] = {}  # SET statements of SQL sources
        self.sql_loader = sql_loader

    # -- SDP's interface ---------------------------------------------------------------------

    def register_output(self, output: sdp_output.Output) -> None:
        kind: DatasetKind
        if isinstance(output, sdp_output.MaterializedView):
            kind = "materialized_view"
        elif isinstance(output, sdp_output.StreamingTable):
            kind = "streaming_table"
        elif isinstance(output, sdp_output.TemporaryView):
            kind = "temporary_view"
        elif isinstance(output, sdp_output.Sink):
            self.add_dataset(
                Dataset(
                    output.name,
                    "sink",
                    origin_of(output.source_code_location),
                    comment=output.comment,
                    format=output.format,
                    options=dict(output.options),
                )
            )
            return
        else:
            raise PipelineDefinitionError(
                f"Unknown kind of pipeline output {type(output).__name__}.",
                output.source_code_location.filename,
                output.source_code_location.line_number,
            )
        table = output if isinstance(output, sdp_output.Table) else None
        self.add_dataset(
            Dataset(
                output.name,
                kind,
                origin_of(output.source_code_location),
                comment=output.comment,
                table_properties=dict(table.table_properties) if table else {},
                partition_cols=tuple(table.partition_cols or ()) if table else (),
                cluster_by=tuple(table.cluster_by or ()) if table else (),
                schema=table.schema if table else None,
                format=table.format if table else None,
            )
        )

    def register_flow(self, flow: SdpFlow) -> None:
        implicit = flow.name == flow.target and flow.target in self.datasets
        self.add_flow(
            Flow(
                name=flow.name,
                target=flow.target,
                func=flow.func,
                origin=origin_of(flow.source_code_location),
                spark_conf=dict(flow.spark_conf),
                once=bool(getattr(flow, "once", False)),
                implicit=implicit,
            )
        )

    def register_auto_cdc_flow(self, flow: SdpAutoCdcFlow) -> None:
        raise PipelineDefinitionError(
            "[PIPELINE_AUTO_CDC_NOT_SUPPORTED] AUTO CDC flows are not supported yet "
            f"(flow into {flow.target}).",
            flow.source_code_location.filename,
            flow.source_code_location.line_number,
        )

    def register_sql(self, sql_text: str, file_path: Path) -> None:
        if self.sql_loader is None:
            raise PipelineDefinitionError("SQL sources cannot be loaded here.", str(file_path))
        self.sql_loader(self, sql_text, file_path)

    # -- ours --------------------------------------------------------------------------------

    def add_dataset(self, dataset: Dataset) -> None:
        if dataset.expectations:  # refused rather than silently not enforced
            raise PipelineDefinitionError(
                "[PIPELINE_EXPECTATIONS_NOT_SUPPORTED] Expectations (CONSTRAINT ... EXPECT) "
                f"on '{dataset.name}' are not supported yet; remove them to run the pipeline.",
                dataset.origin.file,
                dataset.origin.line,
            )
        refused = None
        if dataset.cluster_by:
            refused = "cluster_by (liquid clustering) is not supported yet; use partition_cols"
        elif dataset.persisted and (dataset.format or "delta").lower() != "delta":
            refused = f"format='{dataset.format}': pipeline tables are Delta tables"
        if refused:
            raise PipelineDefinitionError(
                f"[PIPELINE_UNSUPPORTED_TABLE_OPTION] '{dataset.name}': {refused}.",
                dataset.origin.file,
                dataset.origin.line,
            )
        key = dataset.name.lower()
        if key in self.datasets:
            first = self.datasets[key]
            raise PipelineDefinitionError(
                f"[PIPELINE_DUPLICATE_DATASET] Dataset '{dataset.name}' is defined twice: "
                f"here and at {first.origin}. Rename one of them.",
                dataset.origin.file,
                dataset.origin.line,
            )
        self.datasets[key] = dataset

    def add_flow(self, flow: Flow) -> None:
        key = flow.name.lower()
        if key in self.flows:
            first = self.flows[key]
            raise PipelineDefinitionError(
                f"[PIPELINE_DUPLICATE_FLOW] Flow '{flow.name}' is defined twice: here and at "
                f"{first.origin}. Give one of them another name (append_flow(name=...)).",
                flow.origin.file,
                flow.origin.line,
            )
        self.flows[key] = flow
