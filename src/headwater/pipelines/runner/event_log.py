"""The event log's writer: what a pipeline did, as a Delta table users query with SQL.

The table's place, columns and ``details`` records are :mod:`headwater.event_log_format`'s. Events are
also handed to listeners as they happen (the terminal progress, tests); rows are appended
in batches (one commit per flush, not per event), at the end of an update and every few
seconds while one runs.
"""

from __future__ import annotations

import getpass
import itertools
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

import pyarrow as pa
from pyspark.sql import SparkSession

from headwater import api
from headwater.event_log_format import (
    SCHEMA,
    DataQuality,
    FlowProgress,
    FlowStatus,
    details_json,
)
from headwater.pipelines.runner.failures import one_line
from headwater.sqltypes import arrow_schema

Level = Literal["INFO", "WARN", "ERROR", "METRICS"]
ARROW_SCHEMA = arrow_schema(SCHEMA)


@dataclass(frozen=True)
class Event:
    event_type: str
    message: str
    details: Mapping[str, Any]
    level: Level = "INFO"
    flow_name: str | None = None
    dataset_name: str | None = None
    error: BaseException | None = None
    timestamp: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    id: str = field(default_factory=lambda: str(uuid.uuid4()))


Listener = Callable[[Event], None]


class EventLog:
    """Events of one update: numbered, handed to listeners, appended to the table."""

    def __init__(
        self,
        spark: SparkSession | None,
        path: str | None,
        pipeline_id: str,
        pipeline_name: str,
        update_id: str,
        *,
        listeners: list[Listener] | None = None,
        table_name: str | None = None,
    ) -> None:
        self.spark = spark
        self.path = path  # None: dry run, nothing written
        self.table_name = table_name  # also readable by this name
        self.pipeline_id = pipeline_id
        self.pipeline_name = pipeline_name
        self.update_id = update_id
        self.listeners = list(listeners or [])
        self.events: list[Event] = []
        self.unwritten: list[tuple[Event, int]] = []
        self.lock = threading.Lock()
        self.seq = itertools.count(time.time_ns() // 1000)
        self.flow_ids: dict[str, str] = {}

    def emit(self, event: Event) -> Event:
        with self.lock:
            self.events.append(event)
            self.unwritten.append((event, next(self.seq)))
        for listener in self.listeners:
            listener(event)
        return event

    def row(self, e: Event, seq_no: int) -> tuple[Any, ...]:
        flow_id = None
        if e.flow_name is not None:
            flow_id = self.flow_ids.setdefault(e.flow_name, str(uuid.uuid4()))
        error = None
        if e.error is not None:
            error = (True, [(type(e.error).__name__, str(e.error))])
        return (
            e.id,
            (self.update_id, seq_no),
            (
                self.pipeline_id,
                self.pipeline_name,
                self.update_id,
                flow_id,
                e.flow_name,
                e.dataset_name,
            ),
            e.timestamp,
            e.level,
            e.event_type,
            "STABLE",
            e.message,
            details_json(e.event_type, e.details),
            error,
        )

    def flush(self) -> int:
        """Append the events not written yet as one commit; returns how many."""
        with self.lock:
            pending, self.unwritten = self.unwritten, []
        if not pending or self.spark is None or self.path is None:
            return 0
        rows = [self.row(event, seq_no) for event, seq_no in pending]
        if self.table_name:
            table = api.table(self.spark, self.table_name, location=self.path)
        else:
            table = api.for_path(self.spark, self.path)
        named = [dict(zip(SCHEMA.names, row, strict=True)) for row in rows]
        # (no Spark job where the engine takes the rows as they are: a Spark write of a
        # flush cost about 0.2 s, every flush of every update)
        table.append_arrow(pa.Table.from_pylist(named, schema=ARROW_SCHEMA), SCHEMA)
        return len(rows)

    # -- the event types ---------------------------------------------------------------------

    def event(
        self, event_type: str, message: str, details: Mapping[str, Any], **fields: Any
    ) -> Event:
        return self.emit(Event(event_type, message, details, **fields))

    def user_action(self, action: str) -> None:
        """``user_action``: who asked for what (``START`` of an update), as the known
        system's audit queries read it (``details:user_action:user_name``)."""
        user = user_name()
        did = {"START": "started"}.get(action, action.lower())
        self.event("user_action", f"User '{user}' {did} an update.",
                   {"action": action, "user_name": user})  # fmt: skip

    def update_progress(self, state: str, error: BaseException | None = None) -> None:
        self.emit(
            Event(
                "update_progress",
                f"Update {self.update_id[:8]} is {state}.",
                {"state": state},
                level="ERROR" if error else "INFO",
                error=error,
            )
        )

    def flow_progress(
        self,
        flow: str,
        dataset: str,
        status: FlowStatus,
        metrics: Mapping[str, Any] | None = None,
        data_quality: DataQuality | Mapping[str, Any] | None = None,
        *,
        error: BaseException | None = None,
        seconds: float | None = None,
    ) -> None:
        if data_quality is not None and not isinstance(data_quality, DataQuality):
            data_quality = DataQuality.from_json(data_quality)
        progress = FlowProgress(status, metrics, data_quality, seconds)
        level: Level = "ERROR" if error else ("METRICS" if metrics is not None else "INFO")
        message = f"Flow '{flow}' is {status}."
        if error is not None:
            message = f"Flow '{flow}' has FAILED: {one_line(error)}"
        details = progress.to_json()
        self.emit(Event("flow_progress", message, details, level, flow, dataset, error))


def user_name() -> str:
    """The operating system's name of the user running the update (``unknown`` where the
    process has none: a container without a passwd entry or a login variable)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"
