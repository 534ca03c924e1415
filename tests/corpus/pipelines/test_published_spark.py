"""Apache Spark's own declarative pipeline examples: the project ``spark-pipelines init``
writes (made by pyspark's ``init_cli.init`` itself, so nothing of it is copied), and the
examples of the programming guide: tables made in a ``for`` loop over a table read when the
sources load (with temporary views), several append flows into one streaming table in
Python and in SQL, and streaming tables and materialized views reading each other in SQL.
The guide's text is read from the corpus folder (not kept here); its Kafka examples need a
broker: left out."""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from pipeline_corpus import Edit, Pipeline, assert_rows, edited
from pipeline_sources import SOURCES

from headwater.errors import PipelineDefinitionError

SAMPLES_EDIT = Edit(
    "samples.tpch.",
    "{database}.",
    "the sample catalog's TPC-H schema: the test's database",
    count=5,
)
REGIONS = [(0, "AFRICA"), (1, "AMERICA"), (2, "ASIA"), (3, "EUROPE"), (4, "MIDDLE EAST")]
NATIONS = [
    (0, "ALGERIA", 0),
    (1, "ARGENTINA", 1),
    (2, "BRAZIL", 1),
    (8, "INDIA", 2),
    (4, "EGYPT", 4),
    (10, "IRAN", 4),
]
CUSTOMERS = [
    (k, f"Customer#{k:09d}", n, f"1{k}-555-0{k:03d}")
    for k, n in ((1, 0), (2, 1), (3, 2), (4, 8), (5, 4), (6, 10), (7, 2))
]
ORDERS = [
    (
        100 + i,
        c,
        "OFP"[i % 3],
        Decimal(f"{1000 + 37 * i}.{i % 100:02d}"),
        dt.date(1995, 1 + i % 12, 1 + i % 28),
    )
    for i, c in enumerate([1, 1, 2, 3, 3, 3, 4, 5, 6, 6, 2, 4])
]  # customer 7 has no order; EUROPE has no nation


def test_spark_pipelines_init_template(tmp_path, spark):
    from pyspark.pipelines.init_cli import init

    from headwater import pipelines

    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        init("spark_init_example")
    finally:
        os.chdir(cwd)
    project = tmp_path / "spark_init_example"
    for _ in range(2):  # the second update recomputes both views over the same data
        result = pipelines.run(project, spark)
        assert result.ok, result.failed()
        assert_rows(
            [r.asDict() for r in spark.table("example_python_materialized_view").collect()],
            [{"id": i} for i in range(10)],
        )
        assert_rows(
            [r.asDict() for r in spark.table("example_sql_materialized_view").collect()],
            [{"id": i} for i in range(0, 10, 2)],
        )


def tpch(pipeline: Pipeline, regions, nations, customers, orders) -> None:
    pipeline.append(
        "region",
        [(k, n, "") for k, n in regions],
        "r_regionkey bigint, r_name string, r_comment string",
    )
    pipeline.append(
        "nation",
        [(*n, "") for n in nations],
        "n_nationkey bigint, n_name string, n_regionkey bigint, n_comment string",
    )
    pipeline.append(
        "customer",
        [(k, name, nation, phone, Decimal("10.00")) for k, name, nation, phone in customers],
        "c_custkey bigint, c_name string, c_nationkey bigint, c_phone string, c_acctbal decimal(18,2)",
    )
    pipeline.append(
        "orders",
        orders,
        "o_orderkey bigint, o_custkey bigint, o_orderstatus string, o_totalprice decimal(18,2), o_orderdate date",
    )


def test_guide_tables_in_a_for_loop_is_refused_as_spark_refuses_it(tmp_path, spark):
    """``@dp.table`` over a batch read defines a streaming table fed by a batch query, which
    Spark refuses (``INVALID_FLOW_QUERY_TYPE.BATCH_RELATION_FOR_STREAMING_TABLE``) though
    its guide shows it: refused here too, by name, once the sources have loaded (the loop
    reads the region table then) and before anything is written."""
    pipeline = Pipeline.create(tmp_path, spark, "guide_for_loop")
    tpch(pipeline, REGIONS, NATIONS, CUSTOMERS, ORDERS)
    pipeline.source(
        "regions.py", edited(SOURCES["guide_for_loop"].text(), [SAMPLES_EDIT], **pipeline.places())
    )
    with pytest.raises(
        PipelineDefinitionError, match="PIPELINE_BATCH_INTO_STREAMING_TABLE"
    ) as refused:
        pipeline.run()
    assert refused.value.file.endswith("regions.py")
    assert "customer_orders" in str(refused.value)
    assert not pipeline.storage.exists()


CUSTOMER_SCHEMA = "customer_id bigint, name string, state string"


def customers(start: int, n: int, state: str) -> list[tuple]:
    return [(i, f"customer {i}", state) for i in range(start, start + n)]


def run_two_flows(tmp_path, spark, key: str, file: str) -> None:
    pipeline = Pipeline.create(tmp_path, spark, key)
    west, east = customers(0, 5, "CA"), customers(100, 3, "NY")
    pipeline.append("customers_us_west", west, CUSTOMER_SCHEMA)
    pipeline.append("customers_us_east", east, CUSTOMER_SCHEMA)
    pipeline.source(file, SOURCES[key].text())
    result = pipeline.run()
    assert result.ok, result.failed()
    names = ("customer_id", "name", "state")
    assert_rows(
        pipeline.rows("customers_us"), [dict(zip(names, r, strict=True)) for r in west + east]
    )

    # New rows in each source: each flow appends only its new rows.
    more_west, more_east = customers(5, 2, "OR"), customers(103, 4, "NJ")
    pipeline.append("customers_us_west", more_west, CUSTOMER_SCHEMA)
    pipeline.append("customers_us_east", more_east, CUSTOMER_SCHEMA)
    result = pipeline.run()
    assert result.ok, result.failed()
    everything = west + east + more_west + more_east
    assert_rows(
        pipeline.rows("customers_us"), [dict(zip(names, r, strict=True)) for r in everything]
    )


def test_guide_append_flows_python(tmp_path, spark):
    run_two_flows(tmp_path, spark, "guide_flows_python", "customers_us.py")


def test_guide_append_flows_sql(tmp_path, spark):
    run_two_flows(tmp_path, spark, "guide_flows_sql", "customers_us.sql")


def test_guide_querying_tables_sql(tmp_path, spark):
    pipeline = Pipeline.create(tmp_path, spark, "guide_query_sql")
    zone = ZoneInfo(spark.conf.get("spark.sql.session.timeZone"))
    people = [(1, "CA"), (2, "NY"), (3, "CA"), (4, "TX")]
    pipeline.append("customers_source", people, "customer_id bigint, state string")
    base = 1_574_143_200  # order_datetime is epoch seconds as text, as in the retail sample

    def orders(start: int, n: int) -> list[tuple]:
        return [
            (f"SO{i}", 1 + i % 5, str(base + 3600 * 7 * i)) for i in range(start, start + n)
        ]  # customer 5: none

    first = orders(0, 12)
    schema = "order_number string, customer_id bigint, order_datetime string"
    pipeline.append("orders_source", first, schema)
    pipeline.source("orders.sql", SOURCES["guide_query_sql"].text())

    def expected(rows):
        state = dict(people)
        joined = [
            {
                "customer_id": c,
                "order_number": o,
                "state": state[c],
                "order_date": dt.datetime.fromtimestamp(int(t), zone).date(),
            }
            for o, c, t in rows
            if c in state
        ]
        daily: dict = {}
        for r in joined:
            daily[(r["state"], r["order_date"])] = daily.get((r["state"], r["order_date"]), 0) + 1
        return joined, [
            {"state": s, "order_date": d, "order_count": n} for (s, d), n in daily.items()
        ]

    for update in (first, orders(12, 9)):
        if update is not first:
            pipeline.append("orders_source", update, schema)
        result = pipeline.run()
        assert result.ok, result.failed()
        seen = first if update is first else first + update
        joined, daily = expected(seen)
        assert_rows(
            pipeline.rows("orders"),
            [
                dict(zip(("order_number", "customer_id", "order_datetime"), r, strict=True))
                for r in seen
            ],
        )
        assert_rows(pipeline.rows("customer_orders"), joined)
        assert_rows(pipeline.rows("daily_orders_by_state"), daily)
