"""A flow's state is a :class:`FlowStatus`, and each member stands exactly where the bare
string it replaced stood: equal to it both ways, hashed alike (so sets and dict keys of
either kind find the other), and written identically by ``str``, f-strings, ``%s``,
``.format`` and JSON, so the event log's rows and every message stay byte for byte what
they were. A run's changes of state are :class:`FlowRun`'s methods. No Spark session: the
writer runs as a dry run."""

from __future__ import annotations

import io
import json

import pytest

from headwater.event_log_format import (
    FINAL_FLOW_STATES,
    FlowProgress,
    FlowStatus,
    details_json,
)
from headwater.pipelines.runner.event_log import EventLog
from headwater.pipelines.runner.flows import FlowRun
from headwater.pipelines.runner.progress import Printer

NAMES = [
    "QUEUED",
    "STARTING",
    "RUNNING",
    "RETRYING",
    "RESTARTING",
    "COMPLETED",
    "FAILED",
    "SKIPPED",
    "STOPPED",
]


def test_the_members_are_the_states_the_event_log_has_always_written():
    assert [m.value for m in FlowStatus] == NAMES
    assert [m.name for m in FlowStatus] == NAMES
    assert {"COMPLETED", "FAILED", "SKIPPED", "STOPPED"} == FINAL_FLOW_STATES


@pytest.mark.parametrize("name", NAMES)
def test_a_member_compares_and_hashes_as_its_bare_string(name):
    member = FlowStatus(name)
    assert member is FlowStatus[name]
    assert member == name and name == member
    assert (member != name) is False and (name != member) is False
    assert member != name.lower()
    assert hash(member) == hash(name)
    assert name in {member} and member in {name}
    assert {name: 1}[member] == 1 and {member: 1}[name] == 1
    assert (name in FINAL_FLOW_STATES) == (member in FINAL_FLOW_STATES)


@pytest.mark.parametrize("name", NAMES)
def test_a_member_formats_and_serialises_as_its_bare_string(name):
    member = FlowStatus(name)
    assert str(member) == name and type(str(member)) is str
    assert f"{member}" == name
    assert f"[{member:<12}|{member:>12}|{member:^12}]" == f"[{name:<12}|{name:>12}|{name:^12}]"
    assert "%s" % member == name  # noqa: UP031 (the operator under test)
    assert "%-12s|" % member == name.ljust(12) + "|"  # noqa: UP031
    assert "{}".format(member) == name  # noqa: UP032 (the method under test)
    assert "{:>12}".format(member) == name.rjust(12)  # noqa: UP032
    assert format(member) == name and format(member, "<10") == format(name, "<10")
    assert json.dumps(member) == json.dumps(name) == f'"{name}"'
    assert json.dumps({"status": member}) == json.dumps({"status": name})
    assert json.dumps({member: 1}) == json.dumps({name: 1})


def test_the_event_log_writes_the_same_row_text_and_the_terminal_the_same_line():
    log = EventLog(None, None, "pipeline-id", "p", "update-0123456789")
    out = io.StringIO()
    log.listeners.append(Printer(out))
    log.flow_progress("bronze", "db.bronze", FlowStatus.COMPLETED, {"num_output_rows": 1234})
    log.flow_progress("silver", "db.silver", FlowStatus.FAILED, error=ValueError("boom"))
    rows = [log.row(event, n) for n, event in enumerate(log.events)]
    assert [(r[4], r[7], r[8]) for r in rows] == [
        (
            "METRICS",
            "Flow 'bronze' is COMPLETED.",
            '{"flow_progress": {"status": "COMPLETED", "metrics": {"num_output_rows": 1234}}}',
        ),
        ("ERROR", "Flow 'silver' has FAILED: boom", '{"flow_progress": {"status": "FAILED"}}'),
    ]
    assert out.getvalue() == (
        f"  {'bronze':<32} COMPLETED   1,234 rows\n  {'silver':<32} FAILED      boom\n"
    )
    written = FlowProgress(FlowStatus.SKIPPED, {"num_output_rows": 0}).to_json()
    assert details_json("flow_progress", written) == details_json(
        "flow_progress", FlowProgress("SKIPPED", {"num_output_rows": 0}).to_json()
    )
    assert FlowProgress.from_json(json.loads(rows[1][8])["flow_progress"]).final


def test_a_flow_runs_changes_of_state_and_counts():
    run = FlowRun("f", "db.t")
    assert run.status is FlowStatus.QUEUED and run.error is None
    run.starting()
    assert run.status is FlowStatus.STARTING
    run.running(["/state/f/0"])
    assert run.status is FlowStatus.RUNNING and run.sources == ["/state/f/0"]
    run.wrote(10)
    run.wrote(5)
    assert (run.num_output_rows, run.batches) == (15, 2)
    boom = RuntimeError("boom")
    run.failed(boom)
    assert run.status is FlowStatus.FAILED and run.error is boom
    run.update_ended()  # a failed view stays FAILED when a continuous update ends
    assert run.status is FlowStatus.FAILED
    run.completed()  # a later attempt succeeded: the error is gone
    assert run.status is FlowStatus.COMPLETED and run.error is None
    run.update_ended()
    assert run.status is FlowStatus.STOPPED
    run.completed(stopped=True)
    assert run.status is FlowStatus.STOPPED
    run.not_started(FlowStatus.SKIPPED)
    assert run.status is FlowStatus.SKIPPED

    cdc = FlowRun("c", "db.c")
    cdc.applied(3, 1)  # no AUTO CDC counts started: nothing is counted
    assert (cdc.num_output_rows, cdc.batches) == (0, 0)
    cdc.changes = {"num_upserted_rows": 0, "num_deleted_rows": 0}
    cdc.applied(3, 1)
    cdc.applied(2, 0)
    assert cdc.metrics == {"num_output_rows": 6, "num_upserted_rows": 5, "num_deleted_rows": 1}
    assert cdc.batches == 2


def test_a_stream_counts_its_output_from_progress_unless_it_counts_its_commits():
    sink = FlowRun("to_sink", "s")
    sink.read(7, 2)
    sink.read(3, 1)
    assert (sink.num_input_rows, sink.num_output_rows, sink.batches) == (10, 10, 3)
    table = FlowRun("to_table", "db.t", counts_writes=True)
    table.wrote(6)
    table.read(7, 2)
    assert (table.num_input_rows, table.num_output_rows, table.batches) == (7, 6, 1)
    snapshots = FlowRun("snap", "db.s")
    snapshots.snapshots_applied(4, 2, 3)
    assert snapshots.metrics == {
        "num_output_rows": 6,
        "num_upserted_rows": 4,
        "num_deleted_rows": 2,
    }
    assert snapshots.batches == 3
