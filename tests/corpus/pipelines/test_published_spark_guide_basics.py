"""The first examples of Apache Spark's declarative pipelines programming guide
(``docs/declarative-pipelines-programming-guide.md`` in apache/spark at
166e97041fb741b05fc02028158d4c61399d61f2, Apache License 2.0, read 2026-11-29): a
materialized view, a temporary view and a streaming table in Python and in SQL, a
materialized view over a batch JSON read, the streaming table of "Key Concepts: Flows", the
example spec file, and the Python "Querying Tables" example, which does not parse. Their
text is read from the corpus folder, as every case's but pyspark's docstrings; the Kafka
examples need a broker and are left out.

The guide reads the sample catalog's ``samples.nyctaxi.trips``: the test makes a ``trips``
table in its own database with the sample's columns (NULLs and a repeated row among them),
and the only edit is that name (the README's "the names of catalogs")."""

from __future__ import annotations

import datetime as dt

import pytest
from pipeline_corpus import Edit, Pipeline, assert_rows, edited, json_lines
from pipeline_sources import SOURCES

from headwater.errors import PipelineDefinitionError

SAMPLES = "the sample catalog's nyctaxi schema: the test's database"
TRIPS_SCHEMA = (
    "tpep_pickup_datetime timestamp, tpep_dropoff_datetime timestamp, trip_distance double, "
    "fare_amount double, pickup_zip int, dropoff_zip int"
)
TRIPS_COLUMNS = [c.split()[0] for c in TRIPS_SCHEMA.split(", ")]


def trips(start: int, n: int) -> list[tuple]:
    """Trips as the sample has them; every fifth without a drop-off zip, every seventh
    without a fare, the first one twice."""
    base = dt.datetime(2016, 2, 13, 21, 47, 53)
    rows = [
        (
            base + dt.timedelta(minutes=17 * i),
            base + dt.timedelta(minutes=17 * i + 3 + i % 11),
            round(0.4 + 1.3 * i, 2),
            None if i % 7 == 3 else float(5 + i % 9),
            10000 + i % 4,
            None if i % 5 == 2 else 10100 + i % 6,
        )
        for i in range(start, start + n)
    ]
    return rows + rows[:1] if start == 0 else rows


def as_dicts(rows: list[tuple]) -> list[dict]:
    return [dict(zip(TRIPS_COLUMNS, r, strict=True)) for r in rows]


def guide_pipeline(tmp_path, spark, key: str, file: str, count: int = 1) -> Pipeline:
    pipeline = Pipeline.create(tmp_path, spark, key)
    samples = Edit("samples.nyctaxi.", "{database}.", SAMPLES, count=count)
    pipeline.source(file, edited(SOURCES[key].text(), [samples], **pipeline.places()))
    return pipeline


def updates_over_trips(pipeline: Pipeline, tables: list[str]) -> None:
    """Two updates, new trips appended before each: every table holds every trip once (the
    repeated row twice)."""
    seen: list[tuple] = []
    for batch in (trips(0, 12), trips(12, 5)):
        pipeline.append("trips", batch, TRIPS_SCHEMA)
        seen += batch
        result = pipeline.run()
        assert result.ok, result.failed()
        for table in tables:
            assert_rows(pipeline.rows(table), as_dicts(seen))


def test_guide_materialized_view_python(tmp_path, spark):
    """``@dp.materialized_view`` by the function's name and with ``name="trips_mv"``."""
    pipeline = guide_pipeline(tmp_path, spark, "guide_mv_python", "mv.py", count=2)
    updates_over_trips(pipeline, ["basic_mv", "trips_mv"])


def test_guide_materialized_view_sql(tmp_path, spark):
    pipeline = guide_pipeline(tmp_path, spark, "guide_mv_sql", "mv.sql")
    updates_over_trips(pipeline, ["basic_mv"])


def test_guide_example_spec_file(tmp_path, spark):
    """The guide's example ``spark-pipeline.yml`` (a glob of ``transformations/**``, a
    ``file://`` storage, a catalog, a database, a Spark setting) runs the guide's
    materialized views; the session's own value of the setting is back after the run."""
    pipeline = guide_pipeline(tmp_path, spark, "guide_mv_python", "mv.py", count=2)
    edits = [
        Edit("/absolute/path/to/storage/dir", "{storage}", "the storage: the test's folder"),
        Edit("my_catalog", "spark_catalog", "the catalog's name: the session's catalog"),
        Edit("my_db", "{database}", "the database's name: the test's database"),
    ]
    spec = edited(SOURCES["guide_spec_yaml"].text(), edits, **pipeline.places())
    (pipeline.root / "spark-pipeline.yml").write_text(spec)
    before = spark.conf.get("spark.sql.shuffle.partitions")
    updates_over_trips(pipeline, ["basic_mv", "trips_mv"])
    assert spark.conf.get("spark.sql.shuffle.partitions") == before


def test_guide_querying_tables_python_is_refused_as_python_refuses_it(tmp_path, spark):
    """The guide's Python "Querying Tables" example has a parenthesis too many: the update
    is refused before anything runs, naming the file and the line Python's own compiler
    names, and no table is made."""
    pipeline = Pipeline.create(tmp_path, spark, "guide_query_python")
    text = SOURCES["guide_query_python"].text()
    path = pipeline.source("orders.py", text)
    with pytest.raises(SyntaxError) as python:
        compile(text, str(path), "exec")
    with pytest.raises(PipelineDefinitionError) as refused:
        pipeline.run()
    message = str(refused.value)
    assert "PIPELINE_PYTHON_SYNTAX_ERROR" in message, message
    assert f"{path}:{python.value.lineno}" in message, message
    assert not spark.catalog.databaseExists(pipeline.database) or not spark.catalog.listTables(
        pipeline.database
    )


def test_guide_streaming_table_python(tmp_path, spark):
    """``@dp.table`` over ``spark.readStream.table``: each update appends only the new
    trips."""
    pipeline = guide_pipeline(tmp_path, spark, "guide_st_python", "st.py")
    updates_over_trips(pipeline, ["basic_st"])


def test_guide_streaming_table_sql(tmp_path, spark):
    """``FROM STREAM samples.nyctaxi.trips`` (no parentheses, a table outside the
    pipeline): each update appends only the new trips."""
    pipeline = guide_pipeline(tmp_path, spark, "guide_st_sql", "st.sql")
    updates_over_trips(pipeline, ["basic_st"])


@pytest.mark.parametrize(
    ("key", "file"), [("guide_tv_python", "tv.py"), ("guide_tv_sql", "tv.sql")]
)
def test_guide_temporary_view_is_not_stored(tmp_path, spark, key, file):
    """A pipeline of one temporary view runs and stores nothing: the view is not in the
    catalog after the update."""
    pipeline = guide_pipeline(tmp_path, spark, key, file)
    pipeline.append("trips", trips(0, 4), TRIPS_SCHEMA)
    result = pipeline.run()
    assert result.ok, result.failed()
    assert not spark.catalog.tableExists(f"{pipeline.database}.basic_tv")
    assert not spark.catalog.tableExists("basic_tv")


def test_guide_flow_concept_sql(tmp_path, spark):
    """ "Key Concepts: Flows": ``CREATE STREAMING TABLE target_table AS SELECT * FROM STREAM
    source_table`` over a table of the pipeline's database, two updates."""
    pipeline = Pipeline.create(tmp_path, spark, "guide_flow_concept_sql")
    pipeline.source("target.sql", SOURCES["guide_flow_concept_sql"].text())
    seen: list[tuple] = []
    for batch in ([(1, "a"), (2, None)], [(3, "c"), (1, "a")]):
        pipeline.append("source_table", batch, "id bigint, name string")
        seen += batch
        result = pipeline.run()
        assert result.ok, result.failed()
        assert_rows(pipeline.rows("target_table"), [{"id": i, "name": n} for i, n in seen])


ORDER_FILES = (
    [
        {
            "customer_id": 12,
            "customer_name": "Ana",
            "number_of_line_items": 2,
            "order_datetime": "1574143200",
            "order_number": 1,
            "ordered_products": [
                {"curr": "USD", "id": "p1", "name": "kettle", "price": 45, "qty": 1},
                {"curr": "USD", "id": "p2", "name": "mug", "price": 7, "qty": 3},
            ],
            "clicked_items": [["p1", "12"], ["p2", "3"]],
        },
        {
            "customer_id": 13,
            "customer_name": None,
            "number_of_line_items": 0,
            "order_datetime": "1574150400",
            "order_number": 2,
            "ordered_products": [],
        },
    ],
    [
        {
            "customer_id": 12,
            "customer_name": "Ana",
            "number_of_line_items": 1,
            "order_datetime": "1574236800",
            "order_number": 3,
            "ordered_products": [
                {"curr": "EUR", "id": "p3", "name": "pan", "price": 30, "qty": 2, "unit": "pcs"}
            ],
            "promo_info": [{"promo_id": "X1", "promo_qty": 1}],
        },
    ],
)
PRODUCT_FIELDS = ("curr", "id", "name", "price", "qty")


def expected_orders(files: list[list[dict]], malformed: int) -> list[dict]:
    """Spark's JSON reader over the files: every field any record has, a missing one NULL,
    the products' struct with every key any product has, and ``_corrupt_record`` holding a
    line that does not parse (all else NULL)."""
    records = [r for f in files for r in f]
    product_keys = sorted({k for r in records for p in r["ordered_products"] for k in p})
    top = sorted({k for r in records for k in r} | {"_corrupt_record"})
    out = []
    for r in records:
        row = {k: r.get(k) for k in top}
        row["ordered_products"] = [
            {k: p.get(k) for k in product_keys} for p in r["ordered_products"]
        ]
        out.append(row)
    out += [{k: ("{broken" if k == "_corrupt_record" else None) for k in top}] * malformed
    return out


def test_guide_batch_json_materialized_view(tmp_path, spark):
    """``spark.read.format("json").load(folder)`` in a materialized view, recomputed at each
    update: a line that does not parse lands in ``_corrupt_record``, a field only the newer
    file has becomes a column (NULL in the older rows), nested products keep every key."""
    pipeline = Pipeline.create(tmp_path, spark, "guide_batch_python")
    path = Edit(
        "/datasets/retail-org/sales_orders",
        "{landing}/sales_orders",
        "the sample dataset's folder: the test's landing folder",
    )
    pipeline.source(
        "batch.py", edited(SOURCES["guide_batch_python"].text(), [path], **pipeline.places())
    )
    pipeline.land("sales_orders/part-0.json", json_lines(ORDER_FILES[0]) + "{broken\n")
    result = pipeline.run()
    assert result.ok, result.failed()
    assert_rows(pipeline.rows("batch_mv"), expected_orders([ORDER_FILES[0]], 1))

    pipeline.land("sales_orders/part-1.json", json_lines(ORDER_FILES[1]))
    result = pipeline.run()
    assert result.ok, result.failed()
    assert_rows(pipeline.rows("batch_mv"), expected_orders(list(ORDER_FILES), 1))
