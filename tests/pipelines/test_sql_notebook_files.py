"""Pipeline SQL files as the known platform's users have them, parsed without Spark: SQL
notebooks exported as ``.sql`` files (cells split by ``-- COMMAND ----------``, a cell's last
statement without ``;``), ``SET key;`` (which only shows a setting) and the flows its earlier
examples write without ``BY NAME``."""

from __future__ import annotations

import textwrap

import pytest

from headwater.errors import PipelineDefinitionError
from headwater.pipelines.define.elements import Origin
from headwater.pipelines.sql_files.definitions import Reference, parse_sql_file
from headwater.sql.text import split

NOTEBOOK = """\
-- Databricks notebook source
-- MAGIC %md
-- MAGIC # Loans; a pipeline
-- MAGIC A cell of text, no statement.

-- COMMAND ----------

-- DBTITLE 1,Raw
CREATE STREAMING TABLE raw
  COMMENT "as landed"
AS SELECT * FROM STREAM read_files('/landing/raw', format => 'json')

-- COMMAND ----------

SET landing = /landing;
CREATE MATERIALIZED VIEW ref AS SELECT * FROM read_files('${landing}/ref')

-- COMMAND ----------

-- DBTITLE 1,Joined
CREATE STREAMING LIVE VIEW joined
AS SELECT r.*, ref.name FROM STREAM(raw) r
  INNER JOIN ref ON r.id = ref.id
-- COMMAND ----------
CREATE MATERIALIZED VIEW totals AS SELECT count(*) AS n FROM joined
-- COMMAND ----------
"""


def parse(text: str):
    return parse_sql_file(textwrap.dedent(text), "pipeline.sql", {})


def test_notebook_cells_end_statements_without_semicolons():
    parsed = parse(NOTEBOOK)
    assert [(d.name, d.dataset.kind, d.origin.line) for d in parsed.datasets] == [
        ("raw", "streaming_table", 9),
        ("ref", "materialized_view", 16),
        ("joined", "temporary_view", 21),
        ("totals", "materialized_view", 25),
    ]
    raw, ref, joined, totals = parsed.datasets
    assert raw.dataset.comment == "as landed"
    assert raw.text.endswith("format => 'json')")
    assert ref.query.file_sources[0].path == "/landing/ref"
    assert joined.query.references == (Reference("raw", streaming=True), Reference("ref"))
    assert totals.query.references == (Reference("joined"),)
    assert parsed.conf == {"landing": "/landing"}


def test_a_cell_break_inside_a_string_is_text():
    (statement,) = split("SELECT 'a\n-- COMMAND ----------\nb' AS x\n", [10])
    assert statement.text.endswith("b' AS x")


def test_a_statement_left_open_at_a_cell_break_fails_at_its_line():
    with pytest.raises(PipelineDefinitionError) as e:
        parse("CREATE MATERIALIZED VIEW m AS\nSELECT * FROM\n-- COMMAND ----------\nraw")
    assert e.value.line == 2 and "pipeline.sql:2:" in str(e.value)


@pytest.mark.parametrize("statement", ["SET spark.source", "SET", "SET -v", "SET `a.b`"])
def test_set_without_a_value_shows_a_setting_and_sets_nothing(statement):
    parsed = parse(f"{statement};\nCREATE MATERIALIZED VIEW m AS SELECT 1 AS x;")
    assert parsed.conf == {}
    assert [d.name for d in parsed.datasets] == ["m"]


def test_set_key_keeps_the_configuration_value_for_substitution():
    parsed = parse_sql_file(
        "SET\n  spark.source;\nCREATE MATERIALIZED VIEW m AS SELECT * FROM read_files('${source}/x')",
        "pipeline.sql",
        {"source": "/landing"},
    )
    assert parsed.conf == {}
    assert parsed.datasets[0].query.file_sources[0].path == "/landing/x"


@pytest.mark.parametrize("by_name", ["", " BY NAME"])
def test_a_flow_inserts_with_or_without_by_name(by_name):
    parsed = parse(
        f"""
        CREATE STREAMING TABLE customers_us;
        CREATE FLOW append_west
        AS INSERT INTO customers_us{by_name}
        SELECT * FROM STREAM(customers_us_west);
        CREATE FLOW backfill AS INSERT INTO ONCE customers_us{by_name} SELECT * FROM old;
        """
    )
    assert [(f.name, f.target, f.once, f.origin) for f in parsed.flows] == [
        ("append_west", "customers_us", False, Origin("pipeline.sql", 3)),
        ("backfill", "customers_us", True, Origin("pipeline.sql", 6)),
    ]
    assert parsed.flows[0].query.references == (Reference("customers_us_west", streaming=True),)


def test_a_flow_without_its_query_names_what_it_expected():
    with pytest.raises(PipelineDefinitionError) as e:
        parse("CREATE STREAMING TABLE t;\nCREATE FLOW f AS\nINSERT INTO t")
    assert e.value.line == 3 and "query" in str(e.value)
