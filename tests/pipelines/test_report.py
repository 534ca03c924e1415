"""The HTML report of a pipeline, made from event-log rows alone (no Spark session): the
rows are built here the way an update writes them, and once as a real Delta event log."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import struct
import subprocess
import zlib
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from headwater.errors import PipelineError
from headwater.pipelines.report.model import build
from headwater.pipelines.report.page import load_events, render, write_report
from headwater.pipelines.report.svg import Node, graph, layout

T0 = datetime(2024, 5, 1, 8, 0, tzinfo=timezone.utc)
VIOLATION = (
    "[EXPECTATION_VIOLATION] Flow 'silver' failed: expectation 'positive' (amount > 0) on "
    "dataset 'db.silver' was violated by the row {'id': 7, 'amount': -3, "
    "'note': '<script>alert(1)</script>'}"
)


def definition(
    flow: str,
    output: str,
    inputs: list[str],
    kind: str,
    expectations: tuple[tuple[str, str, str], ...] = (),
) -> tuple[str, dict[str, Any]]:
    return flow, {
        "output_dataset": output,
        "input_datasets": inputs,
        "flow_type": "COMPLETE" if kind == "MATERIALIZED_VIEW" else "APPEND",
        "streaming": kind == "STREAMING_TABLE",
        "once": False,
        "dataset_type": kind,
        "source_code_location": f"transformations/{flow}.py:3",
        "schema": [{"name": "id", "data_type": "bigint"}],
        "sql": None,
        "expectations": [{"name": n, "constraint": c, "action": a} for n, c, a in expectations],
    }


SILVER_RULES = (("positive", "amount > 0", "fail"), ("has_region", "region IS NOT NULL", "warn"))
# files.* are read by the pipeline and written by nothing in it: external sources
PIPELINE = [
    definition("bronze", "db.bronze", ["files.landing"], "STREAMING_TABLE"),
    definition(
        "clean",
        "db.clean",
        ["db.bronze"],
        "TEMPORARY_VIEW",
        (("valid_id", "id IS NOT NULL", "drop"),),
    ),
    definition("silver", "db.silver", ["db.clean"], "STREAMING_TABLE", SILVER_RULES),
    definition("backfill", "db.silver", ["files.archive"], "STREAMING_TABLE", SILVER_RULES),
    definition("gold", "db.gold", ["db.silver"], "MATERIALIZED_VIEW"),
]


def silver_quality(rows: int, dropped: int, negative: int, no_region: int) -> dict[str, Any]:
    """What the silver flow reports: its dataset's rules and the view's it read."""
    checked = rows - dropped

    def result(name: str, dataset: str, action: str, total: int, failed: int) -> dict[str, Any]:
        return {
            "name": name,
            "dataset": dataset,
            "action": action,
            "passed_records": total - failed,
            "failed_records": failed,
        }

    return {
        "dropped_records": dropped,
        "quarantined_records": 0,
        "expectations": [
            result("valid_id", "db.clean", "drop", rows, dropped),
            result("positive", "db.silver", "fail", checked, negative),
            result("has_region", "db.silver", "warn", checked, no_region),
        ],
    }


class Log:
    """Event-log rows as ``DeltaTable(...).to_pyarrow_table().to_pylist()`` gives them."""

    def __init__(self, name: str = "orders_pipeline", pipeline_id: str = "pipe-7f3a") -> None:
        self.rows: list[dict[str, Any]] = []
        self.seq = itertools.count(1_000)
        self.clock = T0
        self.name = name
        self.pipeline_id = pipeline_id

    def add(
        self,
        update: str,
        event_type: str,
        details: dict[str, Any],
        *,
        flow: str | None = None,
        dataset: str | None = None,
        error: str | None = None,
        after: float = 1.5,
    ) -> None:
        self.clock += timedelta(seconds=after)
        message = f"{event_type} {flow or ''}".strip()
        if error is not None:
            message = f"Flow '{flow}' has FAILED: {error}"
        self.rows.append(
            {
                "id": f"event-{len(self.rows)}",
                "sequence": {"data_plane_id": update, "seq_no": next(self.seq)},
                "origin": {
                    "pipeline_id": self.pipeline_id,
                    "pipeline_name": self.name,
                    "update_id": update,
                    "flow_id": f"flow-{flow}" if flow else None,
                    "flow_name": flow,
                    "dataset_name": dataset,
                },
                "timestamp": self.clock,
                "level": "ERROR" if error else "INFO",
                "event_type": event_type,
                "maturity_level": "STABLE",
                "message": message,
                "details": json.dumps({event_type: details}),
                "error": None
                if error is None
                else {"fatal": True, "exceptions": [{"class_name": "X", "message": error}]},
            }
        )

    def update(
        self,
        update: str,
        finals: dict[str, dict[str, Any]] | None = None,
        *,
        state: str = "COMPLETED",
        dry_run: bool = False,
        full_refresh: bool = False,
        definitions: list[tuple[str, dict[str, Any]]] = PIPELINE,
    ) -> None:
        """An update's events in the order an update emits them. ``finals``: per flow,
        the details of its final progress event (plus ``error``); flows left out end
        COMPLETED with 10 rows; temporary views never run."""
        cause = {
            "cause": "API_CALL",
            "full_refresh": full_refresh,
            "refresh_selection": [],
            "full_refresh_selection": [],
            "dry_run": dry_run,
            "continuous": False,
        }
        self.add(update, "create_update", cause, after=60)
        self.add(update, "update_progress", {"state": "INITIALIZING"})
        for flow, details in definitions:
            self.add(
                update, "flow_definition", details, flow=flow, dataset=details["output_dataset"]
            )
        if not dry_run:
            self.add(update, "update_progress", {"state": "RUNNING"})
            ran = [(f, d) for f, d in definitions if d["dataset_type"] != "TEMPORARY_VIEW"]
            for flow, details in ran:
                target = details["output_dataset"]
                for status in ("QUEUED", "STARTING", "RUNNING"):
                    self.add(update, "flow_progress", {"status": status}, flow=flow, dataset=target)
                final = dict((finals or {}).get(flow, {"status": "COMPLETED", "rows": 10}))
                error = final.pop("error", None)
                rows = final.pop("rows", None)
                if rows is not None:
                    final["metrics"] = {"num_output_rows": rows}
                self.add(
                    update, "flow_progress", final, flow=flow, dataset=target, error=error, after=4
                )
        self.add(update, "update_progress", {"state": state})


def healthy(log: Log, update: str, negative: int = 0) -> None:
    log.update(
        update,
        {
            "bronze": {"status": "COMPLETED", "rows": 1000, "duration_seconds": 3.25},
            "silver": {
                "status": "COMPLETED",
                "rows": 990,
                "data_quality": silver_quality(1000, 10, negative, 40),
            },
        },
    )


def failing(log: Log, update: str) -> None:
    log.update(
        update,
        {
            "bronze": {"status": "COMPLETED", "rows": 500},
            "silver": {
                "status": "FAILED",
                "error": VIOLATION,
                "data_quality": silver_quality(500, 5, 1, 20),
            },
            "gold": {"status": "SKIPPED"},
        },
        state="FAILED",
    )


def text_of(page: str) -> str:
    """The page's visible text, tags out, entities kept."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))


# -- events -> model ------------------------------------------------------------------


def test_a_flows_final_state_is_its_last_final_progress_whatever_the_row_order():
    log = Log()
    healthy(log, "u1")
    rows = list(reversed(log.rows))  # a table scan gives rows in no particular order
    latest = build(rows).latest
    assert latest is not None and latest.state == "COMPLETED"
    flows = {f.name: f for f in latest.flows}
    assert flows["bronze"].status == "COMPLETED"
    assert flows["bronze"].rows_out == 1000
    assert flows["bronze"].seconds == 3.25  # duration_seconds when the event gives it
    assert flows["silver"].seconds == pytest.approx(1.5 + 4)  # else STARTING to the end
    assert flows["clean"].status is None  # a temporary view runs inside its readers
    assert latest.rows_written == 1000 + 990 + 10 + 10
    assert latest.seconds is not None and latest.seconds > 0


def test_inputs_no_flow_writes_are_external_sources_and_views_keep_their_kind():
    log = Log()
    healthy(log, "u1")
    latest = build(log.rows).latest
    assert latest is not None
    kinds = {d.key: d.kind for d in latest.datasets}
    assert kinds == {
        "db.bronze": "STREAMING_TABLE",
        "db.clean": "TEMPORARY_VIEW",
        "db.silver": "STREAMING_TABLE",
        "db.gold": "MATERIALIZED_VIEW",
        "files.landing": "EXTERNAL",
        "files.archive": "EXTERNAL",
    }


def test_expectations_are_counted_against_the_dataset_that_declares_them():
    log = Log()
    healthy(log, "u1", negative=0)
    latest = build(log.rows).latest
    assert latest is not None
    quality = {q.dataset: q for q in latest.quality}
    assert set(quality) == {"db.clean", "db.silver"}
    (valid_id,) = quality["db.clean"].expectations
    assert (valid_id.name, valid_id.action, valid_id.failed) == ("valid_id", "drop", 10)
    silver = {e.name: e for e in quality["db.silver"].expectations}
    assert silver["has_region"].failed == 40 and silver["has_region"].passed == 950
    assert silver["positive"].constraint == "amount > 0"
    assert quality["db.silver"].dropped == 10  # dropped by the flow into silver
    assert latest.records_failed == 10  # dropped; the 40 without region were kept
    assert latest.records_warned == 40


def test_the_window_keeps_the_last_updates_and_counts_them_all():
    log = Log()
    for i in range(7):
        healthy(log, f"u{i}", negative=0)
    report = build(log.rows, updates=3)
    assert [u.id for u in report.updates] == ["u4", "u5", "u6"]
    assert report.total_updates == 7
    assert report.pipeline_name == "orders_pipeline" and report.pipeline_id == "pipe-7f3a"
    with pytest.raises(ValueError, match="at least 1"):
        build(log.rows, updates=0)


def test_a_graph_draws_a_datasets_own_flow_as_its_arrows_and_other_flows_as_nodes():
    log = Log()
    healthy(log, "u1")
    latest = build(log.rows).latest
    assert latest is not None
    nodes, edges = graph(latest)
    ids = {n.id for n in nodes}
    assert "f:backfill" in ids and "f:silver" not in ids and "f:bronze" not in ids
    assert ("d:files.archive", "f:backfill") in edges and ("f:backfill", "d:db.silver") in edges
    assert ("d:db.clean", "d:db.silver") in edges
    by_id = {n.id: n for n in nodes}
    assert by_id["d:db.bronze"].label == "bronze"  # the shared database left out
    assert by_id["d:files.landing"].label == "files.landing"


def test_layers_follow_the_longest_path_and_long_edges_bend_around_nodes():
    nodes = [Node(n, n, n, "TABLE") for n in "abcd"]
    # a -> b -> c -> d, and a -> d skipping two layers
    placed = layout(nodes, [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d")])
    x = {p.node.id: p.x for p in placed.nodes}
    assert x["a"] < x["b"] < x["c"] < x["d"]
    long_edge = max(placed.edges, key=lambda e: len(e.points))
    assert len(long_edge.points) == 2 + 2 * 2  # through a virtual point in each skipped layer


def test_ordering_within_layers_removes_a_crossing():
    # sources a, b; a feeds y, b feeds x, given in the order that would cross
    nodes = [Node(n, n, n, "TABLE") for n in ("a", "b", "x", "y")]
    placed = layout(nodes, [("a", "y"), ("b", "x")])
    y = {p.node.id: p.y for p in placed.nodes}
    assert (y["a"] < y["b"]) == (y["y"] < y["x"])


# -- model -> HTML --------------------------------------------------------------------


def test_the_page_names_the_pipeline_its_latest_update_and_every_dataset():
    log = Log()
    healthy(log, "u-0001-aaaa")
    healthy(log, "u-0002-bbbb")
    page = render(log.rows)
    text = text_of(page)
    assert "orders_pipeline" in text and "pipe-7f3a" in text
    assert "u-0002-bbbb" in text and "API_CALL" in text
    assert "2024-05-01 08:" in text  # UTC start time
    for label in ("bronze", "clean", "silver", "gold", "files.landing", "backfill"):
        assert f">{label}</text>" in page
    for kind in ("streaming table", "temporary view", "materialized view", "external source"):
        assert kind in text
    assert "COMPLETED · 1,000 out · 3.2 s" in page
    assert "evaluated in its readers" in page


def test_a_failed_update_shows_the_flows_message_escaped():
    log = Log()
    healthy(log, "u1")
    failing(log, "u2")
    page = render(log.rows)
    assert "Failures of the latest update" in page
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "[EXPECTATION_VIOLATION] Flow &#x27;silver&#x27; failed" in page
    assert 'data-status="FAILED"' in page and 'data-status="SKIPPED"' in page


def test_after_a_failure_a_later_success_still_shows_the_failure_labelled_as_earlier():
    log = Log()
    failing(log, "u-fail-0001")
    healthy(log, "u2")
    healthy(log, "u3")
    page = render(log.rows)
    assert "Most recent failure in the window" in page
    assert "The latest update succeeded" in text_of(page)
    assert "u-fail-0" in page and "2 updates before the latest" in text_of(page)
    assert "Failures of the latest update" not in page


def test_expectations_show_records_actions_drops_and_a_trend_per_update():
    log = Log()
    for i, negative in enumerate([0, 3, 0, 12]):
        healthy(log, f"u{i}", negative=negative)
    page = render(log.rows, updates=3)
    text = text_of(page)
    assert "positive" in text and "has_region" in text and "valid_id" in text
    assert "978 passed · 12 failed (1.21%)" in text
    assert "10 rows dropped · 0 rows quarantined" in text
    assert 'class="action action-warn"' in page and 'class="action action-fail"' in page
    trend = re.search(r"positive</strong>.*?</tr>", page, re.S)
    assert trend is not None and trend.group(0).count("<rect") == 3  # one bar per update
    assert "max 1.21%" in trend.group(0)


def test_the_updates_table_lists_recent_updates_newest_first():
    log = Log()
    healthy(log, "aaaaaaaa-1")
    failing(log, "bbbbbbbb-2")
    healthy(log, "cccccccc-3")
    table = render(log.rows).split("Recent updates", 1)[1]
    assert table.index("cccccccc") < table.index("bbbbbbbb") < table.index("aaaaaaaa")
    row = re.search(r"bbbbbbbb.*?</tr>", table, re.S)
    assert row is not None and ">FAILED<" in row.group(0)
    assert '"num">510<' in row.group(0)  # bronze 500 + backfill 10; silver failed
    assert '"num bad">6<' in row.group(0)  # 5 dropped + 1 negative
    assert '"num warned">20<' in row.group(0)  # without region: warned, kept


def test_a_dry_run_shows_the_graph_and_the_rules_without_results():
    log = Log()
    log.update("dry-1", dry_run=True)
    page = render(log.rows)
    text = text_of(page)
    assert "defined (dry run)" in page and "dry run" in text
    assert "no record checked" in text and "positive" in text
    assert "Failures" not in page


def test_an_update_that_failed_before_defining_flows_shows_the_last_graph():
    log = Log()
    healthy(log, "u-good-01")
    log.add("u-bad-0002", "create_update", {"cause": "API_CALL"}, after=60)
    log.add(
        "u-bad-0002",
        "update_progress",
        {"state": "FAILED"},
        error="[PIPELINE_DEFINITION_ERROR] transformations/silver.py:4: no such column 'amt'",
    )
    page = render(log.rows)
    assert "defined no flows" in page and ">silver</text>" in page
    assert "no such column &#x27;amt&#x27;" in page


def test_an_empty_log_and_a_single_update_both_render():
    assert "holds no update yet" in render([])
    log = Log()
    healthy(log, "only")
    assert "1 of 1" in text_of(render(log.rows))


def test_the_page_fetches_nothing():
    log = Log()
    healthy(log, "u1")
    failing(log, "u2")
    page = render(log.rows)
    assert "<link" not in page and "<script" not in page and "@import" not in page
    assert "<img" not in page and "url(" not in page.replace("url(#arrow)", "")
    assert set(re.findall(r"https?://[^\"' ]+", page)) == {"http://www.w3.org/2000/svg"}


# -- the Delta event log ----------------------------------------------------------------

EVENT_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("sequence", pa.struct([("data_plane_id", pa.string()), ("seq_no", pa.int64())])),
        (
            "origin",
            pa.struct(
                [
                    (k, pa.string())
                    for k in (
                        "pipeline_id",
                        "pipeline_name",
                        "update_id",
                        "flow_id",
                        "flow_name",
                        "dataset_name",
                    )
                ]
            ),
        ),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("level", pa.string()),
        ("event_type", pa.string()),
        ("maturity_level", pa.string()),
        ("message", pa.string()),
        ("details", pa.string()),
        (
            "error",
            pa.struct(
                [
                    ("fatal", pa.bool_()),
                    (
                        "exceptions",
                        pa.list_(
                            pa.struct([("class_name", pa.string()), ("message", pa.string())])
                        ),
                    ),
                ]
            ),
        ),
    ]
)


def test_a_delta_event_log_is_read_from_the_storage_folder_or_the_table_folder(tmp_path):
    log = Log()
    healthy(log, "u1")
    failing(log, "u2")
    storage = tmp_path / "storage"
    table = storage / "system" / "events"
    write_deltalake(str(table), pa.Table.from_pylist(log.rows, schema=EVENT_SCHEMA))
    assert len(load_events(str(storage))) == len(log.rows)
    assert len(load_events(str(table))) == len(log.rows)
    out = write_report(str(storage), tmp_path / "out" / "report.html", updates=5)
    page = out.read_text(encoding="utf-8")
    assert page == render(log.rows, updates=5)
    assert "&lt;script&gt;" in page and "Failures of the latest update" in page
    (tmp_path / "folder").mkdir()
    assert write_report(storage, tmp_path / "folder").name == "pipeline-report.html"


def test_a_folder_without_an_event_log_says_what_to_do(tmp_path):
    with pytest.raises(PipelineError, match="run an update first") as raised:
        load_events(str(tmp_path))
    assert str(tmp_path) in str(raised.value)
    assert "storage folder" in str(raised.value)
    other = tmp_path / "a_table"
    write_deltalake(str(other), pa.table({"x": [1]}))
    with pytest.raises(PipelineError, match="not a pipeline event log"):
        load_events(str(other))


# -- in a browser ------------------------------------------------------------------------


def png_size_and_colours(path: Path) -> tuple[int, int, int]:
    """Width, height and how many distinct byte values the image data holds (a blank
    page compresses to a handful), read with the standard library alone."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    return width, height, len(set(zlib.decompress(idat)))


def test_the_report_renders_in_headless_chromium(tmp_path):
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium)")
    log = Log()
    for i in range(4):
        healthy(log, f"update-{i}", negative=i)
    failing(log, "update-4")
    page = tmp_path / "report.html"
    page.write_text(render(log.rows), encoding="utf-8")
    shot = tmp_path / "shot.png"
    common = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1400,1000",
    ]
    url = page.as_uri()
    subprocess.run(
        [*common, f"--screenshot={shot}", url], capture_output=True, timeout=120, check=True
    )
    dom = subprocess.run(
        [*common, "--dump-dom", url], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert shot.exists()
    width, height, colours = png_size_and_colours(shot)
    assert (width, height) == (1400, 1000)
    assert shot.stat().st_size > 20_000 and colours > 64, "the screenshot looks blank"
    for name in ("bronze", "clean", "silver", "gold", "backfill", "files.landing"):
        assert f">{name}</text>" in dom
    for status in ("COMPLETED", "FAILED", "SKIPPED"):
        assert f'data-status="{status}"' in dom
    for rule in ("positive", "has_region", "valid_id"):
        assert f"<strong>{rule}</strong>" in dom
    assert "orders_pipeline" in dom and "EXPECTATION_VIOLATION" in dom
