"""Continuous mode: files landed while the pipeline runs flow through to the materialized
view; a stop ends every stream cleanly after its current micro-batch."""

from __future__ import annotations

import threading
import time

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


def test_continuous_picks_up_new_files_then_stops_cleanly(project):
    project.source("p.py", PIPELINE)
    project.land("1.json", orders(1, 3))  # amounts 10, 20, 30
    stop = threading.Event()
    outcome = {}

    def run():
        outcome["result"] = project.run(continuous=True, stop=stop, trigger_interval="1 second")

    runner = threading.Thread(target=run)
    runner.start()
    try:
        wait_for(lambda: project.rows("total") == [(120,)])
        project.land("2.json", orders(10, 1))  # amount 100
        wait_for(lambda: project.rows("total") == [(320,)])
    finally:
        stop.set()
        runner.join(timeout=120)
    assert not runner.is_alive()
    result = outcome["result"]
    assert result.ok, result.failed()
    assert {r.status for r in result.flows.values()} == {"STOPPED"}
    assert project.count("doubled") == 4
    assert not project.spark.streams.active
