"""SQL sources into the registry: each ``CREATE ... AS`` query becomes a flow function.

:mod:`.definitions` parses (Spark-free); here the parsed queries become the same kind
of flow functions Python definitions give, so the graph and the runner never tell them
apart. The function runs the query through the pipeline reads active when it is called
(:mod:`.reads`): its dataset references become temporary views of what the pipeline
answers, then Spark runs the rewritten text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame

from headwater.adapter.resolution import current
from headwater.errors import PipelineDefinitionError
from headwater.pipelines.define.auto_cdc import cdc_flow
from headwater.pipelines.define.elements import Flow, Origin
from headwater.pipelines.define.registry import Registry, SqlLoader
from headwater.pipelines.define.settings import SessionSettings
from headwater.pipelines.define.spec import PipelineSpec
from headwater.pipelines.graph.reads import PipelineReads
from headwater.pipelines.sql_files.definitions import parse_sql_file


def query_function(query: Any, origin: Origin) -> Callable[[], DataFrame]:
    """The flow function of a parsed SQL query."""

    def run() -> DataFrame:
        reads = current()
        if not isinstance(reads, PipelineReads):
            raise PipelineDefinitionError(
                "A pipeline's SQL query runs only inside a pipeline update.",
                origin.file,
                origin.line,
            )
        return reads.run_query(query)

    return run


def sql_loader(settings: SessionSettings, spec: PipelineSpec) -> SqlLoader:
    def load_sql(registry: Registry, text: str, path: Path) -> None:
        configuration = {**spec.configuration, **registry.sql_conf}
        parsed = parse_sql_file(text, str(path), configuration)
        registry.sql_conf.update(parsed.conf)
        for key, value in parsed.conf.items():
            settings.set(key, value, str(path))
        for item in parsed.datasets:
            dataset = item.dataset
            registry.add_dataset(dataset)
            if item.query is not None:
                registry.add_flow(
                    Flow(
                        dataset.name,
                        dataset.name,
                        query_function(item.query, dataset.origin),
                        dataset.origin,
                        sql=item.text,
                    )
                )
        for flow in parsed.flows:
            registry.add_flow(
                Flow(
                    flow.name,
                    flow.target,
                    query_function(flow.query, flow.origin),
                    flow.origin,
                    once=flow.once,
                    implicit=False,
                    sql=flow.text,
                )
            )
        for cdc in parsed.auto_cdc:
            applied = cdc_flow(cdc.target, cdc.changes, cdc.origin, cdc.name)
            registry.add_flow(replace(applied, sql=cdc.text))

    return load_sql
