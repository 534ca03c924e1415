"""The fixed cost of an update that finds nothing new: its streams are not started (a
stream over a Delta table whose checkpoint is past the table's latest version runs no
batch), and a materialized view's NO_OP reads no snapshot of its inputs or of itself,
only their latest versions and the view's last commit. Then a change flows exactly once."""

from __future__ import annotations

from pyspark.sql.streaming import StreamingQueryListener

from headwater.engines.table_log import TableLog

PIPELINE = """
from pyspark import pipelines as dp
from pyspark.sql import functions as F


@dp.table
def bronze():
    return spark.readStream.table("{src}")


@dp.materialized_view
def totals():
    return spark.read.table("bronze").groupBy("k").agg(F.sum("amount").alias("total"))


dp.create_streaming_table("latest")
dp.create_auto_cdc_flow(target="latest", source="bronze", keys=["k"], sequence_by="id")
"""


class Started(StreamingQueryListener):
    """The names of the queries started (called before ``start()`` returns)."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def onQueryStarted(self, event) -> None:
        self.names.append(event.name)

    def onQueryProgress(self, event) -> None:
        pass

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        pass


def facts(spark, start: int, count: int):
    return spark.range(start, start + count).selectExpr("id", "id % 3 AS k", "id * 2 AS amount")


def test_no_change_update_starts_no_stream_and_the_next_change_flows_once(project):
    spark = project.spark
    src = f"{project.database}_src.facts"
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {project.database}_src")
    facts(spark, 0, 10).write.format("delta").saveAsTable(src)
    project.source("p.py", PIPELINE.format(src=src))
    assert project.run().ok
    started = Started()
    spark.streams.addListener(started)
    try:
        idle = project.run()
        assert idle.ok and started.names == []
        done = {
            e.flow_name: e.details
            for e in idle.events
            if e.event_type == "flow_progress" and e.details["status"] == "COMPLETED"
        }
        assert done["bronze"]["metrics"] == {"num_output_rows": 0, "num_input_rows": 0}
        assert done["latest"]["metrics"]["num_upserted_rows"] == 0
        facts(spark, 10, 5).write.format("delta").mode("append").saveAsTable(src)
        assert project.run().ok
        assert sorted(started.names) == [f"{project.database}.{n}" for n in ("bronze", "latest")]
        assert project.count("bronze") == 15
        assert project.rows("latest", "k") == [(12, 0, 24), (13, 1, 26), (14, 2, 28)]
        assert project.run().ok and len(started.names) == 2
    finally:
        spark.streams.removeListener(started)


def test_a_no_op_refresh_loads_no_snapshot_of_its_input_or_of_the_view(project, monkeypatch):
    """A view over a table outside the pipeline, refreshed twice with nothing changed:
    the second refresh (NO_OP) reads the input's latest version (its log's listing) and
    the view's last commit, and loads no table snapshot (each a replay of the log)."""
    spark = project.spark
    src = f"{project.database}_src.facts"
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {project.database}_src")
    facts(spark, 0, 10).write.format("delta").saveAsTable(src)
    project.source("p.py", PIPELINE.split("@dp.table")[0] + VIEW.format(src=src))
    assert project.run().ok
    loaded: list[str] = []
    snapshot = TableLog.snapshot

    def counted(self: TableLog, version: int | None = None):
        loaded.append(self.root)
        return snapshot(self, version)

    monkeypatch.setattr(TableLog, "snapshot", counted)
    result = project.run(refresh=["totals"])
    assert result.ok and result.flows["totals"].technique == "NO_OP"
    assert loaded == []


VIEW = """
@dp.materialized_view
def totals():
    return spark.read.table("{src}").groupBy("k").agg(F.sum("amount").alias("total"))
"""
