"""Two exercises of Microsoft Learn's Azure Databricks course (MIT licence), run on the
course's own data files: "Build a data pipeline" (SQL: an empty ``CREATE OR REFRESH
STREAMING TABLE`` fed by ``CREATE FLOW ... INSERT INTO ... BY NAME`` from ``STREAM
read_files``, a materialized view with ``ON VIOLATION FAIL UPDATE`` and a ``GROUP BY``
view over it; the three code blocks typed one below the other, as the exercise says) and
"End-to-end streaming pipeline" (``dlt``: a streaming table over a Delta folder and a
``dlt.read`` of it with derived columns and ``current_timestamp()``). A second update
brings a file whose region is empty, which fails ``valid_country_region``."""

from __future__ import annotations

import csv
import datetime as dt
import io

from pipeline_corpus import PRE_ANSI_RUNTIME, Edit, Pipeline, assert_rows, edited, project
from pipeline_sources import SOURCES

COVID_COLUMNS = ("Last_Update", "Country_Region", "Confirmed", "Deaths", "Recovered")


def number(text: str) -> int | None:
    return None if text == "" else int(text)


def parsed(text: str) -> dt.date | None:
    month, day, year = text.split("/")
    return dt.date(int(year), int(month), int(day)) if len(month) == len(day) == 2 else None


def covid_oracle(rows: list[dict]) -> dict[str, list[dict]]:
    bronze = [
        {"Last_Update": r["Last_Update"], "Country_Region": r["Country_Region"] or None}
        | {c: number(r[c]) for c in ("Confirmed", "Deaths", "Recovered")}
        for r in rows
    ]
    silver = [
        {
            # TO_DATE('2/7/2021', 'MM/dd/yyyy'): 'MM' wants two digits; without ANSI mode (the
            # runtime the exercise was written for: PRE_ANSI_RUNTIME) the date is NULL.
            "Report_Date": parsed(r["Last_Update"]),
            **{c: r[c] for c in ("Country_Region", "Confirmed", "Deaths", "Recovered")},
        }
        for r in bronze
    ]
    gold: dict = {}
    for r in silver:
        if r["Country_Region"] != "US":
            continue
        totals = gold.setdefault(r["Report_Date"], [None, None, None])
        for i, c in enumerate(("Confirmed", "Deaths", "Recovered")):
            if r[c] is not None:
                totals[i] = (totals[i] or 0) + r[c]
    return {
        "covid_bronze": bronze,
        "covid_silver": silver,
        "covid_gold": [
            {"Report_Date": d, "Total_Confirmed": a, "Total_Deaths": b, "Total_Recovered": c}
            for d, (a, b, c) in gold.items()
        ],
    }


def test_mslearn_covid_pipeline(tmp_path, spark):
    pipeline = Pipeline.create(tmp_path, spark, "mslearn_covid")
    pipeline.spec(PRE_ANSI_RUNTIME)
    volume = Edit(
        "/Volumes/<catalog name>/default/covid_data_volume/",
        "{landing}/covid_data_volume/",
        "the exercise's volume (the reader puts their catalog's name): the landing folder",
    )
    pipeline.source(
        "covid.sql", edited(SOURCES["mslearn_covid"].text(), [volume], **pipeline.places())
    )
    data = SOURCES["mslearn_covid_data"].text()
    pipeline.land("covid_data_volume/covid_data.csv", data)
    rows = list(csv.DictReader(io.StringIO(data)))
    result = pipeline.run()
    assert result.ok, result.failed()
    for table, expected in covid_oracle(rows).items():
        assert_rows(pipeline.rows(table), expected)

    header = data.splitlines()[0]
    late = rows[0] | {"Country_Region": "", "Last_Update": "2/20/2021"}
    pipeline.land(
        "covid_data_volume/late.csv",
        header + "\n" + ",".join(late[c] for c in header.split(",")) + "\n",
    )
    result = pipeline.run()
    assert not result.ok
    assert [f.name.split(".")[-1] for f in result.failed()] == ["covid_silver"]
    assert "valid_country_region" in str(result.failed()[0].error)
    after = covid_oracle([*rows, late])
    assert_rows(pipeline.rows("covid_bronze"), after["covid_bronze"])
    before = covid_oracle(rows)
    for table in ("covid_silver", "covid_gold"):
        assert_rows(pipeline.rows(table), before[table])


def test_mslearn_iot_pipeline(tmp_path, spark):
    pipeline = Pipeline.create(tmp_path, spark, "mslearn_iot")
    delta = Edit(
        "/tmp/delta/iot_data",
        "{landing}/iot_data",
        "the exercise's Delta folder: the landing folder",
    )
    pipeline.source("iot.py", edited(SOURCES["mslearn_iot"].text(), [delta], **pipeline.places()))
    text = SOURCES["mslearn_iot_data"].text()
    # The exercise's notebook streams the course's CSV into that Delta folder with this schema.
    schema = "device_id string, timestamp timestamp, temperature double, humidity double"
    pipeline.land("device_stream/device_data.csv", text)
    spark.read.schema(schema).option("header", "true").csv(
        str(pipeline.landing / "device_stream")
    ).write.format("delta").save(str(pipeline.landing / "iot_data"))
    rows = [  # the file ends with two rows of empty fields: rows of NULLs
        {
            "device_id": r["device_id"] or None,
            "timestamp": dt.datetime.fromisoformat(r["timestamp"]) if r["timestamp"] else None,
            "temperature": float(r["temperature"]) if r["temperature"] else None,
            "humidity": float(r["humidity"]) if r["humidity"] else None,
        }
        for r in csv.DictReader(io.StringIO(text))
    ]
    before = dt.datetime.now()
    result = pipeline.run()
    after = dt.datetime.now()
    assert result.ok, result.failed()
    assert_rows(pipeline.rows("raw_iot_data"), rows)
    transformed = pipeline.rows("transformed_iot_data")
    derived = [
        r
        | {
            "temperature_fahrenheit": None
            if r["temperature"] is None
            else r["temperature"] * 9 / 5 + 32,
            "humidity_percentage": None if r["humidity"] is None else r["humidity"] * 100,
        }
        for r in rows
    ]
    assert_rows(
        project(transformed, [*rows[0], "temperature_fahrenheit", "humidity_percentage"]), derived
    )
    assert all(before - dt.timedelta(seconds=1) <= r["event_time"] <= after for r in transformed)
