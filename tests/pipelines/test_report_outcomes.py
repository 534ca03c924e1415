"""What the report says a record's fate was: rows that broke only a ``warn`` rule were
written (warned, kept), not failed; an AUTO CDC flow shows the rows it upserted and
deleted."""

from __future__ import annotations

import re

from headwater.pipelines.report.model import build
from headwater.pipelines.report.page import render
from tests.pipelines.test_report import Log, healthy, text_of

CDC_PIPELINE = [
    (
        "customers_cdc",
        {
            "output_dataset": "db.customers",
            "input_datasets": ["db.changes"],
            "dataset_type": "STREAMING_TABLE",
            "flow_type": "AUTO_CDC",
            "streaming": True,
            "expectations": [],
        },
    )
]


def test_rows_that_broke_only_a_warn_rule_show_as_kept_not_failed():
    log = Log()
    healthy(log, "u1", negative=0)  # 40 rows without region (warn), 10 dropped
    page = render(log.rows)
    text = text_of(page)
    row = re.search(r"has_region</strong>.*?</tr>", page, re.S)
    assert row is not None
    assert "40 warned (kept)" in text_of(row.group(0))
    assert "40 failed" not in text and "fail-text" not in row.group(0)
    updates = page.split("Recent updates", 1)[1]
    assert "Records warned (kept)" in updates
    assert '"num bad">10<' in updates and '"num warned">40<' in updates


def test_an_auto_cdc_flow_shows_the_rows_it_upserted_and_deleted():
    log = Log()
    metrics = {"num_output_rows": 7, "num_upserted_rows": 5, "num_deleted_rows": 2}
    log.update(
        "u1",
        {"customers_cdc": {"status": "COMPLETED", "metrics": metrics}},
        definitions=CDC_PIPELINE,
    )
    latest = build(log.rows).latest
    assert latest is not None
    (flow,) = latest.flows
    assert (flow.upserted, flow.deleted) == (5, 2)
    assert "5 upserted, 2 deleted" in text_of(render(log.rows))


def test_a_materialized_view_shows_how_it_was_refreshed_and_why():
    log = Log()
    gold = [("gold", {"output_dataset": "db.gold", "input_datasets": ["db.silver"],
                      "dataset_type": "MATERIALIZED_VIEW", "flow_type": "COMPLETE",
                      "streaming": False, "expectations": []})]  # fmt: skip
    log.update("u1", {"gold": {"status": "COMPLETED", "metrics": {"num_output_rows": 0}}},
               definitions=gold)  # fmt: skip
    reason = "no input changed since the last refresh"
    log.add("u1", "planning_information", {"chosen": "NO_OP", "reason": reason}, flow="gold")
    latest = build(log.rows).latest
    assert latest is not None
    (flow,) = latest.flows
    assert (flow.refresh, flow.refresh_reason) == ("NO_OP", reason)
    page = render(log.rows)
    assert "unchanged" in text_of(page)
    assert f"refreshed by NO_OP: {reason}" in page
