"""Declarative pipelines: datasets defined in Python or SQL, run as Delta tables.

Definitions as ``pyspark.pipelines`` and the known system's ``dlt`` write them run
unchanged (the runner provides ``dlt`` while it loads sources; this module exports the
same names for notebooks and IDEs)::

    from headwater import pipelines
    result = pipelines.run("path/to/pipeline")          # spark-pipeline.yml there or above
    assert result.ok, result.failed()

``headwater pipelines run`` is the same from the shell.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from headwater.errors import PipelineDefinitionError
from headwater.pipelines.define.decorators import (
    append_flow,
    apply_changes,
    apply_changes_from_snapshot,
    create_auto_cdc_flow,
    create_auto_cdc_from_snapshot_flow,
    create_sink,
    create_streaming_live_table,
    create_streaming_table,
    create_target_table,
    expect,
    expect_all,
    expect_all_or_drop,
    expect_all_or_fail,
    expect_all_or_quarantine,
    expect_or_drop,
    expect_or_fail,
    expect_or_quarantine,
    materialized_view,
    read,
    read_stream,
    table,
    temporary_view,
    view,
)
from headwater.pipelines.define.spec import PipelineSpec, load_spec
from headwater.pipelines.runner.event_log import Event, Listener
from headwater.pipelines.runner.update import Update, UpdateOptions, UpdateResult

__all__ = [
    "Event",
    "PipelineSpec",
    "UpdateOptions",
    "UpdateResult",
    "append_flow",
    "apply_changes",
    "apply_changes_from_snapshot",
    "create_auto_cdc_flow",
    "create_auto_cdc_from_snapshot_flow",
    "create_sink",
    "create_streaming_live_table",
    "create_streaming_table",
    "create_target_table",
    "dry_run",
    "expect",
    "expect_all",
    "expect_all_or_drop",
    "expect_all_or_fail",
    "expect_all_or_quarantine",
    "expect_or_drop",
    "expect_or_fail",
    "expect_or_quarantine",
    "load_spec",
    "materialized_view",
    "quality",
    "read",
    "read_stream",
    "run",
    "table",
    "temporary_view",
    "view",
]


def run(
    spec: str | Path | PipelineSpec,
    spark: SparkSession | None = None,
    *,
    refresh: Sequence[str] | None = None,
    full_refresh: Sequence[str] = (),
    full_refresh_all: bool = False,
    dry_run: bool = False,
    continuous: bool = False,
    listeners: Sequence[Listener] = (),
    **options: Any,
) -> UpdateResult:
    """Run one update of the pipeline at ``spec`` (a spec file, its directory, or a
    :class:`PipelineSpec`) and return what it did. Options of :class:`UpdateOptions`
    (``trigger_interval``, ``max_retries``, ``stop``...) pass through."""
    from headwater.session import session

    spark = spark or session()
    pipeline = spec if isinstance(spec, PipelineSpec) else load_spec(spec)
    update_options = UpdateOptions(
        refresh=refresh,
        full_refresh=tuple(full_refresh),
        full_refresh_all=full_refresh_all,
        dry_run=dry_run,
        continuous=continuous,
        **options,
    )
    return Update(spark, pipeline, update_options, listeners).run()


def dry_run(spec: str | Path | PipelineSpec, spark: SparkSession | None = None) -> UpdateResult:
    """Load and analyse every definition, write nothing."""
    return run(spec, spark, dry_run=True)


def quality(where: str | Path | PipelineSpec, spark: SparkSession | None = None) -> DataFrame:
    """The pipeline's expectation results as a plain table: one row per update, dataset
    and expectation (``passed_records``, ``failed_records``, ``failure_rate``, the action).
    ``where``: the pipeline (spec file, its directory, a :class:`PipelineSpec`) or its
    storage folder. SQL: ``SELECT * FROM pipeline_quality('<storage>')``."""
    from headwater.session import session
    from headwater.sql.functions import pipeline_quality

    spark = spark or session()
    if isinstance(where, PipelineSpec):
        storage = where.storage_path
    else:
        try:
            storage = load_spec(where).storage_path
        except PipelineDefinitionError:
            storage = str(where)
    return pipeline_quality(spark, storage)
