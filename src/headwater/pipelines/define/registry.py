"""Capturing definitions: SDP's registry interface, implemented in-process.

``pyspark.pipelines`` decorators hand their frozen graph elements to whatever
``GraphElementRegistry`` is active (``graph_element_registration_context``); Spark's own
runner sends them to a Spark Connect server. This one keeps them, converted to
:mod:`headwater.pipelines.define.elements`, so the same user code runs with no server. headwater's
``dlt``-style functions register here directly; SQL files go through
:mod:`headwater.pipelines.sql_files.definitions` (via :meth:`Registry.register_sql`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from pyspark.pipelines import output as sdp_output
from pyspark.pipelines.flow import AutoCdcFlow as SdpAutoCdcFlow
from pyspark.pipelines.flow import Flow as SdpFlow
from pyspark.pipelines.graph_element_registry import GraphElementRegistry
from pyspark.pipelines.source_code_location import SourceCodeLocation

from headwater.errors import PipelineDefinitionError
from headwater.pipelines.define.auto_cdc import auto_cdc, cdc_flow
from headwater.pipelines.define.elements import (
    Dataset,
    DatasetKind,
    Expectation,
    Flow,
    Origin,
    canonical_name,
)

SqlLoader = Callable[["Registry", str, Path], None]
EXPECTATIONS = "__pipeline_expectations__"
"""The attribute ``@expect*`` decorators leave on a query function not registered yet
(they sit below ``@dp.table``, so they run first)."""


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
        target = canonical_name(flow.target)
        implicit = canonical_name(flow.name) == target and target.lower() in self.datasets
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

    def register_auto_cdc_flow(self, flow: SdpAutoCdcFlow, **beyond: Any) -> None:
        """``dp.create_auto_cdc_flow``: SDP hands its arguments over as Spark Connect
        Columns; their SQL text is what the flow keeps. ``beyond``: arguments the installed
        pyspark's element has no field for (4.2's lacks ``track_history_*`` and
        ``spark_conf``)."""

        def given(name: str) -> Any:
            return beyond.get(name, getattr(flow, name, None))

        spec = auto_cdc(
            flow.source,
            flow.keys,
            flow.sequence_by,
            apply_as_deletes=flow.apply_as_deletes,
            column_list=flow.column_list or None,
            except_column_list=flow.except_column_list or None,
            stored_as_scd_type=flow.stored_as_scd_type or 1,
            track_history_column_list=given("track_history_column_list") or None,
            track_history_except_column_list=given("track_history_except_column_list") or None,
            unavailable_columns=given("unavailable_columns"),
        )
        origin = origin_of(flow.source_code_location)
        conf = dict(given("spark_conf") or {})
        self.add_flow(cdc_flow(flow.target, spec, origin, flow.name, conf))

    def register_sql(self, sql_text: str, file_path: Path) -> None:
        if self.sql_loader is None:
            raise PipelineDefinitionError("SQL sources cannot be loaded here.", str(file_path))
        self.sql_loader(self, sql_text, file_path)

    # -- ours --------------------------------------------------------------------------------

    def add_dataset(self, dataset: Dataset) -> None:
        """Register ``dataset`` under its :func:`canonical_name` (one spelling however
        it was quoted)."""
        dataset = replace(dataset, name=canonical_name(dataset.name))
        if dataset.expectations and dataset.kind == "sink":
            raise PipelineDefinitionError(
                f"[PIPELINE_EXPECTATION_ON_SINK] Sink '{dataset.name}' cannot have "
                "expectations: declare them on a dataset the sink's flows read.",
                dataset.origin.file,
                dataset.origin.line,
            )
        unique_names(dataset.name, dataset.expectations, dataset.origin)
        refused = None
        if dataset.persisted and (dataset.format or "delta").lower() != "delta":
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
        """Register ``flow``, its name and target spelt by :func:`canonical_name`: its
        checkpoint, event log entries and progress lines use that name."""
        flow = replace(flow, name=canonical_name(flow.name), target=canonical_name(flow.target))
        pending = getattr(flow.func, EXPECTATIONS, ())
        if pending and not flow.implicit:
            raise PipelineDefinitionError(
                f"[PIPELINE_EXPECTATION_ON_FLOW] Flow '{flow.name}' carries expectations, "
                "which belong to datasets: declare them on its target "
                f"(create_streaming_table('{flow.target}', expect_all=...)).",
                flow.origin.file,
                flow.origin.line,
            )
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
        if pending:
            self.add_expectations(flow.target, tuple(pending))

    def add_expectations(self, dataset_name: str, expectations: tuple[Expectation, ...]) -> None:
        """Expectations for a dataset already registered (an ``@expect*`` placed above
        ``@dlt.table``); they come before those of decorators nearer the function."""
        key = canonical_name(dataset_name).lower()
        dataset = self.datasets[key]
        both = (*expectations, *dataset.expectations)
        unique_names(dataset.name, both, dataset.origin)
        self.datasets[key] = replace(dataset, expectations=both)

    def implicit_target(self, func: Callable[..., object]) -> str | None:
        """The dataset whose own query ``func`` is, if registered."""
        for flow in self.flows.values():
            if flow.func is func and flow.implicit:
                return flow.target
        return None


def unique_names(dataset: str, expectations: tuple[Expectation, ...], origin: Origin) -> None:
    seen: set[str] = set()
    for e in expectations:
        if e.name.lower() in seen:
            raise PipelineDefinitionError(
                f"[PIPELINE_DUPLICATE_EXPECTATION] Expectation '{e.name}' is declared twice on "
                f"'{dataset}': expectation names are unique per dataset.",
                origin.file,
                origin.line,
            )
        seen.add(e.name.lower())
