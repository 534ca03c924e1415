"""Running one flow of an update: a stream into its table, a materialized view's
recomputation, a one-time backfill, or a stream into a sink.

Every write goes through the typed API (:mod:`headwater.api`), so each lands as Delta
commits on the one commit path. Exactly once, per flow: a stream keeps its own checkpoint
(and so its own Delta transaction id); a once flow writes under a transaction id that
names the flow and its target's refresh epoch, so a rerun after a crash is skipped by
Delta itself; a materialized view is one overwrite commit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from headwater import api
from headwater.delta.options import WriteSpec
from headwater.delta.write import WriteResult
from headwater.pipelines.elements import Dataset
from headwater.pipelines.graph import AnalysedFlow
from headwater.pipelines.layout import Layout


class SchemaChanged(RuntimeError):
    """Auto Loader stopped the stream for new columns: start it again (as the known
    system restarts such flows), it then reads with the evolved schema."""


@dataclass
class FlowRun:
    """What one flow did in an update."""

    name: str
    target: str
    status: str = "QUEUED"
    num_output_rows: int = 0
    batches: int = 0
    seconds: float = 0.0
    error: BaseException | None = None
    query: StreamingQuery | None = field(default=None, repr=False)
    counts_writes: bool = False  # rows counted as batches commit (else from progress)

    @property
    def metrics(self) -> dict[str, Any]:
        return {"num_output_rows": self.num_output_rows}


def table_spec(dataset: Dataset, mode: str, **extra: Any) -> WriteSpec:
    return WriteSpec(
        mode=mode,  # type: ignore[arg-type]
        merge_schema=mode == "append",
        overwrite_schema=mode == "overwrite",
        partition_by=tuple(dataset.partition_cols),
        configuration=dict(dataset.table_properties) or None,
        description=dataset.comment,
        **extra,
    )


def start_stream(
    spark: SparkSession,
    af: AnalysedFlow,
    dataset: Dataset,
    df: DataFrame,
    layout: Layout,
    trigger: Mapping[str, str | bool],
    query_name: str,
    run: FlowRun,
) -> StreamingQuery:
    """Start ``df`` streaming into the flow's table or sink, with the flow's checkpoint;
    ``run`` counts the rows each committed micro-batch wrote."""
    checkpoint = layout.checkpoint(af.flow.name)
    if dataset.kind == "sink":
        writer = df.writeStream.format(dataset.format or "delta").options(**dataset.options)
        writer = writer.option("checkpointLocation", checkpoint).queryName(query_name)
        return writer.trigger(**trigger).start()  # type: ignore[arg-type]
    run.counts_writes = True

    def committed(result: WriteResult) -> None:
        run.num_output_rows += result.num_rows
        run.batches += 1

    table = api.table(spark, af.target)
    return table.start_stream(
        df,
        checkpoint=checkpoint,
        spec=table_spec(dataset, "append"),
        trigger=trigger,
        query_name=query_name,
        on_commit=committed,
    )


def await_stream(
    query: StreamingQuery,
    run: FlowRun,
    stop: threading.Event,
    on_batch: Callable[[FlowRun], None] | None = None,
) -> None:
    """Wait for the query to end (``availableNow``: when it has drained; otherwise when
    ``stop`` is set), counting its rows as batches complete."""
    seen = 0
    while not query.awaitTermination(0.5):  # type: ignore[arg-type]
        batches = run.batches
        seen = _count(query, run, seen)
        if on_batch is not None and run.batches != batches:
            on_batch(run)
        if stop.is_set():
            query.stop()
    _count(query, run, seen)
    error = query.exception()
    if error is not None:
        text = f"{error.desc if hasattr(error, 'desc') else error}"
        if "UNKNOWN_FIELD_EXCEPTION" in text:
            raise SchemaChanged(text)
        raise RuntimeError(text)


def _count(query: StreamingQuery, run: FlowRun, seen: int) -> int:
    """Add the rows of batches after ``seen`` (the next batch id not counted yet), for
    streams whose writes are not counted as they commit (sinks)."""
    new = [p for p in query.recentProgress if p.get("batchId", -1) >= seen]
    if not run.counts_writes:
        run.num_output_rows += sum(int(p.get("numInputRows") or 0) for p in new)
        run.batches += len({p["batchId"] for p in new if p.get("numInputRows")})
    return max([seen - 1, *[int(p["batchId"]) for p in new]]) + 1


def refresh_view(spark: SparkSession, af: AnalysedFlow, dataset: Dataset, df: DataFrame) -> int:
    """Recompute a materialized view: its query's rows replace the table's in one commit."""
    return api.table(spark, af.target).write(df, table_spec(dataset, "overwrite")).num_rows


def append_once(
    spark: SparkSession, af: AnalysedFlow, dataset: Dataset, df: DataFrame, app_id: str
) -> int:
    """A one-time backfill: appended under ``(app_id, 0)``, skipped if already there."""
    spec = table_spec(dataset, "append", txn=(app_id, 0))
    return api.table(spark, af.target).write(df, spec).num_rows


def elapsed(start: float) -> float:
    return round(time.monotonic() - start, 3)
