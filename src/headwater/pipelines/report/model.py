"""A pipeline's event log, read back as the few plain values a report is drawn from.

The event log is the only record a pipeline leaves of what it did, and it is an append-only
stream of small events (a definition per flow, many progress events per flow, a handful
of update states). A reader wants the opposite shape: per update, each flow's *final*
state, its row counts and its expectation results. This module folds events into that
shape, once, into frozen values, so the HTML side only formats and never interprets
events (and the folding is testable without a browser or a Spark session).

Rows come as the Delta table holds them (``to_pylist()``: nested dicts, ``details`` a JSON
string keyed by the event type) or as dicts built by hand; the folding is lenient about
what may be missing (no ``sequence``, ``details`` already a dict, an update cut short),
because a report is most wanted exactly when a run went wrong.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

from headwater.event_log_format import (
    FINAL_FLOW_STATES,
    FINAL_UPDATE_STATES,
    DataQuality,
    FlowStatus,
    parse_details,
)

EXTERNAL = "EXTERNAL"
"""The kind of a dataset flows read but no flow of the pipeline writes."""
BEGUN = (FlowStatus.STARTING, FlowStatus.RUNNING)
"""The states whose first event marks when a flow began (for its duration)."""


@dataclass(frozen=True)
class ExpectationDef:
    """A rule as the flow's definition declared it (constraint text and action)."""

    name: str
    constraint: str
    action: str


@dataclass(frozen=True)
class DatasetInfo:
    """A dataset of the graph: defined by the pipeline, or an external source it reads."""

    key: str
    kind: str  # STREAMING_TABLE, MATERIALIZED_VIEW, TEMPORARY_VIEW, SINK, TABLE or EXTERNAL
    expectations: tuple[ExpectationDef, ...] = ()

    @property
    def external(self) -> bool:
        return self.kind == EXTERNAL


@dataclass(frozen=True)
class FlowState:
    """One flow in one update: its definition and its final progress (``status`` None
    when it never ran: a temporary view, a dry run, a flow outside a refresh selection)."""

    name: str
    output: str
    inputs: tuple[str, ...] = ()
    streaming: bool = False
    flow_type: str | None = None
    source: str | None = None
    status: str | None = None
    rows_out: int | None = None
    rows_in: int | None = None
    upserted: int | None = None  # AUTO CDC: target rows inserted or updated
    deleted: int | None = None  # AUTO CDC: target rows deleted (SCD2: closed)
    seconds: float | None = None
    dropped: int = 0
    quarantined: int = 0
    error: str | None = None
    refresh: str | None = None  # a materialized view's technique (NO_OP, FULL_RECOMPUTE)
    refresh_reason: str | None = None  # and why it was chosen

    @property
    def implicit(self) -> bool:
        """The flow a dataset's own query defines (named after it): a graph draws it as
        the dataset's arrows rather than as a node of its own."""
        return self.name == self.output or self.output.endswith("." + self.name)


@dataclass(frozen=True)
class ExpectationResult:
    """One expectation's records in one update, summed over the flows that checked it."""

    dataset: str
    name: str
    action: str
    passed: int = 0
    failed: int = 0
    constraint: str | None = None

    @property
    def checked(self) -> int:
        return self.passed + self.failed

    @property
    def kept(self) -> bool:
        """A ``warn`` rule: the records that break it are counted and written anyway."""
        return self.action == "warn"

    @property
    def failure_rate(self) -> float | None:
        """Failed over checked records; None when no record was checked."""
        return self.failed / self.checked if self.checked else None


@dataclass(frozen=True)
class DatasetQuality:
    """A dataset's expectations in one update, with the rows its flows dropped and
    quarantined (counted against the dataset the flows write)."""

    dataset: str
    expectations: tuple[ExpectationResult, ...]
    dropped: int = 0
    quarantined: int = 0


@dataclass(frozen=True)
class UpdateSummary:
    """One update: how it was started, how it ended, and every flow's final state."""

    id: str
    state: str
    start: datetime | None = None
    end: datetime | None = None
    cause: str | None = None
    full_refresh: bool = False
    dry_run: bool = False
    continuous: bool = False
    flows: tuple[FlowState, ...] = ()
    datasets: tuple[DatasetInfo, ...] = ()
    quality: tuple[DatasetQuality, ...] = ()
    error: str | None = None  # the update's own error (one that no flow carries)

    @property
    def seconds(self) -> float | None:
        if self.start is None or self.end is None:
            return None
        return max(0.0, (self.end - self.start).total_seconds())

    @property
    def defined(self) -> bool:
        """Whether the update got as far as defining its flows (one that failed while
        loading sources did not, and has no graph to draw)."""
        return bool(self.flows)

    @property
    def rows_written(self) -> int:
        return sum(f.rows_out or 0 for f in self.flows)

    @property
    def records_failed(self) -> int:
        """Records dropped or failing the flow (a ``warn`` rule's records were kept)."""
        return sum(e.failed for q in self.quality for e in q.expectations if not e.kept)

    @property
    def records_warned(self) -> int:
        """Records that broke only ``warn`` rules: written all the same."""
        return sum(e.failed for q in self.quality for e in q.expectations if e.kept)

    @property
    def failed_flows(self) -> tuple[FlowState, ...]:
        return tuple(f for f in self.flows if f.status == FlowStatus.FAILED)

    @property
    def failed(self) -> bool:
        return self.state == "FAILED" or bool(self.failed_flows)

    def expectation(self, dataset: str, name: str) -> ExpectationResult | None:
        for q in self.quality:
            if q.dataset == dataset:
                for e in q.expectations:
                    if e.name == name:
                        return e
        return None


@dataclass(frozen=True)
class PipelineReport:
    """The updates a report covers (oldest first) and what identifies the pipeline."""

    pipeline_id: str | None
    pipeline_name: str | None
    updates: tuple[UpdateSummary, ...]
    total_updates: int
    events: int

    @property
    def latest(self) -> UpdateSummary | None:
        return self.updates[-1] if self.updates else None

    @property
    def graph_update(self) -> UpdateSummary | None:
        """The latest update that defined its flows: the graph to draw."""
        return next((u for u in reversed(self.updates) if u.defined), None)

    @property
    def last_failure(self) -> UpdateSummary | None:
        """The most recent failed update of the window, the latest one included."""
        return next((u for u in reversed(self.updates) if u.failed), None)

    def trend(self, dataset: str, name: str) -> tuple[ExpectationResult | None, ...]:
        """An expectation's result in each update of the window (None where it was not
        checked), oldest first: what a sparkline draws."""
        return tuple(u.expectation(dataset, name) for u in self.updates)


# -- events -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Event:
    seq: int | None
    ts: datetime | None
    update_id: str
    pipeline_id: str | None
    pipeline_name: str | None
    flow: str | None
    dataset: str | None
    event_type: str
    message: str
    details: Mapping[str, Any]
    error: str | None


def build(events: Iterable[Mapping[str, Any]], *, updates: int = 10) -> PipelineReport:
    """Fold event-log rows into a report of the last ``updates`` updates."""
    if updates < 1:
        raise ValueError(f"updates must be at least 1, not {updates}")
    parsed = sorted((_parse(row) for row in events), key=_order)
    by_update: dict[str, list[_Event]] = {}
    for event in parsed:
        if event.update_id:
            by_update.setdefault(event.update_id, []).append(event)
    summaries = [_update(uid, evs) for uid, evs in by_update.items()]
    last = next((e for e in reversed(parsed) if e.pipeline_id or e.pipeline_name), None)
    return PipelineReport(
        pipeline_id=last.pipeline_id if last else None,
        pipeline_name=last.pipeline_name if last else None,
        updates=tuple(summaries[-updates:]),
        total_updates=len(summaries),
        events=len(parsed),
    )


def _order(e: _Event) -> tuple[bool, int, datetime]:
    """By sequence number (it increases within a pipeline), by time where it is missing."""
    floor = datetime.min.replace(tzinfo=timezone.utc)
    return (e.seq is None, e.seq or 0, e.ts or floor)


def _parse(row: Mapping[str, Any]) -> _Event:
    sequence = row.get("sequence") or {}
    origin = row.get("origin") or {}
    event_type = str(row.get("event_type") or "")
    details = parse_details(event_type, row.get("details"))
    seq = sequence.get("seq_no") if isinstance(sequence, Mapping) else None
    return _Event(
        seq=int(seq) if seq is not None else None,
        ts=_timestamp(row.get("timestamp")),
        update_id=str(origin.get("update_id") or ""),
        pipeline_id=origin.get("pipeline_id"),
        pipeline_name=origin.get("pipeline_name"),
        flow=origin.get("flow_name"),
        dataset=origin.get("dataset_name"),
        event_type=event_type,
        message=str(row.get("message") or ""),
        details=details,
        error=_error_text(row.get("error")),
    )


def _timestamp(value: Any) -> datetime | None:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    # Spark writes UTC instants; a naive value read back is UTC too
    return value.astimezone(timezone.utc) if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _error_text(error: Any) -> str | None:
    if not isinstance(error, Mapping):
        return None
    messages = [
        str(x.get("message") or x.get("class_name") or "")
        for x in error.get("exceptions") or []
        if isinstance(x, Mapping)
    ]
    text = "\n".join(m for m in messages if m)
    return text or None


def _int(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _float(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


# -- one update ---------------------------------------------------------------------------


def _update(update_id: str, events: Sequence[_Event]) -> UpdateSummary:
    created = next((e for e in events if e.event_type == "create_update"), None)
    cause = created.details if created else {}
    states = [e for e in events if e.event_type == "update_progress"]
    last_state = states[-1] if states else None
    state = str(last_state.details.get("state") or "UNKNOWN") if last_state else "UNKNOWN"
    finished = state in FINAL_UPDATE_STATES
    times = [e.ts for e in events if e.ts is not None]
    start = created.ts if created and created.ts else (min(times) if times else None)
    end = last_state.ts if finished and last_state else (max(times) if times else None)

    definitions: dict[str, _Event] = {}
    progress: dict[str, list[_Event]] = {}
    plans: dict[str, _Event] = {}
    for e in events:
        if e.event_type == "flow_definition" and e.flow:
            definitions[e.flow] = e
        elif e.event_type == "flow_progress" and e.flow:
            progress.setdefault(e.flow, []).append(e)
        elif e.event_type == "planning_information" and e.flow:
            plans[e.flow] = e
    names = list(definitions) + [n for n in progress if n not in definitions]
    flows = [
        _planned(_flow(n, definitions.get(n), progress.get(n, [])), plans.get(n)) for n in names
    ]
    datasets = _datasets(flows, definitions)
    quality = _quality(flows, progress, datasets)

    flow_errors = {f.error for f in flows if f.error}
    update_error = _update_error(states, events)
    return UpdateSummary(
        id=update_id,
        state=state,
        start=start,
        end=end,
        cause=str(cause["cause"]) if cause.get("cause") else None,
        full_refresh=bool(cause.get("full_refresh")),
        dry_run=bool(cause.get("dry_run")),
        continuous=bool(cause.get("continuous")),
        flows=tuple(flows),
        datasets=datasets,
        quality=quality,
        error=None if update_error in flow_errors else update_error,
    )


def _planned(flow: FlowState, plan: _Event | None) -> FlowState:
    """A view's flow with the technique its refresh used and why (from its
    ``planning_information`` event)."""
    if plan is None or not plan.details.get("chosen"):
        return flow
    reason = plan.details.get("reason")
    return replace(
        flow, refresh=str(plan.details["chosen"]), refresh_reason=str(reason) if reason else None
    )


def _update_error(states: Sequence[_Event], events: Sequence[_Event]) -> str | None:
    """The error of the update itself: its final state's, else any outside a flow."""
    for e in reversed(states):
        if e.error:
            return e.error
    return next((e.error for e in reversed(events) if e.error and e.flow is None), None)


def _flow(name: str, definition: _Event | None, events: Sequence[_Event]) -> FlowState:
    d = definition.details if definition else {}
    output = str(
        d.get("output_dataset")
        or (definition.dataset if definition else None)
        or next((e.dataset for e in events if e.dataset), None)
        or name
    )
    final = next(
        (e for e in reversed(events) if e.details.get("status") in FINAL_FLOW_STATES), None
    )
    last = final or (events[-1] if events else None)
    metrics = _latest(events, final, "metrics")
    quality = _latest(events, final, "data_quality")
    seconds = _float(last.details.get("duration_seconds")) if last else None
    if seconds is None and last is not None and last.ts is not None:
        began = next(
            (e.ts for e in events if e.details.get("status") in BEGUN and e.ts),
            None,
        )
        began = began or next((e.ts for e in events if e.ts), None)
        seconds = (last.ts - began).total_seconds() if began else None
    status = str(last.details.get("status")) if last and last.details.get("status") else None
    error = None
    if last is not None and status == FlowStatus.FAILED:
        error = last.error or last.message or "The flow failed (the event gives no message)."
    return FlowState(
        name=name,
        output=output,
        inputs=tuple(str(x) for x in d.get("input_datasets") or ()),
        streaming=bool(d.get("streaming")),
        flow_type=str(d["flow_type"]) if d.get("flow_type") else None,
        source=str(d["source_code_location"]) if d.get("source_code_location") else None,
        status=status,
        rows_out=_int(metrics.get("num_output_rows")),
        rows_in=_int(metrics.get("num_input_rows")),
        upserted=_int(metrics.get("num_upserted_rows")),
        deleted=_int(metrics.get("num_deleted_rows")),
        seconds=max(0.0, seconds) if seconds is not None else None,
        dropped=_int(quality.get("dropped_records")) or 0,
        quarantined=_int(quality.get("quarantined_records")) or 0,
        error=error,
    )


def _latest(events: Sequence[_Event], final: _Event | None, key: str) -> Mapping[str, Any]:
    """``key`` of the final progress event, else of the last event that had it (a flow
    still running, or a final event that left its counts out)."""
    for e in ([final] if final else []) + list(reversed(events)):
        value = e.details.get(key)
        if isinstance(value, Mapping):
            return value
    return {}


def _datasets(
    flows: Sequence[FlowState], definitions: Mapping[str, _Event]
) -> tuple[DatasetInfo, ...]:
    """Outputs first (in definition order), then the inputs no flow writes."""
    found: dict[str, DatasetInfo] = {}
    for flow in flows:
        d = definitions[flow.name].details if flow.name in definitions else {}
        rules = tuple(
            ExpectationDef(str(x.get("name")), str(x.get("constraint") or ""), str(x.get("action")))
            for x in d.get("expectations") or ()
            if isinstance(x, Mapping)
        )
        known = found.get(flow.output)
        kind = str(d.get("dataset_type") or (known.kind if known else "TABLE"))
        found[flow.output] = DatasetInfo(
            flow.output, kind, rules or (known.expectations if known else ())
        )
    for flow in flows:
        for source in flow.inputs:
            found.setdefault(source, DatasetInfo(source, EXTERNAL))
    return tuple(found.values())


def _quality(
    flows: Sequence[FlowState],
    progress: Mapping[str, Sequence[_Event]],
    datasets: Sequence[DatasetInfo],
) -> tuple[DatasetQuality, ...]:
    """Per dataset: its declared expectations (even when nothing was checked, so a dry run
    lists them) with the records each flow's final progress reported, summed."""
    rules = {(d.key, r.name): r for d in datasets for r in d.expectations}
    sums: dict[tuple[str, str], list[Any]] = {key: [r.action, 0, 0] for key, r in rules.items()}
    dropped: dict[str, int] = {}
    quarantined: dict[str, int] = {}
    for flow in flows:
        events = progress.get(flow.name, [])
        final = next(
            (e for e in reversed(events) if e.details.get("status") in FINAL_FLOW_STATES), None
        )
        dq = DataQuality.from_json(_latest(events, final, "data_quality"))
        for x in dq.expectations:
            key = (x.dataset or flow.output, x.name)
            entry = sums.setdefault(key, [x.action, 0, 0])
            entry[1] += x.passed_records
            entry[2] += x.failed_records
        dropped[flow.output] = dropped.get(flow.output, 0) + flow.dropped
        quarantined[flow.output] = quarantined.get(flow.output, 0) + flow.quarantined
    order = [d.key for d in datasets]
    keys = sorted(sums, key=lambda k: order.index(k[0]) if k[0] in order else len(order))
    grouped: dict[str, list[ExpectationResult]] = {}
    for dataset, name in keys:
        action, passed, failed = sums[(dataset, name)]
        rule = rules.get((dataset, name))
        grouped.setdefault(dataset, []).append(
            ExpectationResult(
                dataset, name, action, passed, failed, rule.constraint if rule else None
            )
        )
    return tuple(
        DatasetQuality(ds, tuple(results), dropped.get(ds, 0), quarantined.get(ds, 0))
        for ds, results in grouped.items()
    )
