"""The event log's format: records written as the ``details`` JSON read back unchanged,
rows older versions wrote (keys missing, text not JSON) still read, and the one spelling
of where the log lives."""

from __future__ import annotations

import json

from headwater.event_log_format import (
    DataQuality,
    ExpectationMetrics,
    FlowProgress,
    details_json,
    location,
    parse_details,
)
from headwater.pipelines.layout.folders import Layout


def test_flow_progress_round_trips_through_the_details_column():
    quality = DataQuality(
        dropped_records=3,
        quarantined_records=1,
        expectations=(
            ExpectationMetrics("valid_id", "db.clean", "drop", 97, 3),
            ExpectationMetrics("has_region", "db.silver", "warn", 90, 7),
        ),
    )
    progress = FlowProgress("COMPLETED", {"num_output_rows": 97}, quality, 1.5)
    text = details_json("flow_progress", progress.to_json())
    # the shape users' queries read: details:flow_progress.metrics.num_output_rows
    assert json.loads(text)["flow_progress"]["metrics"]["num_output_rows"] == 97
    assert json.loads(text)["flow_progress"]["data_quality"]["expectations"][1] == {
        "name": "has_region",
        "dataset": "db.silver",
        "action": "warn",
        "passed_records": 90,
        "failed_records": 7,
    }
    back = FlowProgress.from_json(parse_details("flow_progress", text))
    assert back == progress
    assert back.metric("num_output_rows") == 97 and back.metric("backlog_files") is None
    assert back.final


def test_lenient_reading_of_partial_or_foreign_details():
    assert parse_details("flow_progress", "not json") == {}
    assert parse_details("flow_progress", {"status": "RUNNING"}) == {"status": "RUNNING"}
    partial = FlowProgress.from_json({"status": "RUNNING", "data_quality": {"expectations": [{}]}})
    assert partial.metrics is None
    assert partial.data_quality == DataQuality(0, 0, (ExpectationMetrics("", "", "warn"),))
    assert not partial.final
    kept = FlowProgress.from_json({"status": "QUEUED", "future_key": 1})
    assert kept.to_json() == {"future_key": 1, "status": "QUEUED"}


def test_the_log_lives_under_the_storage_folder_spelt_once():
    assert location("/p/storage") == Layout("/p/storage").event_log
    assert location("/p/storage").endswith("/system/events")


def test_the_sql_progress_type_names_the_keys_the_writer_writes():
    """``pipeline_quality`` reads ``flow_progress`` back through FLOW_PROGRESS_DDL: every
    key it names must be one FlowProgress.to_json writes (a renamed key would read NULL)."""
    import re

    from headwater.event_log_format import FLOW_PROGRESS_DDL

    quality = DataQuality(1, 2, (ExpectationMetrics("r", "d", "warn", 3, 4),))
    written = FlowProgress("COMPLETED", data_quality=quality).to_json()
    keys: set[str] = set()

    def collect(value: object) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                keys.add(k)
                collect(v)
        elif isinstance(value, list):
            for v in value:
                collect(v)

    collect(written)
    named = set(re.findall(r"(\w+):", FLOW_PROGRESS_DDL))
    assert named and named <= keys, named - keys
