"""The README's main command: the medallion demo, run twice as a user would."""

from __future__ import annotations

import json

import pytest
from deltalake import DeltaTable

from tests.conftest import run_python

DEMO = "import json, sys; from headwater.demo import run; print(json.dumps(run(sys.argv[1])))"


def _rows(warehouse, db, table):
    return DeltaTable(str(warehouse / f"{db}.db" / table)).count()


@pytest.mark.slow
def test_demo_ingests_new_files_each_run_and_updates_silver_and_gold(tmp_path):
    first = run_python(DEMO, str(tmp_path), timeout=600)
    assert "gold.hourly_sales" in first.stdout
    assert "The graph" in first.stdout and "COMPLETED" in first.stdout
    warehouse = tmp_path / "warehouse"
    bronze = _rows(warehouse, "bronze", "orders")
    silver = _rows(warehouse, "silver", "orders")
    assert bronze > 0 and 0 < silver <= bronze
    assert _rows(warehouse, "bronze", "orders_quarantine") >= 1  # malformed records kept
    assert "has_order_id" in first.stdout and "not_a_test" in first.stdout  # quality shown
    assert _rows(warehouse, "gold", "hourly_sales") > 0
    assert _rows(warehouse, "gold", "customer_orders") > 0

    second = run_python(DEMO, str(tmp_path), timeout=600)
    assert "run 2" in second.stdout
    assert _rows(warehouse, "bronze", "orders") > bronze  # only the new files, appended
    assert _rows(warehouse, "silver", "orders") > silver
    json.loads(second.stdout.strip().splitlines()[-1])  # run() reports its counts


FAILING = """
from pyspark.sql import functions as F


@F.udf("int")
def till(amount):
    raise ValueError("the till is on fire")


_orders = bronze_orders


@dp.table(name="bronze.orders", comment="order events as landed")
def bronze_orders():
    return _orders().withColumn("till", till("amount"))
"""


@pytest.mark.slow
def test_a_failed_update_ends_in_its_summary_and_a_non_zero_exit(tmp_path):
    from pathlib import Path

    from headwater.demo import write_pipeline

    project = tmp_path / "pipeline"
    write_pipeline(project, tmp_path / "landing")
    bronze = project / "transformations" / "bronze.py"
    # bronze.orders fails on its rows, at run time: nothing downstream can run.
    source = bronze.read_text().replace(
        '@dp.table(name="bronze.orders", comment="order events as landed")\n', "", 1
    )
    bronze.write_text(source + FAILING)
    assert Path(bronze).read_text().count("bronze.orders") == 1

    done = run_python(DEMO, str(tmp_path), timeout=600, check=False)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-3000:]
    # No traceback through the demo (Spark's own log of the task's error may show one).
    assert 'demo.py", line' not in done.stderr, done.stderr[-3000:]
    assert "TABLE_OR_VIEW_NOT_FOUND" not in done.stderr
    summary = done.stdout[done.stdout.index("Pipeline 'medallion' update") :]
    assert "FAILED" in summary.splitlines()[0]  # the summary, printed
    assert "bronze.orders" in summary and "error:" in summary  # the flow's error, in it
    assert "The update failed (failed: bronze.orders" in done.stderr
