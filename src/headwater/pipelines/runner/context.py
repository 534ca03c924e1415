"""What one update is given and what every phase of it shares (Spark's pipeline server
calls it the update context): the options, the pipeline's folders, the event log, the
stop signal and each flow's run. Built once, before any phase, and never replaced: phases
read it and record into its ``runs`` and ``log``, so what a phase may touch is explicit."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from pyspark.sql import SparkSession

from headwater.event_log_format import FlowStatus
from headwater.pipelines.define.settings import SessionSettings
from headwater.pipelines.define.spec import PipelineSpec
from headwater.pipelines.graph.analysis import Graph
from headwater.pipelines.layout.folders import Layout
from headwater.pipelines.runner.event_log import Event, EventLog, Listener
from headwater.pipelines.runner.flows import FlowRun


@dataclass(frozen=True)
class UpdateOptions:
    """What an update does. ``refresh``: only these datasets (None: all);
    ``full_refresh``: clear these and reprocess them (``full_refresh_all``: every one)."""

    refresh: Sequence[str] | None = None
    full_refresh: Sequence[str] = ()
    full_refresh_all: bool = False
    dry_run: bool = False
    continuous: bool = False
    trigger_interval: str = "5 seconds"
    max_retries: int = 0
    max_concurrent_flows: int = 4
    stop: threading.Event | None = None


@dataclass
class UpdateResult:
    """What an update did: its state, each flow's run, the graph it ran, its events."""

    update_id: str
    pipeline: str
    state: str
    graph: Graph
    flows: dict[str, FlowRun]
    seconds: float = 0.0
    events: list[Event] = field(default_factory=list, repr=False)

    @property
    def ok(self) -> bool:
        return self.state == "COMPLETED"

    def failed(self) -> list[FlowRun]:
        return [r for r in self.flows.values() if r.status == FlowStatus.FAILED]


def event_log_name(spec: PipelineSpec) -> str:
    """The event log's table name: ``<database>.<pipeline>_event_log``."""
    name = "".join(c if c.isalnum() else "_" for c in spec.name.lower()) + "_event_log"
    return f"{spec.database}.{name}" if spec.database else name


@dataclass(frozen=True)
class UpdateContext:
    """One update's shared, fixed inputs and its two records (``log``, ``runs``)."""

    spark: SparkSession
    spec: PipelineSpec
    options: UpdateOptions
    layout: Layout
    update_id: str
    log: EventLog
    stop: threading.Event
    settings: SessionSettings  # what the update sets on the session, put back at its end
    runs: dict[str, FlowRun] = field(default_factory=dict)
    state_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    view_counters: dict[str, str] = field(default_factory=dict)  # temporary view -> flow

    def counts_view(self, view: str, flow: str) -> bool:
        """Whether ``flow`` counts the expectations of the temporary view ``view`` in this
        update. Every flow reading a view checks its rows (drop and fail apply to each),
        but its metrics are reported once per update, as the view's, by the first flow
        that reads it: two flows reading one view each see its rows, and counting both
        would report every record twice."""
        with self.state_lock:
            return self.view_counters.setdefault(view, flow) == flow

    @classmethod
    def create(
        cls,
        spark: SparkSession,
        spec: PipelineSpec,
        options: UpdateOptions,
        listeners: Sequence[Listener] = (),
    ) -> UpdateContext:
        """A new update of ``spec``: a fresh id, and an event log that writes nothing on
        a dry run."""
        layout = Layout(spec.storage_path)
        update_id = str(uuid.uuid4())
        dry = options.dry_run
        log = EventLog(
            None if dry else spark,
            None if dry else layout.event_log,
            layout.read_state("pipeline").get("pipeline_id", ""),
            spec.name,
            update_id,
            listeners=list(listeners),
            table_name=event_log_name(spec),
        )
        stop = options.stop or threading.Event()
        return cls(spark, spec, options, layout, update_id, log, stop, SessionSettings(spark))
