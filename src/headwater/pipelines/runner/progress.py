"""Live progress in the terminal: a line per flow state change, a summary at the end.

A listener of the event log, so what the terminal shows is what the log records. Lines,
not a redrawn screen: they read the same in a terminal, a CI log and a pytest capture.
"""

from __future__ import annotations

import sys
import threading
from typing import TextIO

from headwater.event_log_format import DataQuality, FlowProgress, FlowStatus
from headwater.pipelines.runner.context import UpdateResult
from headwater.pipelines.runner.event_log import Event
from headwater.pipelines.runner.failures import one_line

SHOWN = {
    FlowStatus.QUEUED,
    FlowStatus.STARTING,
    FlowStatus.COMPLETED,
    FlowStatus.FAILED,
    FlowStatus.SKIPPED,
    FlowStatus.STOPPED,
    FlowStatus.RETRYING,
}


class Printer:
    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout

    def __call__(self, event: Event) -> None:
        if event.event_type == "update_progress":
            self.write(f"[update] {event.details['state']}")
        elif event.event_type == "planning_information":
            chosen, reason = event.details.get("chosen"), event.details.get("reason")
            self.write(f"  {event.flow_name:<32} {'PLANNED':<10}  {chosen}: {reason}")
        elif event.event_type == "flow_progress":
            progress = FlowProgress.from_json(event.details)
            status = progress.status
            rows = progress.metric("num_output_rows")
            if status == FlowStatus.RUNNING and rows is None:
                return
            if status not in SHOWN and status != FlowStatus.RUNNING:
                return
            tail = f"  {rows:,} rows" if rows is not None else ""
            waiting = progress.metric("backlog_files")
            if waiting and status == FlowStatus.RUNNING:
                tail += f", {waiting:,} files waiting"
            quality = progress.data_quality or DataQuality()
            if quality.dropped_records:
                tail += f", {quality.dropped_records:,} dropped"
            if quality.quarantined_records:
                tail += f", {quality.quarantined_records:,} quarantined"
            if event.error is not None:
                tail += f"  {one_line(event.error)}"
            self.write(f"  {event.flow_name:<32} {status:<10}{tail}")

    def write(self, line: str) -> None:
        # One write per line, under a lock: flows report from threads of their own, and
        # print() writes the line and its newline apart, so two lines could interleave.
        with _LINES:
            self.out.write(line + "\n")
            self.out.flush()


_LINES = threading.Lock()


def summary(result: UpdateResult) -> str:
    """The update's outcome as a table: one row per flow."""
    lines = [
        f"Pipeline '{result.pipeline}' update {result.update_id[:8]}: {result.state} "
        f"in {result.seconds:.1f} s"
    ]
    width = max([len(n) for n in result.flows] + [4])
    lines.append(f"  {'flow':<{width}}  {'status':<10} {'rows':>10} {'seconds':>8}")
    for run in result.flows.values():
        lines.append(
            f"  {run.name:<{width}}  {run.status:<10} {run.num_output_rows:>10,} "
            f"{run.seconds:>8.1f}"
        )
        quality = DataQuality.from_json(run.data_quality) if run.data_quality else None
        broken = [
            f"{e.name} {e.failed_records:,} ({e.action})"
            for e in (quality.expectations if quality else ())
            if e.failed_records
        ]
        if quality is not None:
            lines.append(f"      expectations failed by: {', '.join(broken) or 'no record'}")
        if run.technique is not None:
            lines.append(f"      refreshed by: {run.technique}")
        if run.error is not None:
            lines.append(f"      error: {one_line(run.error)[:300]}")
    return "\n".join(lines)


def failure_line(result: UpdateResult) -> str | None:
    """A failed update in one line: each failed flow and its error (None: it did not
    fail). The terminal's one line on stderr, where stack traces do not belong."""
    if result.state != "FAILED":
        return None
    failed = [f"flow '{run.name}': {one_line(run.error)}" for run in result.failed() if run.error]
    reasons = "; ".join(failed) or "see the event log"
    return f"update {result.update_id[:8]} of pipeline '{result.pipeline}' FAILED: {reasons}"
