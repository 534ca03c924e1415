"""Names that start with a digit (``1_bronze_db.customers``, as courses write them: Spark's
parser reads such a word as a name when it is not a number) parse wherever pipeline SQL
takes a name, and every name has one spelling whether it was written quoted or not: flow
names, the event log, checkpoints and progress lines agree. A flow whose progress was kept
under its earlier, quoted spelling continues from it."""

from __future__ import annotations

import textwrap

import pytest

from headwater.errors import PipelineDefinitionError
from headwater.pipelines.define.elements import canonical_name, earlier_spellings
from headwater.pipelines.sql_files.definitions import Reference, parse_sql_file

DIGITS = """
CREATE OR REFRESH STREAMING TABLE 1_bronze_db.customers_raw_6 AS
  SELECT * FROM STREAM read_files('/landing', format => 'json');
CREATE OR REFRESH STREAMING TABLE `1_bronze_db`.`2_quoted` AS
  SELECT * FROM STREAM(LIVE.1_bronze_db.customers_raw_6);
CREATE OR REFRESH MATERIALIZED VIEW 3_gold AS SELECT count(*) AS n FROM 1_bronze_db.customers_raw_6;
CREATE OR REFRESH STREAMING TABLE 1_silver_db.all_rows;
CREATE FLOW 4_flow AS INSERT INTO 1_silver_db.all_rows BY NAME
  SELECT * FROM STREAM 1_bronze_db.`2_quoted`;
CREATE OR REFRESH STREAMING TABLE 5_scd;
APPLY CHANGES INTO LIVE.5_scd FROM STREAM(LIVE.1_bronze_db.customers_raw_6)
  KEYS (1_id) SEQUENCE BY seq;
CREATE FLOW `6_cdc` AS AUTO CDC INTO `5_scd` FROM STREAM 1_bronze_db.customers_raw_6
  KEYS (id) SEQUENCE BY seq
"""


def test_digit_leading_names_parse_everywhere_in_one_spelling():
    parsed = parse_sql_file(textwrap.dedent(DIGITS), "p.sql", {})
    assert [d.name for d in parsed.datasets] == [
        "1_bronze_db.customers_raw_6",
        "1_bronze_db.2_quoted",  # written `1_bronze_db`.`2_quoted`: the same spelling
        "3_gold",
        "1_silver_db.all_rows",
        "5_scd",
    ]
    reads = [d.query.references for d in parsed.datasets if d.query is not None]
    assert reads == [
        (),
        (Reference("1_bronze_db.customers_raw_6", streaming=True, live=True),),
        (Reference("1_bronze_db.customers_raw_6"),),
    ]
    (flow,) = parsed.flows
    assert (flow.name, flow.target) == ("4_flow", "1_silver_db.all_rows")
    assert flow.query.references == (Reference("1_bronze_db.2_quoted", streaming=True),)
    cdc = [(c.name, c.target, c.changes.source, c.changes.keys) for c in parsed.auto_cdc]
    assert cdc == [
        ("5_scd", "5_scd", "1_bronze_db.customers_raw_6", ("1_id",)),
        ("6_cdc", "5_scd", "1_bronze_db.customers_raw_6", ("id",)),
    ]


@pytest.mark.parametrize("number", ["123", "1e5", "2L", "7bd"])
def test_a_number_is_not_a_name(number):
    with pytest.raises(PipelineDefinitionError) as e:
        parse_sql_file(f"CREATE MATERIALIZED VIEW {number} AS SELECT 1", "p.sql", {})
    assert "Expected the name of the dataset here" in str(e.value)


def test_one_spelling_per_name_and_the_spellings_it_had():
    assert canonical_name("`1_db`.`t`") == canonical_name("1_db.t") == "1_db.t"
    assert canonical_name("`a.b`.c") == "`a.b`.c"  # a dot inside a part keeps its quotes
    assert canonical_name("`live`.t") == "`live`.t"  # unquoted, LIVE. means "this pipeline"
    assert canonical_name("my flow") == "my flow"  # a Python flow name, not a dotted name
    assert list(earlier_spellings("db.t")) == ["db.`t`", "`db`.t", "`db`.`t`"]


def test_a_pipeline_of_digit_leading_names_runs_and_names_each_flow_one_way(project):
    db = f"1_{project.database}"
    project.source(
        "bronze.sql",
        f"""
        CREATE OR REFRESH STREAMING TABLE {db}.customers_raw AS
          SELECT * FROM STREAM read_files('${{source_dir}}/orders', format => 'json',
                                          schemaHints => 'id bigint, amount bigint');
        CREATE OR REFRESH STREAMING TABLE `{db}`.quoted AS
          SELECT id, amount FROM STREAM(LIVE.{db}.customers_raw);
        CREATE OR REFRESH STREAMING TABLE 2_all;
        CREATE FLOW `3_copy` AS INSERT INTO 2_all BY NAME SELECT id FROM STREAM({db}.quoted);
        """,
    )
    project.source(
        "gold.py",
        f"""
        from pyspark import pipelines as dp

        @dp.materialized_view(name="{db}.py_total")
        def total():
            return spark.sql("SELECT sum(amount) AS total FROM {db}.quoted")
        """,
    )
    project.land("1.json", [{"id": i, "amount": i * 10} for i in range(3)])
    result = project.run()
    assert result.ok, result.failed()
    assert set(result.flows) == {f"{db}.customers_raw", f"{db}.quoted", "3_copy", f"{db}.py_total"}
    assert project.spark.table(f"`{db}`.py_total").collect()[0][0] == 30
    assert project.count("2_all") == 3

    from headwater.sql.functions import event_log

    origins = event_log(project.spark, str(project.storage)).where("origin.flow_name IS NOT NULL")
    names = {
        (r[0], r[1])
        for r in origins.selectExpr("origin.flow_name", "origin.dataset_name").collect()
    }
    assert (f"{db}.quoted", f"{db}.quoted") in names
    assert not [n for n in names if "`" in n[0] + n[1]], names
    checkpoints = {p.name for p in (project.storage / "checkpoints").iterdir()}
    assert {f"{db}.customers_raw", f"{db}.quoted", "3_copy"} <= checkpoints, checkpoints

    # A checkpoint kept under the quoted spelling (as before names had one) is continued.
    (project.storage / "checkpoints" / f"{db}.quoted").rename(
        project.storage / "checkpoints" / f"_{db}_.quoted"
    )
    project.land("2.json", [{"id": 10, "amount": 100}])
    again = project.run()
    assert again.ok, again.failed()
    assert project.spark.table(f"`{db}`.quoted").count() == 4  # 3 + 1: nothing read twice
    renamed = [e.details for e in again.events if e.event_type == "flow_renamed"]
    assert renamed == [{"flow": f"{db}.quoted", "earlier_name": f"`{db}`.quoted"}]
