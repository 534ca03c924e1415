"""Expectations as users declare them (``@dp.expect*`` / ``@dlt.expect*``, SQL
``CONSTRAINT ... EXPECT``): warn keeps and counts, drop removes and counts, quarantine
diverts rows with the rules they broke, fail stops the flow atomically. Metrics are checked
against counts computed here from the input rows."""

from __future__ import annotations

import json

import pytest
from pipeline_rows import RAW_TABLE

from headwater.errors import ExpectationViolationError, PipelineDefinitionError
from headwater.pipelines.report.page import write_report

# A whole file of pipeline updates (minutes in CI): with the crash and benchmark files, it
# runs in one of the three parts scripts/test.sh takes in turn, a part per commit.
pytestmark = pytest.mark.slow


def mixed(start: int, n: int) -> list[dict]:
    """Orders where every 3rd has a negative amount, every 4th no region, every 5th no id."""
    rows = []
    for i in range(start, start + n):
        rows.append(
            {
                "id": None if i % 5 == 0 else i,
                "amount": -i if i % 3 == 0 else i * 10,
                "region": None if i % 4 == 0 else "eu",
            }
        )
    return rows


def quality(result, flow: str) -> dict:
    """The data_quality of ``flow``'s last flow_progress event of ``result``."""
    found = [
        e.details for e in result.events if e.event_type == "flow_progress" and e.flow_name == flow
    ]
    return found[-1]["data_quality"]


def by_name(q: dict) -> dict:
    return {e["name"]: (e["passed_records"], e["failed_records"]) for e in q["expectations"]}


SILVER = """
from pyspark import pipelines as dp


@dp.table
@dp.expect("has_region", "region IS NOT NULL")
@dp.expect_or_drop("positive", "amount > 0")
@dp.expect_or_quarantine("has_id", "id IS NOT NULL")
def silver():
    return spark.readStream.table("raw")
"""


def test_warn_drop_and_quarantine_on_a_streaming_table_count_every_rule(project):
    project.source("raw.py", RAW_TABLE)
    project.source("silver.py", SILVER)
    rows = mixed(1, 30)
    project.land("1.json", rows)
    result = project.run()
    assert result.ok, result.failed()

    no_id = [r for r in rows if r["id"] is None]
    negative = [r for r in rows if r["amount"] <= 0]
    no_region = [r for r in rows if r["region"] is None]
    kept = [r for r in rows if r["id"] is not None and r["amount"] > 0]
    q = quality(result, "silver")
    assert by_name(q) == {
        "has_region": (30 - len(no_region), len(no_region)),
        "positive": (30 - len(negative), len(negative)),
        "has_id": (30 - len(no_id), len(no_id)),
    }
    assert q["dropped_records"] == len([r for r in negative if r["id"] is not None])
    assert q["quarantined_records"] == len(no_id)
    assert sorted(r[0] for r in project.rows("silver")) == sorted(r["id"] for r in kept)

    quarantined = project.spark.table(f"{project.database}.silver_quarantine")
    assert quarantined.count() == len(no_id)
    broken = {r.amount: sorted(r._failed_expectations) for r in quarantined.collect()}
    for r in no_id:  # a row breaking several rules carries each of their names
        names = ["has_id"] + (["positive"] if r["amount"] <= 0 else [])
        names += ["has_region"] if r["region"] is None else []
        assert broken[r["amount"]] == sorted(names)

    project.land("2.json", mixed(31, 10))  # the next update counts only its new rows
    second = project.run()
    assert by_name(quality(second, "silver"))["has_id"] == (8, 2)
    assert project.spark.table(f"{project.database}.silver_quarantine").count() == len(no_id) + 2


def test_dlt_style_decorators_above_or_below_the_table_and_column_constraints(project):
    project.source("raw.py", RAW_TABLE)
    project.source(
        "silver.py",
        """
        import dlt
        from pyspark.sql import functions as F


        @dlt.expect_all_or_drop({"positive": "amount > 0", "has_id": F.col("id").isNotNull()})
        @dlt.table
        @dlt.expect("small", "amount < 200")
        def silver():
            return dlt.read_stream("raw")
        """,
    )
    rows = mixed(1, 30)
    project.land("1.json", rows)
    result = project.run()
    assert result.ok, result.failed()
    kept = [r for r in rows if r["id"] is not None and r["amount"] > 0]
    assert project.count("silver") == len(kept)
    assert [e["name"] for e in quality(result, "silver")["expectations"]] == [
        "positive",
        "has_id",
        "small",
    ]
    assert by_name(quality(result, "silver"))["small"] == (
        len([r for r in rows if r["amount"] < 200]),
        len([r for r in rows if r["amount"] >= 200]),
    )


def test_streaming_table_expectations_check_every_flow_into_it(project):
    project.source("raw.py", RAW_TABLE)
    project.source(
        "all.py",
        """
        from pyspark import pipelines as dp

        dp.create_streaming_table("all_orders", expect_all_or_drop={"positive": "amount > 0"})


        @dp.append_flow(target="all_orders")
        def from_raw():
            return spark.readStream.table("raw")


        @dp.append_flow(target="all_orders", once=True)
        def backfill():
            return spark.createDataFrame(
                [(1000, -5, "us"), (1001, 5, "us")], "id bigint, amount bigint, region string"
            )
        """,
    )
    rows = mixed(1, 12)
    project.land("1.json", rows)
    result = project.run()
    assert result.ok, result.failed()
    negative = len([r for r in rows if r["amount"] <= 0])
    assert quality(result, "from_raw")["dropped_records"] == negative
    assert quality(result, "backfill")["dropped_records"] == 1
    assert project.count("all_orders") == 12 - negative + 1


def test_materialized_view_and_view_expectations(project):
    project.source("raw.py", RAW_TABLE)
    project.source(
        "gold.py",
        """
        from pyspark import pipelines as dp


        @dp.temporary_view
        @dp.expect_or_drop("has_id", "id IS NOT NULL")
        def valid():
            return spark.readStream.table("raw")


        @dp.table
        def valid_orders():
            return spark.readStream.table("valid")


        @dp.temporary_view
        @dp.expect("has_region", "region IS NOT NULL")
        def all_orders():
            return spark.read.table("raw")


        @dp.materialized_view
        @dp.expect_or_drop("positive", "amount > 0")
        def by_region():
            return spark.sql(
                "SELECT region, sum(amount) AS amount FROM all_orders GROUP BY region"
            )
        """,
    )
    rows = mixed(1, 20)
    project.land("1.json", rows)
    result = project.run()
    assert result.ok, result.failed()
    no_id = len([r for r in rows if r["id"] is None])
    assert project.count("valid_orders") == 20 - no_id
    assert quality(result, "valid_orders")["dropped_records"] == no_id
    assert by_name(quality(result, "valid_orders")) == {"has_id": (20 - no_id, no_id)}

    no_region = len([r for r in rows if r["region"] is None])
    q = quality(result, "by_region")
    assert by_name(q) == {"has_region": (20 - no_region, no_region), "positive": (2, 0)}
    assert {e["dataset"] for e in q["expectations"]} == {
        f"{project.database}.all_orders",
        f"{project.database}.by_region",
    }


def test_a_view_read_by_two_flows_is_counted_once_per_update(project):
    project.source("raw.py", RAW_TABLE)
    project.source(
        "two.py",
        """
        from pyspark import pipelines as dp


        @dp.temporary_view
        @dp.expect("has_region", "region IS NOT NULL")
        @dp.expect_or_drop("positive", "amount > 0")
        def checked():
            return spark.readStream.table("raw")


        @dp.table
        def first():
            return spark.readStream.table("checked")


        @dp.table
        def second():
            return spark.readStream.table("checked")
        """,
    )
    rows = mixed(1, 17)
    project.land("1.json", rows)
    result = project.run()
    assert result.ok, result.failed()
    negative = len([r for r in rows if r["amount"] <= 0])
    no_region = len([r for r in rows if r["region"] is None])
    assert project.count("first") == project.count("second") == 17 - negative  # both dropped

    reported = [
        e.details.get("data_quality")
        for e in result.events
        if e.event_type == "flow_progress"
        and e.flow_name in ("first", "second")
        and e.details.get("status") == "COMPLETED"
    ]
    assert sorted((by_name(q) if q else {} for q in reported), key=len) == [
        {},  # the view's metrics are the view's, reported once in the update
        {"has_region": (17 - no_region, no_region), "positive": (17 - negative, negative)},
    ]
    from headwater import pipelines

    table = pipelines.quality(project.root, project.spark)
    found = {(r.expectation, r.passed_records, r.failed_records) for r in table.collect()}
    assert found == {
        ("has_region", 17 - no_region, no_region),
        ("positive", 17 - negative, negative),
    }


FAILING = """
from pyspark import pipelines as dp


@dp.table
@dp.expect_or_fail("positive", "amount > 0")
def checked():
    return spark.readStream.table("raw")


@dp.materialized_view
def downstream():
    return spark.read.table("checked").groupBy().count()


@dp.materialized_view
def unrelated():
    return spark.read.table("raw").groupBy().count()
"""


def test_fail_stops_the_flow_atomically_skips_downstream_and_rerun_continues(project):
    project.source("raw.py", RAW_TABLE)
    source = project.source("checked.py", FAILING)
    project.land("1.json", [{"id": 1, "amount": 10, "region": "eu"}])
    assert project.run().ok
    before = project.spark.sql(f"DESCRIBE HISTORY {project.database}.checked").count()

    project.land("2.json", [{"id": 2, "amount": 5}, {"id": 3, "amount": -7, "region": "us"}])
    result = project.run()
    assert not result.ok
    runs = result.flows
    assert runs["checked"].status == "FAILED"
    assert runs["downstream"].status == "SKIPPED"
    assert runs["unrelated"].status == "COMPLETED" and project.rows("unrelated") == [(3,)]
    error = runs["checked"].error
    assert isinstance(error, ExpectationViolationError)
    assert error.expectation == "positive" and error.dataset.endswith(".checked")
    assert json.loads(error.row) == {"id": 3, "amount": -7, "region": "us", "_rescued_data": None}
    assert "amount > 0" in str(error) and "Nothing of the failing batch" in str(error)
    assert project.count("checked") == 1
    history = project.spark.sql(f"DESCRIBE HISTORY {project.database}.checked").count()
    assert history == before  # nothing committed
    failed = [
        e
        for e in result.events
        if e.event_type == "flow_progress" and e.details["status"] == "FAILED"
    ]
    assert failed and "EXPECTATION_VIOLATION" in failed[0].message
    page = write_report(str(project.storage), project.root / "report.html").read_text()
    assert "EXPECTATION_VIOLATION" in page and "positive" in page

    source.write_text(FAILING.replace("expect_or_fail", "expect_or_drop"))
    rerun = project.run()
    assert rerun.ok, rerun.failed()
    assert sorted(r[0] for r in project.rows("checked")) == [1, 2]  # the failed batch, once
    assert project.rows("downstream") == [(2,)]


def test_sql_constraints_on_tables_views_and_materialized_views(project):
    project.source(
        "p.sql",
        """
        CREATE OR REFRESH STREAMING TABLE raw (
          CONSTRAINT has_id EXPECT (id IS NOT NULL) ON VIOLATION QUARANTINE,
          CONSTRAINT has_region EXPECT (region IS NOT NULL)
        ) AS SELECT * FROM STREAM read_files('${source_dir}/orders', format => 'json',
                                             schemaHints => 'id bigint, amount bigint');

        CREATE TEMPORARY VIEW positive (
          CONSTRAINT positive EXPECT (amount > 0) ON VIOLATION DROP ROW
        ) AS SELECT * FROM raw;

        CREATE OR REFRESH MATERIALIZED VIEW total (
          CONSTRAINT some_rows EXPECT (n > 0) ON VIOLATION FAIL UPDATE
        ) AS SELECT count(*) AS n FROM positive;
        """,
    )
    rows = mixed(1, 20)
    project.land("1.json", rows)
    result = project.run()
    assert result.ok, result.failed()
    no_id = [r for r in rows if r["id"] is None]
    kept = [r for r in rows if r["id"] is not None]
    assert project.count("raw") == len(kept)
    assert project.count("raw_quarantine") == len(no_id)
    files = project.spark.table(f"{project.database}.raw_quarantine").select("_source_file")
    assert {r[0] for r in files.collect()} == {str(project.landing / "orders" / "1.json")}
    assert "__hw_file_metadata" not in project.spark.table(f"{project.database}.raw").columns
    positive = len([r for r in kept if r["amount"] > 0])
    assert project.rows("total") == [(positive,)]
    q = quality(result, "total")
    assert q["dropped_records"] == len(kept) - positive
    assert by_name(q)["some_rows"] == (1, 0)

    log = project.spark.sql(
        f"""
        SELECT row_expectations.dataset AS dataset,
               row_expectations.name AS expectation,
               SUM(row_expectations.passed_records) AS passing_records,
               SUM(row_expectations.failed_records) AS failing_records
        FROM (
          SELECT explode(
                   from_json(
                     details:flow_progress:data_quality:expectations,
                     'array<struct<name: string, dataset: string, passed_records: int,
                                   failed_records: int>>'
                   )
                 ) row_expectations
          FROM event_log('{project.storage}')
          WHERE event_type = 'flow_progress'
            AND details:flow_progress.status = 'COMPLETED'
        )
        GROUP BY row_expectations.dataset, row_expectations.name
        ORDER BY dataset, expectation
        """
    ).collect()
    db = project.database
    no_region = len([r for r in rows if r["region"] is None])
    assert [tuple(r) for r in log] == [
        (f"{db}.positive", "positive", positive, len(kept) - positive),
        (f"{db}.raw", "has_id", 20 - len(no_id), len(no_id)),
        (f"{db}.raw", "has_region", 20 - no_region, no_region),
        (f"{db}.total", "some_rows", 1, 0),
    ]


@pytest.mark.parametrize(
    ("decorator", "error_class"),
    [
        ('@dp.expect("a", "amount > 0")\n@dp.expect("A", "id > 0")', "DUPLICATE_EXPECTATION"),
        ('@dp.expect("a", "nope > 0")', "EXPECTATION_UNKNOWN_COLUMN"),
        ('@dp.expect("a", "amount + 1")', "EXPECTATION_NOT_BOOLEAN"),
        ('@dp.expect("a", "amount >")', "EXPECTATION_INVALID"),
    ],
)
def test_bad_expectations_are_named_errors_before_anything_runs(project, decorator, error_class):
    project.source(
        "silver.py",
        f"""
from pyspark import pipelines as dp


@dp.materialized_view
def base():
    return spark.range(3).selectExpr("id", "id * 10 AS amount")


@dp.materialized_view
{decorator}
def silver():
    return spark.read.table("base")
""",
    )
    with pytest.raises(PipelineDefinitionError) as e:
        project.run()
    assert e.value.error_class == f"PIPELINE_{error_class}"
    assert e.value.file.endswith("silver.py")
    assert not project.spark.catalog.tableExists(f"{project.database}.base")


def test_expectations_in_the_wrong_place_are_named(project):
    project.source(
        "p.py",
        """
        from pyspark import pipelines as dp


        @dp.expect("a", "x > 0")
        @dp.materialized_view
        def m():
            return spark.range(3).withColumnRenamed("id", "x")
        """,
    )
    with pytest.raises(PipelineDefinitionError) as e:
        project.run()
    assert e.value.error_class == "PIPELINE_EXPECTATION_MISPLACED"
    assert e.value.line == 5


def test_materialized_view_quarantine_is_replaced_with_it_and_fail_keeps_it_unchanged(project):
    project.source("raw.py", RAW_TABLE)
    source = project.source(
        "gold.py",
        """
        from pyspark import pipelines as dp


        @dp.materialized_view
        @dp.expect_or_quarantine("has_region", "region IS NOT NULL")
        @dp.expect_or_fail("small", "amount < 1000")
        def by_id():
            return spark.read.table("raw").select("id", "amount", "region")
        """,
    )
    project.land("1.json", mixed(1, 12))
    assert project.run().ok
    no_region = len([r for r in mixed(1, 12) if r["region"] is None])
    assert project.count("by_id") == 12 - no_region
    assert project.count("by_id_quarantine") == no_region
    project.land("2.json", mixed(13, 8))
    assert project.run().ok  # a refresh replaces both tables: nothing counted twice
    no_region = len([r for r in mixed(1, 20) if r["region"] is None])
    assert project.count("by_id") == 20 - no_region
    assert project.count("by_id_quarantine") == no_region

    project.land("3.json", [{"id": 99, "amount": 5000, "region": "eu"}])
    before = project.rows("by_id", order_by="id")
    result = project.run()
    assert result.flows["by_id"].status == "FAILED"
    assert isinstance(result.flows["by_id"].error, ExpectationViolationError)
    assert project.rows("by_id", order_by="id") == before  # the refresh committed nothing
    source.write_text(source.read_text().replace("amount < 1000", "amount < 10000"))
    assert project.run().ok
    assert project.count("by_id") == 20 - no_region + 1


def test_quarantined_rows_name_the_file_they_came_from_when_the_flow_keeps_it(project):
    project.source(
        "p.py",
        """
from pyspark import pipelines as dp

LANDING = spark.conf.get("source_dir") + "/orders"


@dp.table
@dp.expect_or_quarantine("has_id", "id IS NOT NULL")
def kept():  # every column of the source reaches the table: the file path does too
    return (
        spark.readStream.format("cloudFiles").option("cloudFiles.format", "json")
        .schema("id bigint, amount bigint, region string").load(LANDING)
        .withColumn("doubled", 2 * spark_col("amount"))
    )


@dp.table
@dp.expect_or_quarantine("has_id", "id IS NOT NULL")
def projected():  # a projection drops it, as it drops Spark's _metadata column
    return (
        spark.readStream.format("cloudFiles").option("cloudFiles.format", "json")
        .option("cloudFiles.schemaHints", "id bigint, amount bigint").load(LANDING)
        .select("id", "amount")
    )


from pyspark.sql.functions import col as spark_col
""",
    )
    project.land("a.json", mixed(1, 10))
    project.land("b.json", mixed(11, 10))
    result = project.run()
    assert result.ok, result.failed()
    aside = project.spark.table(f"{project.database}.kept_quarantine")
    found = sorted((r.id, r.amount, r._source_file) for r in aside.collect())
    landed = project.landing / "orders"
    assert found == sorted(
        (None, r["amount"], str(landed / ("a.json" if i < 10 else "b.json")))
        for i, r in enumerate(mixed(1, 20))
        if r["id"] is None
    )
    assert project.spark.table(f"{project.database}.kept").columns == [
        "id",
        "amount",
        "region",
        "doubled",
    ]
    projected = project.spark.table(f"{project.database}.projected_quarantine")
    assert projected.count() == 4
    assert {r._source_file for r in projected.collect()} == {None}
