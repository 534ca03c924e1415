"""The retail CDC example of the known platform's example notebooks: Auto Loader into
``customer_bronze``, a cleaned view with expectations (drop, warn, drop), and changes applied
into ``customer_silver`` (SCD type 1) with deletes, sequenced by ``operation_date``. In
Python with ``dlt.create_target_table`` and ``dlt.apply_changes`` and the landing folder
from ``spark.conf.get("source")``; in SQL with ``SET``, ``read_files``, a ``TEMPORARY
STREAMING TABLE`` and ``APPLY CHANGES INTO``.

The data has the generator notebook's columns and formats (``operation_date`` as
``MM-dd-yyyy HH:mm:ss`` text, so events are sequenced as strings: the oracle orders them
so too), with events out of order within a file and across updates, deletes, updates of
deleted keys older than the delete, repeated keys, and rows without an id, an address or
an operation."""

from __future__ import annotations

from pipeline_cdc_oracle import (
    CUSTOMER_COLUMNS,
    customer_events_first,
    customer_events_second,
    scd1,
)
from pipeline_corpus import Pipeline, assert_rows, expectation_counts, json_lines, rule_counts
from pipeline_sources import SOURCES

SILVER = ("address", "email", "id", "firstname", "lastname")


def silver(events: list[dict]) -> list[dict]:
    """SCD type 1 of the events that pass the view's drop rules (an id, an operation),
    sequenced by ``operation_date`` as text."""
    kept = [e for e in events if e["id"] is not None and e["operation"] is not None]
    return scd1(
        kept, ["id"], lambda e: e["operation_date"], lambda e: e["operation"] == "DELETE", SILVER
    )


def quality(events: list[dict]) -> dict[str, tuple[int, int]]:
    return rule_counts(
        events,
        {
            "valid_id": lambda e: e["id"] is None,
            "valid_address": lambda e: e["address"] is None,
            "valid_operation": lambda e: e["operation"] is None,
        },
    )


def run_two_updates(pipeline: Pipeline, view: str) -> list[str]:
    """Two updates, each checked against the oracle; their ids."""
    first, second = customer_events_first(), customer_events_second()
    pipeline.land("customers/part-0.json", json_lines(first[:14]))
    pipeline.land("customers/part-1.json", json_lines(first[14:]))
    result = pipeline.run()
    assert result.ok, result.failed()
    updates = [result.update_id]
    assert_rows(
        pipeline.rows("customer_bronze"),
        [{**dict.fromkeys(CUSTOMER_COLUMNS), **e, "_rescued_data": None} for e in first],
    )
    assert_rows(pipeline.rows("customer_silver"), silver(first))
    assert expectation_counts(pipeline.quality(), view, result.update_id) == quality(first)

    pipeline.land("customers/part-2.json", json_lines(second))
    result = pipeline.run()
    assert result.ok, result.failed()
    assert pipeline.spark.table(f"{pipeline.database}.customer_bronze").count() == len(first) + len(
        second
    )
    assert_rows(pipeline.rows("customer_silver"), silver(first + second))
    assert expectation_counts(pipeline.quality(), view, result.update_id) == quality(second)
    return [*updates, result.update_id]


def test_retail_cdc_python(tmp_path, spark):
    pipeline = Pipeline.create(tmp_path, spark, "retail_cdc_python")
    # The pipeline's setting `source` (read with spark.conf.get) is the landing folder.
    pipeline.spec({"source": str(pipeline.landing)})
    pipeline.source("2-Retail_DLT_CDC_Python.py", SOURCES["retail_cdc_python"].text())
    run_two_updates(pipeline, "customer_bronze_clean_v")


def test_retail_cdc_sql(tmp_path, spark):
    pipeline = Pipeline.create(tmp_path, spark, "retail_cdc_sql")
    pipeline.spec({"source": str(pipeline.landing)})
    pipeline.source("2-Retail_DLT_CDC_sql.sql", SOURCES["retail_cdc_sql"].text())
    run_two_updates(pipeline, "customer_bronze_clean_v")
