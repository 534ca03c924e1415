"""The CDC pipeline of the known platform's demos, in SQL: ``STREAM read_files`` into
``customers_cdc``, a streaming table with three ``DROP ROW`` constraints (one on
``_rescued_data``), and two ``CREATE FLOW ... AS AUTO CDC INTO`` flows from it, SCD type 1
into ``customers`` and SCD type 2 into ``SCD2_customers``, with deletes and ``COLUMNS *
EXCEPT``. (Its Python twin lists the landing folder with ``dbutils.fs.ls``, which only the
known platform has: left out.)

The events have the demo generator's columns and formats (``operation_date`` as
``MM-dd-yyyy HH:mm:ss`` text, sequenced as text), arrive out of order within and across
two updates, and include deletes, late updates older than a delete, an identical repeat,
rows without an id or an operation (``operation IN (...)`` is NULL then: kept, and applied
as an upsert), and in the second update a record whose ``Email`` differs from the column
``email`` by case only, which Auto Loader rescues and the constraint drops."""

from __future__ import annotations

from pipeline_cdc_oracle import (
    CUSTOMER_COLUMNS,
    customer_event,
    customer_events_first,
    customer_events_second,
    scd1,
    scd2,
)
from pipeline_corpus import (
    Edit,
    Pipeline,
    assert_rows,
    edited,
    expectation_counts,
    json_lines,
    project,
    rule_counts,
)
from pipeline_sources import SOURCES

PATH_EDIT = Edit(
    '"/Volumes/${catalog}/${schema}/raw_data/customers"',
    '"{landing}/customers"',
    "the demo's volume: the landing folder",
)
TARGET = ("address", "email", "firstname", "id", "lastname")


def kept(events: list[dict]) -> list[dict]:
    """What the cleaned table keeps: an id, an operation that is not another word (NULL
    passes), nothing rescued."""
    return [
        e
        for e in events
        if e["id"] is not None
        and (e["operation"] is None or e["operation"] in ("APPEND", "DELETE", "UPDATE"))
        and "Email" not in e
    ]


def targets(events: list[dict]) -> dict[str, list[dict]]:
    clean = kept(events)

    def seq(e):
        return e["operation_date"]

    def delete(e):
        return e["operation"] == "DELETE"

    return {
        "customers": scd1(clean, ["id"], seq, delete, TARGET),
        "SCD2_customers": scd2(clean, ["id"], seq, delete, TARGET),
    }


def quality(events: list[dict]) -> dict[str, tuple[int, int]]:
    return rule_counts(
        events,
        {
            "valid_id": lambda e: e["id"] is None,
            "valid_operation": lambda e: e["operation"] not in (None, "APPEND", "DELETE", "UPDATE"),
            "valid_json_schema": lambda e: "Email" in e,
        },
    )


def test_cdc_demo_sql(tmp_path, spark):
    pipeline = Pipeline.create(tmp_path, spark, "cdc_demo_sql")
    # The demo's settings (read as ${catalog} and ${schema}) name its catalog and schema.
    pipeline.spec({"catalog": "main__build", "schema": "dbdemos_sdp_cdc"})
    pipeline.source(
        "01-sql_cdc_pipeline.sql",
        edited(SOURCES["cdc_sql"].text(), [PATH_EDIT], **pipeline.places()),
    )
    first = customer_events_first() + [customer_event("c10", "MERGE", "03-09-2022 07:00:00", 112)]
    pipeline.land("customers/part-0.json", json_lines(first))

    result = pipeline.run()
    assert result.ok, result.failed()
    bronze = [{**dict.fromkeys(CUSTOMER_COLUMNS), **e, "_rescued_data": None} for e in first]
    assert_rows(pipeline.rows("customers_cdc"), bronze)
    assert_rows(pipeline.rows("customers_cdc_clean"), kept(bronze))
    for table, rows in targets(first).items():
        assert_rows(pipeline.rows(table), rows)
    assert expectation_counts(
        pipeline.quality(), "customers_cdc_clean", result.update_id
    ) == quality(first)

    rescued = customer_event("c11", "UPDATE", "03-22-2022 07:00:00", 301)
    rescued["Email"] = rescued.pop("email")
    second = [*customer_events_second(), rescued]
    pipeline.land("customers/part-1.json", json_lines(second))
    result = pipeline.run()
    assert result.ok, result.failed()
    raw = pipeline.rows("customers_cdc")
    assert [r["id"] for r in raw if r["_rescued_data"] is not None] == ["c11"]
    assert_rows(project(raw, CUSTOMER_COLUMNS), project([*first, *second], CUSTOMER_COLUMNS))
    for table, rows in targets(first + second).items():
        assert_rows(pipeline.rows(table), rows)
    assert expectation_counts(
        pipeline.quality(), "customers_cdc_clean", result.update_id
    ) == quality(second)
