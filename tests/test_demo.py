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
