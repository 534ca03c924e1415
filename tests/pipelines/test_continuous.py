"""Continuous mode: files landed while the pipeline runs flow through to the materialized
view; a stop ends every stream cleanly after its current micro-batch."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from pipeline_rows import RAW_TABLE, orders

PIPELINE = (
    RAW_TABLE
    + """
@dp.table
def doubled():
    return spark.readStream.table("raw").selectExpr("id", "amount * 2 AS amount")

@dp.materialized_view
def total():
    return spark.read.table("doubled").groupBy().sum("amount")
"""
)


def wait_for(check, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception:
            pass
        time.sleep(0.5)
    raise AssertionError("condition not reached in time")


@contextmanager
def continuous(project) -> Iterator[dict]:
    """The project's pipeline running in continuous mode for the block (its result in
    the dict yielded once stopped)."""
    stop = threading.Event()
    outcome: dict = {}

    def run():
        outcome["result"] = project.run(continuous=True, stop=stop, trigger_interval="1 second")

    runner = threading.Thread(target=run)
    runner.start()
    try:
        yield outcome
    finally:
        stop.set()
        runner.join(timeout=120)
    assert not runner.is_alive()


def test_continuous_picks_up_new_files_then_stops_cleanly(project):
    project.source("p.py", PIPELINE)
    project.land("1.json", orders(1, 3))  # amounts 10, 20, 30
    with continuous(project) as outcome:
        wait_for(lambda: project.rows("total") == [(120,)])
        project.land("2.json", orders(10, 1))  # amount 100
        wait_for(lambda: project.rows("total") == [(320,)])
    result = outcome["result"]
    assert result.ok, result.failed()
    assert {r.status for r in result.flows.values()} == {"STOPPED"}
    assert project.count("doubled") == 4
    assert not project.spark.streams.active


def test_continuous_refreshes_a_view_when_a_table_outside_the_pipeline_changes(project):
    """A materialized view over a Delta table another job writes is refreshed when that
    table gets a new version, as when one of the pipeline's own tables does."""
    spark = project.spark
    src = f"{project.database}_src.orders"
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {project.database}_src")
    spark.createDataFrame([(1, 10)], "id bigint, amount bigint").write.saveAsTable(src)
    project.source(
        "p.py",
        "from pyspark import pipelines as dp\n\n"
        "@dp.materialized_view\n"
        f"def total():\n    return spark.read.table('{src}').groupBy().sum('amount')\n",
    )
    with continuous(project) as outcome:
        wait_for(lambda: project.rows("total") == [(10,)])
        more = spark.createDataFrame([(2, 32)], "id bigint, amount bigint")
        more.write.mode("append").saveAsTable(src)
        wait_for(lambda: project.rows("total") == [(42,)], timeout=30)
    assert outcome["result"].ok, outcome["result"].failed()
