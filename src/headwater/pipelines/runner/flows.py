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
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.errors import AnalysisException, StreamingQueryException
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql.streaming import StreamingQuery

from headwater import api
from headwater.autoloader import backlog
from headwater.delta.options import WriteSpec
from headwater.engines.door import DeltaStreamSink, WriteResult
from headwater.event_log_format import FlowStatus
from headwater.pipelines.cdc.apply import CdcApplier
from headwater.pipelines.cdc.snapshots import SnapshotApplier
from headwater.pipelines.define.auto_cdc import resolve, tombstone_seconds
from headwater.pipelines.define.elements import Dataset
from headwater.pipelines.graph.analysis import AnalysedFlow
from headwater.pipelines.graph.kafka import connector_missing, is_connector_missing
from headwater.pipelines.layout.folders import Layout
from headwater.pipelines.runner import idle_streams
from headwater.pipelines.runner.expectations import Quality, Rules
from headwater.pipelines.runner.failures import one_line
from headwater.pipelines.runner.interrupt import BatchGate, stopped_by_request
from headwater.storage.checkpoints import clear_unwritten_first_batch

Write = Callable[[DataFrame], WriteResult | None]


class SchemaChanged(RuntimeError):
    """Auto Loader stopped the stream for new columns: start it again (as the known
    system restarts such flows), it then reads with the evolved schema."""


@dataclass
class FlowRun:
    """What one flow did in an update."""

    name: str
    target: str
    status: FlowStatus = FlowStatus.QUEUED
    num_output_rows: int = 0
    num_input_rows: int | None = None  # known for streams (from their progress)
    batches: int = 0
    seconds: float = 0.0
    error: BaseException | None = None
    query: StreamingQuery | None = field(default=None, repr=False)
    counts_writes: bool = False  # rows counted as batches commit (else from progress)
    quality: dict[str, Quality] = field(default_factory=dict)  # per dataset checked
    streamed_quality: dict[str, Quality] = field(default_factory=dict)  # by observed name
    observed_batches: set[int] = field(default_factory=set)
    after_commit: list[Callable[[], None]] = field(default_factory=list, repr=False)
    sources: list[str] = field(default_factory=list)  # Auto Loader state of its sources
    changes: dict[str, int] | None = None  # AUTO CDC: num_upserted_rows, num_deleted_rows
    gate: BatchGate | None = field(default=None, repr=False)  # stops its stream between batches
    stopped: bool = False  # its stream was stopped before it had drained
    technique: str | None = None  # a materialized view's refresh technique

    @property
    def metrics(self) -> dict[str, Any]:
        found: dict[str, Any] = {"num_output_rows": self.num_output_rows}
        if self.changes is not None:
            found.update(self.changes)
        if self.num_input_rows is not None:
            found["num_input_rows"] = self.num_input_rows
        waiting = [b for b in map(backlog, self.sources) if b is not None]
        if waiting:
            found["backlog_files"] = sum(files for files, _ in waiting)
            found["backlog_bytes"] = sum(size for _, size in waiting)
        return found

    @property
    def data_quality(self) -> dict[str, Any] | None:
        """``flow_progress.data_quality``: the target's expectations and those of the
        views the flow read; None when no dataset it touched has expectations."""
        if not self.quality:
            return None
        events = [q.as_event() for q in self.quality.values()]
        return {
            "dropped_records": sum(e["dropped_records"] for e in events),
            "quarantined_records": sum(e["quarantined_records"] for e in events),
            "expectations": [x for e in events for x in e["expectations"]],
        }

    def checks(self, dataset: str, rules: Rules) -> Quality:
        """The metrics of ``rules`` in this run (one accumulator per dataset)."""
        return self.quality.setdefault(dataset, rules.quality())

    # -- its changes of state and counts, each spelt once (the scheduler, the flow's thread
    # and its stream's batches write them) ---------------------------------------------------

    def not_started(self, status: FlowStatus) -> None:
        """SKIPPED (a flow it waits for did not complete) or STOPPED (the update stopped)
        before it started."""
        self.status = status

    def starting(self) -> None:
        self.status = FlowStatus.STARTING

    def running(self, sources: list[str]) -> None:
        """Its query is defined; ``sources``: the Auto Loader state folders it reads."""
        self.sources = sources
        self.status = FlowStatus.RUNNING

    def completed(self, stopped: bool = False) -> None:
        """Ended without an error: STOPPED when the update stopped it first."""
        self.status = FlowStatus.STOPPED if stopped else FlowStatus.COMPLETED
        self.error = None

    def failed(self, error: BaseException) -> None:
        """Ended by ``error`` (after its retries, if any)."""
        self.error = error
        self.status = FlowStatus.FAILED

    def update_ended(self) -> None:
        """A continuous update ended: a materialized view that did not fail is STOPPED."""
        if self.status != FlowStatus.FAILED:
            self.status = FlowStatus.STOPPED

    def wrote(self, rows: int) -> None:
        """One more batch committed, of ``rows`` rows."""
        self.num_output_rows += rows
        self.batches += 1

    def applied(self, upserted: int, deleted: int) -> None:
        """One more batch of AUTO CDC changes committed."""
        if self.changes is not None:
            self.changes["num_upserted_rows"] += upserted
            self.changes["num_deleted_rows"] += deleted
            self.wrote(upserted + deleted)

    def snapshots_applied(self, upserted: int, deleted: int, batches: int) -> None:
        """An AUTO CDC from-snapshot flow applied its new snapshots, in ``batches``."""
        self.changes = {"num_upserted_rows": upserted, "num_deleted_rows": deleted}
        self.num_output_rows = upserted + deleted
        self.batches = batches

    def read(self, rows: int, batches: int) -> None:
        """Its stream's progress reports ``rows`` more input rows in ``batches`` more
        batches: its output too, unless it counts its writes as they commit."""
        self.num_input_rows = (self.num_input_rows or 0) + rows
        if not self.counts_writes:
            self.num_output_rows += rows
            self.batches += batches


def table_spec(dataset: Dataset, mode: str, **extra: Any) -> WriteSpec:
    return WriteSpec(
        mode=mode,  # type: ignore[arg-type]
        merge_schema=mode == "append",
        overwrite_schema=mode == "overwrite",
        partition_by=tuple(dataset.partition_cols),
        cluster_by=tuple(dataset.cluster_by) or None,
        configuration=dict(dataset.table_properties) or None,
        description=dataset.comment,
        **extra,
    )


def write_checked(
    df: DataFrame,
    rules: Rules,
    quality: Quality | None,
    write: Write,
    quarantine: Write | None,
    observed: bool = True,
) -> WriteResult | None:
    """Write ``df``'s rows that pass ``rules`` with ``write`` (and those a quarantine rule
    diverts with ``quarantine``, first), counting into ``quality`` once ``write`` commits.

    Quarantined rows are written first: after a crash between the two commits, the batch
    runs again, the quarantine write is skipped by its transaction id and the dataset's
    write completes, so each row lands once in one of the two tables. The input is cached
    for the two writes; the counts come from whichever write reads it first.

    ``observed`` False: the table's engine writes through a nested query whose observed
    metrics never reach ``Observation`` (delta-spark), so the counts are taken by a pass of
    their own over the cached input, before the writes."""
    if not rules:
        return write(df)
    observation = Observation()
    counting = quality is not None and not observed
    cache = counting or (quarantine is not None and rules.quarantines)
    source = df.persist() if cache else df
    try:
        counts = rules.counts(source) if counting else None
        checked = rules.check(source, observation, count_outcomes=False)
        if quarantine is not None and checked.quarantined is not None:
            quarantine(checked.quarantined)
        result = write(checked.passed)
        if quality is not None and result is not None and result.version is not None:
            quality.add(counts if counts is not None else observation.get, result.num_rows)
        return result
    finally:
        if source is not df:
            source.unpersist()


def check_view(df: DataFrame, rules: Rules, run: FlowRun, counted: bool = True) -> DataFrame:
    """The rows of a view with expectations, as the flow reading it sees them: checked
    inside that flow's query. A stream's counts arrive with its progress (as observed
    metrics); a batch's once the flow's write has committed. ``counted`` False: another
    flow reports the view's metrics in this update; the rules still apply here."""
    if not counted:
        unread = f"headwater_quality_{uuid.uuid4().hex[:12]}" if df.isStreaming else Observation()
        return rules.check(df, unread).passed
    quality = run.checks(rules.dataset, rules)
    if df.isStreaming:
        name = f"headwater_quality_{uuid.uuid4().hex[:12]}"
        run.streamed_quality[name] = quality
        return rules.check(df, name).passed
    observation = Observation()
    run.after_commit.append(lambda: quality.add(observation.get))
    return rules.check(df, observation).passed


def quarantine_spec(mode: str, **extra: Any) -> WriteSpec:
    return WriteSpec(mode=mode, merge_schema=mode == "append", **extra)  # type: ignore[arg-type]


def start_stream(
    spark: SparkSession,
    af: AnalysedFlow,
    dataset: Dataset,
    df: DataFrame,
    layout: Layout,
    trigger: Mapping[str, str | bool],
    *,
    query_name: str,
    run: FlowRun,
    rules: Rules,
    quarantine: str | None = None,
) -> StreamingQuery | None:
    """Start ``df`` streaming into the flow's table or sink, with the flow's checkpoint;
    ``run`` counts the rows each committed micro-batch wrote, and the checks of ``rules``
    (rows breaking quarantine rules go to the table ``quarantine``). None: the stream has
    nothing new to read (:mod:`.idle_streams`), so it is not started."""
    checkpoint = layout.checkpoint(af.flow.name)
    if idle_streams.nothing_new(df, checkpoint, trigger):
        run.read(0, 0)  # (what a run that found nothing reports)
        return None
    gate = run.gate.wrap if run.gate is not None else _ungated
    if dataset.kind == "sink":
        writer = df.writeStream.format(dataset.format or "delta").options(**dataset.options)
        writer = writer.option("checkpointLocation", checkpoint).queryName(query_name)
        clear_unwritten_first_batch(checkpoint)  # what a first batch killed midway left
        try:
            return writer.trigger(**trigger).start()  # type: ignore[arg-type]
        except AnalysisException as e:
            if not is_connector_missing(e):
                raise
            raise connector_missing(af.flow.origin, "Writing to") from None
    run.counts_writes = True

    def committed(result: WriteResult) -> None:
        run.wrote(result.num_rows)

    quality = run.checks(af.target, rules) if rules else None
    aside = (
        api.table(spark, quarantine).sink(checkpoint, spec=quarantine_spec("append"))
        if quarantine
        else None
    )

    def checked(sink: DeltaStreamSink) -> api.BatchFunction:
        def batch(df: DataFrame, batch_id: int) -> None:
            write_checked(
                df,
                rules,
                quality,
                lambda passed: sink.commit(passed, batch_id),
                (lambda rows: aside.commit(rows, batch_id)) if aside else None,
                table.observes_writes,
            )

        return batch

    table = api.table(spark, af.target)
    return table.start_stream(
        df,
        checkpoint=checkpoint,
        spec=table_spec(dataset, "append"),
        trigger=trigger,
        query_name=query_name,
        on_commit=committed,
        wrap=lambda sink: gate(checked(sink) if rules else sink),
    )


def apply_changes(
    spark: SparkSession,
    af: AnalysedFlow,
    dataset: Dataset,
    df: DataFrame,
    layout: Layout,
    trigger: Mapping[str, str | bool],
    *,
    query_name: str,
    run: FlowRun,
    app_id: str,
) -> StreamingQuery | None:
    """Run an AUTO CDC flow: snapshots are applied now (None); change events stream (the
    query; None when there are none new). ``app_id`` makes each batch's commits idempotent."""
    spec = af.flow.auto_cdc
    assert spec is not None
    if spec.from_snapshot:
        apply_snapshots(spark, af, df, layout, run, app_id)
        return None
    # Each micro-batch of change events is applied by one MERGE (:mod:`.apply`), once.
    plan = resolve(spark, spec, df.schema, af.flow.origin)
    target = api.table(spark, af.target)
    state = layout.cdc_state(af.flow.name)
    retention = tombstone_seconds(dataset.table_properties)
    applier = CdcApplier(spark, plan, target, state, app_id, retention)
    applier.prepare()
    run.counts_writes = True
    run.changes = {"num_upserted_rows": 0, "num_deleted_rows": 0}
    if idle_streams.nothing_new(df, layout.checkpoint(af.flow.name), trigger):
        run.read(0, 0)  # not started: nothing new to apply (:mod:`.idle_streams`)
        return None

    def batch(events: DataFrame, batch_id: int) -> None:
        result = applier.apply(events, batch_id)
        if result.committed:
            run.applied(result.upserted, result.deleted)

    gate = run.gate.wrap if run.gate is not None else _ungated
    return api.start_foreach_batch(
        df, gate(batch), layout.checkpoint(af.flow.name), trigger=trigger, query_name=query_name
    )


def apply_snapshots(
    spark: SparkSession, af: AnalysedFlow, df: DataFrame, layout: Layout, run: FlowRun, app_id: str
) -> None:
    """Apply the new snapshots of an AUTO CDC from-snapshot flow (``df``: the source
    table's rows, or the function's first snapshot, for its columns)."""
    spec = af.flow.auto_cdc
    assert spec is not None
    applier = SnapshotApplier(
        spark, spec, df, api.table(spark, af.target), layout, af.flow.name, app_id, af.flow.origin
    )
    results = applier.run(spec.snapshot_function or df)
    upserted = sum(r.upserted for r in results if r.committed)
    deleted = sum(r.deleted for r in results if r.committed)
    run.snapshots_applied(upserted, deleted, len(results))


def await_stream(
    query: StreamingQuery,
    run: FlowRun,
    stop: threading.Event,
    on_batch: Callable[[FlowRun], None] | None = None,
) -> None:
    """Wait for the query to end (``availableNow``: when it has drained; otherwise when
    ``stop`` is set: then it ends between two batches, see :mod:`.interrupt`),
    counting its rows as batches complete."""
    seen = 0
    while not _terminated(query, 0.5):
        batches = run.batches
        seen = _count(query, run, seen)
        if on_batch is not None and run.batches != batches:
            on_batch(run)
        if stop.is_set():
            run.stopped = True
            if run.gate is not None:
                run.gate.stop(query)
            else:
                query.stop()
    _count(query, run, seen)
    error = query.exception()
    if error is not None:
        text = f"{error.desc if hasattr(error, 'desc') else error}"
        if stop.is_set() and stopped_by_request(text, stop_was_sent=run.stopped):
            run.stopped = True
            return
        if "UNKNOWN_FIELD_EXCEPTION" in text:
            raise SchemaChanged(text)
        raise RuntimeError(one_line(text)) from error  # the JVM's text and traces as cause


def _terminated(query: StreamingQuery, seconds: float) -> bool:
    """``awaitTermination`` that reports a failed query as ended rather than raising: the
    caller reads the error from ``query.exception()``, where a stop is told apart."""
    try:
        return bool(query.awaitTermination(seconds))  # type: ignore[arg-type]
    except StreamingQueryException:
        return True


def _ungated(function: api.BatchFunction) -> api.BatchFunction:
    return function


def _count(query: StreamingQuery, run: FlowRun, seen: int) -> int:
    """Add the rows of batches after ``seen`` (the next batch id not counted yet), for
    streams whose writes are not counted as they commit (sinks)."""
    new = [p for p in query.recentProgress if p.get("batchId", -1) >= seen]
    for p in new:
        observed = p.get("observedMetrics") or {}
        if run.streamed_quality and p["batchId"] not in run.observed_batches and observed:
            run.observed_batches.add(p["batchId"])
            for name, quality in run.streamed_quality.items():
                row = observed.get(name)
                if row is not None:
                    quality.add(row.asDict() if hasattr(row, "asDict") else dict(row))
    read = sum(int(p.get("numInputRows") or 0) for p in new)
    run.read(read, len({p["batchId"] for p in new if p.get("numInputRows")}))
    return max([seen - 1, *[int(p["batchId"]) for p in new]]) + 1


def refresh_view(
    spark: SparkSession,
    af: AnalysedFlow,
    dataset: Dataset,
    df: DataFrame,
    *,
    run: FlowRun,
    rules: Rules,
    quarantine: str | None = None,
    user_metadata: str | None = None,
    append: bool = False,
) -> WriteResult | None:
    """Recompute a materialized view: its query's rows (those passing its rules) replace
    the table's in one commit (recording ``user_metadata``: what the refresh read); its
    quarantine table is replaced likewise, first. ``append``: ``df`` is the query on its
    inputs' new rows only (the *append* technique), added to the view in one commit with
    the record (never with a quarantine table: the two could not commit together)."""
    assert not (append and quarantine)
    table = api.table(spark, af.target)
    aside = api.table(spark, quarantine) if quarantine else None
    spec = table_spec(dataset, "append" if append else "overwrite", user_metadata=user_metadata)
    result = write_checked(
        df,
        rules,
        run.checks(af.target, rules) if rules else None,
        lambda rows: table.write(rows, spec),
        (lambda rows: aside.write(rows, quarantine_spec("overwrite"))) if aside else None,
        table.observes_writes,
    )
    return result


def append_once(
    spark: SparkSession,
    af: AnalysedFlow,
    dataset: Dataset,
    df: DataFrame,
    app_id: str,
    *,
    run: FlowRun,
    rules: Rules,
    quarantine: str | None = None,
) -> WriteResult | None:
    """A one-time backfill: appended under ``(app_id, 0)``, skipped if already there (its
    quarantined rows likewise, in the quarantine table)."""
    table = api.table(spark, af.target)
    aside = api.table(spark, quarantine) if quarantine else None
    spec = table_spec(dataset, "append", txn=(app_id, 0))
    result = write_checked(
        df,
        rules,
        run.checks(af.target, rules) if rules else None,
        lambda rows: table.write(rows, spec),
        (lambda rows: aside.write(rows, quarantine_spec("append", txn=(app_id, 0))))
        if aside
        else None,
        table.observes_writes,
    )
    return result


def elapsed(start: float) -> float:
    return round(time.monotonic() - start, 3)
