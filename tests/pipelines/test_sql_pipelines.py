"""Pipelines written in SQL (``.sql`` files beside the Python ones): the forms Spark's
parser rejects (``CREATE OR REFRESH``, ``STREAM(...)``, ``read_files``/``cloud_files``,
``CREATE FLOW ... INSERT INTO ... BY NAME``, ``LIVE.`` names, ``${key}``) run as written."""

from __future__ import annotations

import pytest
from pipeline_rows import RAW_TABLE, orders

from headwater.errors import PipelineDefinitionError

MEDALLION_SQL = """
-- bronze: Auto Loader through read_files under STREAM
CREATE OR REFRESH STREAMING TABLE bronze_orders
COMMENT 'orders as landed'
AS SELECT * FROM STREAM read_files('${source_dir}/orders', format => 'json',
                                   schemaHints => 'id bigint, amount bigint');

CREATE OR REFRESH STREAMING TABLE silver_orders
AS SELECT id, amount, upper(region) AS region FROM STREAM(LIVE.bronze_orders) WHERE amount > 0;

CREATE OR REFRESH MATERIALIZED VIEW gold_regions
AS SELECT region, count(*) AS orders, sum(amount) AS total
   FROM LIVE.silver_orders GROUP BY region;
"""


def test_sql_medallion_runs_and_takes_only_new_files_on_rerun(project):
    project.source("medallion.sql", MEDALLION_SQL)
    project.land("1.json", orders(0, 4) + orders(10, 2, "us"))
    first = project.run()
    assert first.ok, first.failed()
    assert project.count("bronze_orders") == 6
    assert project.rows("gold_regions", "region") == [("EU", 3, 60), ("US", 2, 210)]
    kinds = {k.split(".")[-1]: d.kind for k, d in first.graph.datasets.items()}
    assert kinds["gold_regions"] == "materialized_view"
    assert first.graph.flows["silver_orders"].inputs == (f"{project.database}.bronze_orders",)

    project.land("2.json", orders(20, 1, "us"))
    second = project.run()
    assert second.ok, second.failed()
    assert second.flows["bronze_orders"].num_output_rows == 1
    assert project.rows("gold_regions", "region") == [("EU", 3, 60), ("US", 3, 410)]


def test_python_and_sql_sources_read_each_other(project):
    project.source(
        "a_bronze.py",
        RAW_TABLE
        + """
@dp.materialized_view
def top():
    return spark.sql("SELECT max(amount) AS top FROM LIVE.all_orders")
""",
    )
    project.source(
        "b_flows.sql",
        """
        SET min_amount = 20;
        CREATE OR REFRESH STREAMING TABLE all_orders;
        CREATE FLOW big_orders AS INSERT INTO all_orders BY NAME
          SELECT id, amount FROM STREAM(raw) WHERE amount >= ${min_amount};
        CREATE FLOW seed AS INSERT INTO ONCE all_orders BY NAME
          SELECT CAST(-1 AS BIGINT) AS id, CAST(0 AS BIGINT) AS amount;
        CREATE TEMPORARY VIEW small AS SELECT * FROM raw WHERE amount < 20;
        CREATE OR REFRESH MATERIALIZED VIEW small_count AS SELECT count(*) AS n FROM small;
        """,
    )
    project.land("1.json", orders(0, 5))  # amounts 0..40
    result = project.run()
    assert result.ok, result.failed()
    assert sorted(r[0] for r in project.rows("all_orders")) == [-1, 2, 3, 4]
    assert project.rows("top") == [(40,)]
    assert project.rows("small_count") == [(2,)]
    assert result.graph.flows["top"].inputs == (f"{project.database}.all_orders",)
    assert project.run().ok  # the seed flow does not run again
    assert project.count("all_orders") == 4


def test_an_undefined_parameter_names_the_file_and_line(project):
    project.source("bad.sql", "CREATE MATERIALIZED VIEW m AS\nSELECT ${nope} AS x\n")
    with pytest.raises(PipelineDefinitionError, match="nope") as e:
        project.run()
    assert e.value.file.endswith("bad.sql") and e.value.line == 2
    assert not project.storage.exists()
