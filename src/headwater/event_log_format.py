"""The event log's format, in one place: where the table is, its columns, and the records
its ``details`` hold, written and read back through the same types. It sits below ``sql``
and ``pipelines`` so that the writer, the report and the SQL functions ``event_log`` /
``pipeline_quality`` all share it.

The table sits at ``<storage>/system/events`` with the known system's columns (``id,
sequence, origin, timestamp, level, event_type, maturity_level, message, details,
error``). ``details`` is a JSON object keyed by the event type (``{"flow_progress":
{...}}``), so the queries users copy (``details:flow_progress.metrics.num_output_rows``)
work. A flow's progress and its data quality are frozen records here
(:class:`FlowProgress`, :class:`DataQuality`, :class:`ExpectationMetrics`) that the writer
turns into JSON and the report and the terminal progress read back, so a key is spelt once.
Readers are lenient: a row an older version wrote, with a key missing, still reads.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from headwater import storage

# Where under a pipeline's storage folder the event log lives.
FOLDER = ("system", "events")


class FlowStatus(str, Enum):
    """A flow's state in an update, as ``flow_progress.status`` spells it. A ``str``: each
    member equals, hashes, JSON-encodes and formats as its bare name, so the event log's
    rows and every message read as they did when states were bare strings, and readers
    compare the plain strings a table gives back with these members. ``__str__`` and
    ``__format__`` are explicit because Python 3.11 and 3.12 changed how a mixed-in Enum
    formats."""

    QUEUED = "QUEUED"
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    RETRYING = "RETRYING"  # failed; tried again after a pause
    RESTARTING = "RESTARTING"  # its stream stopped for new columns; started again
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"  # a flow it waits for failed, was skipped or stopped
    STOPPED = "STOPPED"  # the update was asked to stop

    def __str__(self) -> str:
        return self.value

    def __format__(self, format_spec: str) -> str:
        return format(self.value, format_spec)


# States after which a flow's counts, or an update, are final.
FINAL_FLOW_STATES = frozenset(
    {FlowStatus.COMPLETED, FlowStatus.FAILED, FlowStatus.SKIPPED, FlowStatus.STOPPED}
)
FINAL_UPDATE_STATES = frozenset({"COMPLETED", "FAILED", "CANCELED"})

ORIGIN = StructType(
    [
        StructField("pipeline_id", StringType()),
        StructField("pipeline_name", StringType()),
        StructField("update_id", StringType()),
        StructField("flow_id", StringType()),
        StructField("flow_name", StringType()),
        StructField("dataset_name", StringType()),
    ]
)
ERROR = StructType(
    [
        StructField("fatal", BooleanType()),
        StructField(
            "exceptions",
            ArrayType(
                StructType(
                    [StructField("class_name", StringType()), StructField("message", StringType())]
                )
            ),
        ),
    ]
)
SCHEMA = StructType(
    [
        StructField("id", StringType()),
        StructField(
            "sequence",
            StructType(
                [
                    StructField("data_plane_id", StringType()),
                    StructField("seq_no", LongType()),
                ]
            ),
        ),
        StructField("origin", ORIGIN),
        StructField("timestamp", TimestampType()),
        StructField("level", StringType()),
        StructField("event_type", StringType()),
        StructField("maturity_level", StringType()),
        StructField("message", StringType()),
        StructField("details", StringType()),
        StructField("error", ERROR),
    ]
)


# The part of ``details:flow_progress`` that SQL reads back (``pipeline_quality``), as Spark
# DDL for ``from_json``: the keys :meth:`FlowProgress.to_json` writes.
FLOW_PROGRESS_DDL = (
    "struct<status: string, data_quality: struct<dropped_records: bigint, "
    "quarantined_records: bigint, expectations: array<struct<name: string, dataset: string, "
    "action: string, passed_records: bigint, failed_records: bigint>>>>"
)


def location(storage_root: str) -> str:
    """The event log table of the pipeline whose storage folder is ``storage_root``."""
    return storage.join(storage_root, *FOLDER)


def details_json(event_type: str, details: Mapping[str, Any]) -> str:
    """The ``details`` column of an event: its details under its event type."""
    return json.dumps({event_type: dict(details)}, default=str)


def parse_details(event_type: str, raw: Any) -> Mapping[str, Any]:
    """An event's own details from its ``details`` column (JSON text, or already parsed);
    empty when it holds nothing readable."""
    if isinstance(raw, (str, bytes)):
        try:
            raw = json.loads(raw)
        except ValueError:
            return {}
    if not isinstance(raw, Mapping):
        return {}
    inner = raw.get(event_type, raw)
    return inner if isinstance(inner, Mapping) else {}


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


@dataclass(frozen=True)
class ExpectationMetrics:
    """One expectation's records in one flow's run: ``action`` is ``warn`` (kept),
    ``drop`` or ``fail``; ``dataset`` the dataset that declares it."""

    name: str
    dataset: str
    action: str
    passed_records: int = 0
    failed_records: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "dataset": self.dataset,
            "action": self.action,
            "passed_records": self.passed_records,
            "failed_records": self.failed_records,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ExpectationMetrics:
        return cls(
            name=str(d.get("name") or ""),
            dataset=str(d.get("dataset") or ""),
            action=str(d.get("action") or "warn"),
            passed_records=_int(d.get("passed_records")),
            failed_records=_int(d.get("failed_records")),
        )


@dataclass(frozen=True)
class DataQuality:
    """``flow_progress.data_quality``: rows dropped and quarantined, and each rule's counts."""

    dropped_records: int = 0
    quarantined_records: int = 0
    expectations: tuple[ExpectationMetrics, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "dropped_records": self.dropped_records,
            "quarantined_records": self.quarantined_records,
            "expectations": [e.to_json() for e in self.expectations],
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> DataQuality:
        return cls(
            dropped_records=_int(d.get("dropped_records")),
            quarantined_records=_int(d.get("quarantined_records")),
            expectations=tuple(
                ExpectationMetrics.from_json(x)
                for x in d.get("expectations") or ()
                if isinstance(x, Mapping)
            ),
        )

    @classmethod
    def merged(cls, parts: list[DataQuality]) -> DataQuality:
        """The quality of a flow that checked the rules of several datasets."""
        return cls(
            sum(p.dropped_records for p in parts),
            sum(p.quarantined_records for p in parts),
            tuple(e for p in parts for e in p.expectations),
        )


@dataclass(frozen=True)
class FlowProgress:
    """``flow_progress``: a flow's state and, when known, its metrics (``num_output_rows``,
    ``num_input_rows``, AUTO CDC's ``num_upserted_rows`` / ``num_deleted_rows``, Auto
    Loader's ``backlog_files`` / ``backlog_bytes``) and data quality."""

    status: str
    metrics: Mapping[str, Any] | None = None
    data_quality: DataQuality | None = None
    duration_seconds: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)  # keys this version does not know

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status}
        if self.duration_seconds is not None:
            out["duration_seconds"] = self.duration_seconds
        if self.metrics is not None:
            out["metrics"] = dict(self.metrics)
        if self.data_quality is not None:
            out["data_quality"] = self.data_quality.to_json()
        return {**self.extra, **out}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> FlowProgress:
        metrics = d.get("metrics")
        quality = d.get("data_quality")
        seconds = d.get("duration_seconds")
        known = {"status", "metrics", "data_quality", "duration_seconds"}
        return cls(
            status=str(d.get("status") or ""),
            metrics=dict(metrics) if isinstance(metrics, Mapping) else None,
            data_quality=DataQuality.from_json(quality) if isinstance(quality, Mapping) else None,
            duration_seconds=float(seconds) if isinstance(seconds, (int, float)) else None,
            extra={k: v for k, v in d.items() if k not in known},
        )

    def metric(self, name: str) -> int | None:
        """A count among the metrics; None when the event does not give it."""
        value = (self.metrics or {}).get(name)
        return _int(value) if value is not None else None

    @property
    def final(self) -> bool:
        return self.status in FINAL_FLOW_STATES
