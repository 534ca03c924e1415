"""``headwater pipelines report``: one self-contained HTML file about a pipeline.

The event log answers every question about a pipeline, but only to someone who writes
SQL against it. The report answers the usual ones at a glance (what ran, what failed and
why, which expectations let bad rows through, and whether that is new) in a file that can
be attached to a ticket or archived with a CI run. Hence one file with nothing to fetch:
inline CSS, inline SVG, no script, every text from the log escaped (a failure message
quotes the row that broke a rule, and rows hold anything).

Reading is done with the ``deltalake`` package, not Spark: a report must be quick to make
and must work on a machine that only has the pipeline's storage folder.
"""

from __future__ import annotations

import html
import os
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError

from headwater import storage as fs
from headwater.errors import PipelineError
from headwater.event_log_format import FOLDER, FlowStatus
from headwater.pipelines.layout.folders import Layout
from headwater.pipelines.report.model import (
    DatasetQuality,
    ExpectationResult,
    PipelineReport,
    UpdateSummary,
    build,
)
from headwater.pipelines.report.svg import KIND_LABELS, STATUS_COLOURS, duration, svg

__all__ = ["load_events", "render", "write_report"]


def load_events(storage: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The rows of the event log of the pipeline whose storage folder is ``storage`` (or
    of the log table itself, when ``storage`` is that folder), as dicts."""
    root = fs.normalize(storage)
    for candidate in (Layout(root).event_log, root):
        try:
            table = DeltaTable(candidate)
        except TableNotFoundError:
            continue
        columns = set(table.schema().to_arrow().names)
        if not {"event_type", "origin", "details"} <= columns:
            raise PipelineError(
                f"[PIPELINE_EVENT_LOG_NOT_FOUND] {candidate} is a Delta table but not a "
                "pipeline event log. Give the pipeline's storage folder (the spec's "
                f"'storage'), which holds {'/'.join(FOLDER)}."
            )
        # File by file with pyarrow: deltalake 1.6's to_pyarrow_table() / _dataset() leave
        # threads that abort the interpreter at exit about half the time ("terminate called
        # without an active exception"), which would fail `headwater pipelines report`.
        # The event log is append-only with no deletion vectors, so its files are its rows.
        rows: list[dict[str, Any]] = []
        for uri in table.file_uris():
            rows.extend(pq.read_table(uri).to_pylist())
        return rows
    raise PipelineError(
        f"[PIPELINE_EVENT_LOG_NOT_FOUND] No event log in {root}: neither "
        f"{Layout(root).event_log} nor {root} is a Delta table. Give the pipeline's storage "
        "folder (the spec's 'storage'), or run an update first: the log is written by "
        "updates (not by dry runs)."
    )


def write_report(storage: str | os.PathLike[str], output: str | Path, *, updates: int = 10) -> Path:
    """Write the report of the last ``updates`` updates of the pipeline at ``storage`` to
    ``output`` (a file, or a folder to put ``pipeline-report.html`` in); returns the file."""
    text = render(load_events(storage), updates=updates)
    path = Path(output)
    if path.is_dir():
        path = path / "pipeline-report.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def render(events: Sequence[Mapping[str, Any]], *, updates: int = 10) -> str:
    """The report of the last ``updates`` updates in ``events`` (event-log rows), as the
    text of an HTML page."""
    report = build(events, updates=updates)
    name = report.pipeline_name or "pipeline"
    body = [_header(report)]
    latest = report.latest
    if latest is None:
        body.append('<section><p class="muted">The event log holds no update yet.</p></section>')
    else:
        body += [_graph(report), _failures(report), _quality(report), _updates(report)]
    body.append(
        f"<footer>Made by headwater from {report.events:,} events of the pipeline's event "
        f"log ({_count(report.total_updates, 'update')} in all).</footer>"
    )
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{_e(name)} · pipeline report</title>",
            f"<style>{CSS}</style></head><body><main>",
            *[part for part in body if part],
            "</main></body></html>",
            "",
        ]
    )


# -- sections -----------------------------------------------------------------------------


def _header(report: PipelineReport) -> str:
    u = report.latest
    facts = [("Pipeline id", _code(report.pipeline_id or "unknown"))]
    if u is not None:
        flags = [
            label
            for label, on in (
                ("full refresh", u.full_refresh),
                ("dry run", u.dry_run),
                ("continuous", u.continuous),
            )
            if on
        ]
        facts += [
            ("Latest update", _code(u.id)),
            ("State", _badge(u.state)),
            ("Started", _e(_when(u.start))),
            ("Duration", _e(_seconds(u.seconds))),
            ("Cause", _e(" · ".join([u.cause or "unknown", *flags]))),
        ]
    shown = f"{len(report.updates)} of {report.total_updates}"
    facts.append(("Updates shown", _e(shown)))
    items = "".join(f"<div><dt>{k}</dt><dd>{v}</dd></div>" for k, v in facts)
    return (
        f'<header><p class="eyebrow">Pipeline report</p>'
        f"<h1>{_e(report.pipeline_name or 'Unnamed pipeline')}</h1>"
        f'<dl class="facts">{items}</dl></header>'
    )


def _graph(report: PipelineReport) -> str:
    u = report.graph_update
    latest = report.latest
    if u is None:
        return (
            '<section><h2>Dataflow graph</h2><p class="muted">No update in the window '
            "defined its flows (each failed before its sources were analysed).</p></section>"
        )
    note = ""
    if latest is not None and u.id != latest.id:
        note = (
            f'<p class="note">The latest update ({_code(latest.id[:8])}) defined no flows; '
            f"this is the graph of update {_code(u.id[:8])}, started {_e(_when(u.start))}.</p>"
        )
    legend_items = [
        (FlowStatus.COMPLETED, "completed"),
        (FlowStatus.FAILED, "failed"),
        (FlowStatus.SKIPPED, "skipped / stopped"),
        (FlowStatus.RETRYING, "retrying"),
        (FlowStatus.RUNNING, "queued / running"),
    ]
    legend = "".join(
        f'<span><i style="background:{STATUS_COLOURS[s]}"></i>{label}</span>'
        for s, label in legend_items
    )
    legend += '<span><i class="dashed"></i>external source / temporary view</span>'
    return (
        "<section><h2>Dataflow graph</h2>"
        f'{note}<div class="graph-box">{svg(u)}</div>'
        f'<p class="legend">{legend}</p></section>'
    )


def _failures(report: PipelineReport) -> str:
    latest = report.latest
    shown = report.last_failure
    if latest is None or shown is None:
        return ""
    if shown.id == latest.id:
        heading = "Failures of the latest update"
        intro = ""
    else:
        ago = len(report.updates) - 1 - report.updates.index(shown)
        heading = "Most recent failure in the window"
        intro = (
            f'<p class="note">The latest update {_did(latest.state)}. These are from update '
            f"{_code(shown.id[:8])}, started {_e(_when(shown.start))}, {_count(ago, 'update')} "
            "before the latest.</p>"
        )
    items = []
    for f in shown.failed_flows:
        items.append(
            f'<article class="failure"><h3>{_badge(FlowStatus.FAILED)} flow {_code(f.name)} into '
            f"{_code(f.output)}</h3>"
            + (f'<p class="muted">Defined at {_code(f.source)}</p>' if f.source else "")
            + f"<pre>{_e(f.error or '')}</pre></article>"
        )
    if shown.error:
        items.append(
            f'<article class="failure"><h3>{_badge(shown.state)} the update</h3>'
            f"<pre>{_e(shown.error)}</pre></article>"
        )
    if not items:
        items.append(f'<p class="muted">Update {_code(shown.id[:8])} failed without a message.</p>')
    return f"<section><h2>{heading}</h2>{intro}{''.join(items)}</section>"


def _quality(report: PipelineReport) -> str:
    latest = report.latest
    if latest is None or not latest.quality:
        return ""
    kinds = {d.key: d.kind for d in latest.datasets}
    blocks = [_dataset_quality(report, q, kinds.get(q.dataset, "")) for q in latest.quality]
    return (
        "<section><h2>Expectations</h2>"
        f'<p class="muted">Records of the latest update ({_code(latest.id[:8])}); the trend '
        f"is the failure rate in each of the last {_count(len(report.updates), 'update')}, "
        f"oldest first.</p>{''.join(blocks)}</section>"
    )


def _dataset_quality(report: PipelineReport, q: DatasetQuality, kind: str) -> str:
    counts = f"{q.dropped:,} rows dropped · {q.quarantined:,} rows quarantined"
    rows = "".join(_expectation_row(report, e) for e in q.expectations)
    label = KIND_LABELS.get(kind, kind.lower().replace("_", " "))
    return (
        f'<div class="dataset"><h3>{_code(q.dataset)} <span class="muted">{_e(label)}</span>'
        f'</h3><p class="counts">{counts}</p>'
        '<table class="expectations"><colgroup><col style="width:34%"><col style="width:10%">'
        '<col style="width:36%"><col style="width:20%"></colgroup><thead><tr><th>Expectation</th><th>Action</th>'
        "<th>Latest update</th><th>Trend</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></div>"
    )


def _expectation_row(report: PipelineReport, e: ExpectationResult) -> str:
    constraint = f'<div class="constraint">{_code(e.constraint)}</div>' if e.constraint else ""
    return (
        f"<tr><td><strong>{_e(e.name)}</strong>{constraint}</td>"
        f'<td><span class="action action-{_e(e.action)}">{_e(e.action)}</span></td>'
        f"<td>{_bar(e)}</td><td>{_sparkline(report.trend(e.dataset, e.name))}</td></tr>"
    )


def _bar(e: ExpectationResult) -> str:
    if not e.checked:
        return '<span class="muted">no record checked</span>'
    failed_pct = 100 * e.failed / e.checked
    bad = "warn" if e.kept else "fail"
    broke = f"{e.failed:,} warned (kept)" if e.kept else f"{e.failed:,} failed"
    # a single failed record in a million must still show
    failed_width = max(failed_pct, 1.5) if e.failed else 0.0
    return (
        f'<div class="bar" title="{e.passed:,} passed, {broke}">'
        f'<span class="ok" style="width:{100 - failed_width:.2f}%"></span>'
        f'<span class="{bad}" style="width:{failed_width:.2f}%"></span></div>'
        f'<div class="bar-text"><span class="ok-text">{e.passed:,} passed</span> · '
        f'<span class="{bad}-text">{broke}</span> ({_pct(failed_pct)})</div>'
    )


def _sparkline(trend: Sequence[ExpectationResult | None]) -> str:
    """A bar per update: failure rate, scaled to the window's highest (shown as text)."""
    width, height, gap = 12, 28, 3
    rates = [r.failure_rate if r is not None else None for r in trend]
    top = max((r for r in rates if r is not None), default=0.0)
    bars = []
    for i, (result, rate) in enumerate(zip(trend, rates, strict=True)):
        x = i * (width + gap)
        if result is None or rate is None:
            bars.append(
                f'<rect x="{x}" y="{height - 2}" width="{width}" height="2" fill="#d0d7de">'
                "<title>not checked in this update</title></rect>"
            )
            continue
        h = max(2.0, height * rate / top) if top and rate else 2.0
        colour = ("#bf8700" if result.action == "warn" else "#cf222e") if rate else "#1a7f37"
        verb = "warned (kept)" if result.kept else "failed"
        tip = f"{_pct(100 * rate)} {verb} ({result.failed:,} of {result.checked:,})"
        bars.append(
            f'<rect x="{x}" y="{height - h:.1f}" width="{width}" height="{h:.1f}" '
            f'fill="{colour}"><title>{_e(tip)}</title></rect>'
        )
    if not any(r is not None and r.checked for r in trend):
        return '<span class="muted">no record checked yet</span>'
    total = max(1, len(trend)) * (width + gap) - gap
    return (
        f'<span class="trend"><svg xmlns="http://www.w3.org/2000/svg" width="{total}" '
        f'height="{height}" viewBox="0 0 {total} {height}" role="img" '
        f'aria-label="failure rate per update">{"".join(bars)}</svg>'
        f'<span class="muted">max {_pct(100 * top)}</span></span>'
    )


def _updates(report: PipelineReport) -> str:
    rows = "".join(_update_row(u) for u in reversed(report.updates))
    return (
        '<section><h2>Recent updates</h2><table class="updates"><thead><tr><th>Update</th>'
        '<th>Started</th><th>State</th><th>Duration</th><th class="num">Rows written</th>'
        '<th class="num">Records failed</th><th class="num">Records warned (kept)</th>'
        "</tr></thead>"
        f"<tbody>{rows}</tbody></table></section>"
    )


def _update_row(u: UpdateSummary) -> str:
    flags = " ".join(
        f'<span class="flag">{label}</span>'
        for label, on in (("full refresh", u.full_refresh), ("dry run", u.dry_run))
        if on
    )
    return (
        f'<tr><td title="{_e(u.id)}">{_code(u.id[:8])} {flags}</td><td>{_e(_when(u.start))}</td>'
        f"<td>{_badge(u.state)}</td><td>{_e(_seconds(u.seconds))}</td>"
        f'<td class="num">{u.rows_written:,}</td>'
        f'<td class="num{" bad" if u.records_failed else ""}">{u.records_failed:,}</td>'
        f'<td class="num{" warned" if u.records_warned else ""}">{u.records_warned:,}</td></tr>'
    )


# -- small formats ------------------------------------------------------------------------


def _e(text: str) -> str:
    return html.escape(str(text), quote=True)


def _code(text: str) -> str:
    return f"<code>{_e(text)}</code>"


def _badge(state: str) -> str:
    colour = STATUS_COLOURS.get(state, "#57606a")
    return f'<span class="badge" style="background:{colour}">{_e(state)}</span>'


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC") if moment else "unknown"


def _seconds(seconds: float | None) -> str:
    return duration(seconds) if seconds is not None else "unknown"


def _did(state: str) -> str:
    return "succeeded" if state == "COMPLETED" else f"did not fail (it is {_e(state)})"


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _pct(value: float) -> str:
    if value == 0:
        return "0%"
    return f"{value:.2f}%" if value < 10 else f"{value:.1f}%"


# -- style --------------------------------------------------------------------------------

# System fonts only: nothing is fetched when the page opens.
CSS = """
:root { --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --soft: #f6f8fa;
  --ok: #1a7f37; --fail: #cf222e; --warn: #bf8700; --skip: #8c959f; }
* { box-sizing: border-box; }
body { margin: 0; background: #fff; color: var(--fg); line-height: 1.45;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue",
  "Noto Sans", "DejaVu Sans", Arial, sans-serif; }
main { max-width: 1280px; margin: 0 auto; padding: 28px 32px 40px; }
h1 { font-size: 26px; margin: 0 0 14px; }
h2 { font-size: 18px; margin: 0 0 12px; padding-bottom: 6px; border-bottom: 1px solid var(--line); }
h3 { font-size: 15px; margin: 0 0 6px; }
section { margin: 28px 0; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono",
  monospace; font-size: 12.5px; }
code { background: var(--soft); border-radius: 4px; padding: 1px 5px; }
pre { background: #fff8f8; border: 1px solid #ffcecb; border-radius: 6px; padding: 10px 12px;
  white-space: pre-wrap; word-break: break-word; margin: 6px 0 0; }
.eyebrow { text-transform: uppercase; letter-spacing: .08em; font-size: 11px;
  color: var(--muted); margin: 0 0 2px; }
.muted { color: var(--muted); font-weight: normal; }
.note { background: #fff8c5; border: 1px solid #eed888; border-radius: 6px;
  padding: 8px 12px; }
.facts { display: flex; flex-wrap: wrap; gap: 10px 28px; margin: 0; }
.facts dt { font-size: 11px; text-transform: uppercase; letter-spacing: .06em;
  color: var(--muted); }
.facts dd { margin: 2px 0 0; }
.badge { display: inline-block; color: #fff; border-radius: 10px; padding: 1px 9px;
  font-size: 11.5px; font-weight: 600; letter-spacing: .03em; }
.graph-box { overflow-x: auto; border: 1px solid var(--line); border-radius: 8px;
  background: #fbfcfd; padding: 6px; }
svg.graph text { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans",
  Arial, sans-serif; }
svg.graph .n-name { font-size: 13px; font-weight: 600; fill: var(--fg); }
svg.graph .n-kind { font-size: 11px; fill: var(--muted); }
svg.graph .n-stat { font-size: 11px; font-weight: 600; }
.legend { display: flex; flex-wrap: wrap; gap: 6px 18px; color: var(--muted);
  font-size: 12px; margin: 8px 0 0; }
.legend i { display: inline-block; width: 11px; height: 11px; border-radius: 3px;
  margin-right: 6px; vertical-align: -1px; }
.legend i.dashed { border: 1.5px dashed var(--skip); background: transparent; }
.failure { margin: 0 0 16px; }
.dataset { margin: 0 0 22px; }
.counts { margin: 0 0 6px; color: var(--muted); }
table { border-collapse: collapse; width: 100%; }
table.expectations { table-layout: fixed; }
table.expectations td { overflow-wrap: anywhere; }
th, td { text-align: left; padding: 7px 10px; border-bottom: 1px solid var(--line);
  vertical-align: middle; }
th { font-size: 12px; color: var(--muted); font-weight: 600; background: var(--soft); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.bad { color: var(--fail); font-weight: 600; }
td.warned { color: #9a6700; }
.constraint { margin-top: 3px; }
.action { display: inline-block; border-radius: 4px; padding: 0 7px; font-size: 12px;
  border: 1px solid var(--line); background: var(--soft); }
.action-warn { color: #7d4e00; border-color: #eed888; background: #fff8c5; }
.action-drop, .action-quarantine { color: #953800; border-color: #ffd8b5; background: #fff1e5; }
.action-fail { color: #a40e26; border-color: #ffcecb; background: #ffebe9; }
.bar { display: flex; width: 100%; max-width: 300px; height: 12px; border-radius: 6px; overflow: hidden;
  background: var(--line); }
.bar .ok { background: var(--ok); } .bar .fail { background: var(--fail); }
.bar .warn { background: var(--warn); }
.bar-text { font-size: 12px; margin-top: 3px; font-variant-numeric: tabular-nums; }
.ok-text { color: var(--ok); } .fail-text { color: var(--fail); }
.warn-text { color: #9a6700; }
.trend { display: inline-flex; align-items: flex-end; gap: 8px; font-size: 12px; }
.flag { font-size: 11px; color: var(--muted); border: 1px solid var(--line);
  border-radius: 4px; padding: 0 5px; }
footer { color: var(--muted); font-size: 12px; border-top: 1px solid var(--line);
  padding-top: 10px; }
"""
