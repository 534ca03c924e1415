"""The event log: a Delta table per pipeline, readable by name, by path and with SQL
``event_log(...)``, queried the way users copy from the known system's docs."""

from __future__ import annotations

import json

from pipeline_rows import RAW_TABLE, orders

PIPELINE = (
    RAW_TABLE
    + """
@dp.materialized_view
def total():
    return spark.read.table("raw").groupBy().count()
"""
)


def test_events_land_in_a_delta_table_with_the_known_columns(project):
    project.source("p.py", PIPELINE)
    project.land("1.json", orders(0, 4))
    result = project.run()
    assert result.ok
    spark = project.spark
    log = spark.sql(f"SELECT * FROM event_log('{project.storage}')")
    assert log.columns[:6] == ["id", "sequence", "origin", "timestamp", "level", "event_type"]
    assert {"message", "details", "error"} <= set(log.columns)
    by_name = spark.table(f"{project.database}.{project.database}_event_log")
    assert by_name.count() == log.count() == len(result.events)
    types = {r.event_type for r in log.select("event_type").distinct().collect()}
    assert {"create_update", "update_progress", "flow_definition", "flow_progress"} <= types
    states = [
        json.loads(r.details)["update_progress"]["state"]
        for r in log.where("event_type = 'update_progress'").orderBy("sequence.seq_no").collect()
    ]
    assert states == ["INITIALIZING", "SETTING_UP_TABLES", "RUNNING", "COMPLETED"]


def test_lineage_and_row_counts_read_with_colon_paths(project):
    project.source("p.py", PIPELINE)
    project.land("1.json", orders(0, 4))
    assert project.run().ok
    project.land("2.json", orders(10, 3))
    assert project.run().ok
    spark = project.spark
    rows = spark.sql(
        f"""
        SELECT origin.flow_name AS flow,
               details:flow_progress.metrics.num_output_rows AS rows
        FROM event_log('{project.storage}')
        WHERE event_type = 'flow_progress'
          AND details:flow_progress.status = 'COMPLETED'
        ORDER BY timestamp
        """
    ).collect()
    assert [(r.flow, int(r.rows)) for r in rows] == [
        ("raw", 4),
        ("total", 1),
        ("raw", 3),
        ("total", 1),
    ]
    lineage = spark.sql(
        f"""
        SELECT details:flow_definition.output_dataset AS output,
               from_json(details:flow_definition.input_datasets, 'array<string>') AS inputs
        FROM event_log('{project.storage}')
        WHERE event_type = 'flow_definition' AND origin.flow_name = 'total'
        LIMIT 1
        """
    ).collect()[0]
    assert lineage.output == f"{project.database}.total"
    assert lineage.inputs == [f"{project.database}.raw"]
    quality = spark.sql(
        f"""
        SELECT details:flow_progress.data_quality.dropped_records AS dropped
        FROM event_log('{project.storage}')
        WHERE event_type = 'flow_progress' AND origin.flow_name = 'raw'
          AND details:flow_progress.status = 'COMPLETED'
        """
    ).collect()
    assert [r.dropped for r in quality] == [None, None]  # no expectations, no data_quality


def test_flow_progress_reports_rows_read_and_the_backlog_shrinking_to_nothing(project):
    project.source(
        "p.py",
        """
        from pyspark import pipelines as dp

        @dp.table
        def raw():
            return (
                spark.readStream.format("cloudFiles")
                .option("cloudFiles.format", "json")
                .option("cloudFiles.maxFilesPerTrigger", "1")
                .load(spark.conf.get("source_dir") + "/orders")
            )
        """,
    )
    for i in range(3):
        project.land(f"{i}.json", orders(i * 10, 2))
    result = project.run()
    assert result.ok
    progress = [
        e.details
        for e in result.events
        if e.event_type == "flow_progress" and e.flow_name == "raw" and "metrics" in e.details
    ]
    final = progress[-1]
    assert final["metrics"]["backlog_files"] == 0 and final["metrics"]["backlog_bytes"] == 0
    assert final["status"] == "COMPLETED" and final["duration_seconds"] > 0
    assert final["metrics"]["num_input_rows"] == final["metrics"]["num_output_rows"] == 6


def test_backlog_counts_files_discovered_and_not_yet_committed(tmp_path):
    from headwater.autoloader import backlog
    from headwater.autoloader.state import FileState

    location = str(tmp_path / "state")
    assert backlog(location) is None  # no stream has run there
    state = FileState(location)
    state.record([(f"/landing/{i}.json", 100 + i, 1_000 + i) for i in range(3)], False)
    assert backlog(location) == (3, 303)
    state.mark_committed(state.max_seq() - 1)
    assert backlog(location) == (1, 102)
    state.close()


def test_flushes_into_an_existing_log_append_without_a_spark_job_and_read_the_same(spark, tmp_path):
    """The first flush creates the table (a Spark write); later ones append their rows as
    one Parquet file in one commit, no Spark job (a Spark write cost each flush about
    0.2 s). Spark reads them as the same rows it would have written itself."""
    from headwater.event_log_format import SCHEMA, FlowStatus
    from headwater.pipelines.runner.event_log import EventLog

    path = str(tmp_path / "events")
    log = EventLog(spark, path, "pipeline-id", "p", "update-1")
    log.flow_progress("bronze", "db.bronze", FlowStatus.COMPLETED, {"num_output_rows": 3})
    assert log.flush() == 1
    tracker = spark.sparkContext.statusTracker()
    jobs = set(tracker.getJobIdsForGroup(None))
    log.flow_progress("silver", "db.silver", FlowStatus.FAILED, error=ValueError("boom"))
    log.event("planning_information", "planned", {"chosen": "NO_OP"})
    assert log.flush() == 2
    assert set(tracker.getJobIdsForGroup(None)) == jobs  # no Spark job

    # the same rows written by Spark: equal, nested error and timestamps included
    rows = [log.row(event, n) for n, event in enumerate(log.events)]
    spark.createDataFrame(rows[1:], SCHEMA).write.format("delta").save(str(tmp_path / "same"))
    first = log.events[0].id
    got = spark.read.format("delta").load(path).where(f"id <> '{first}'").orderBy("id")
    want = spark.read.format("delta").load(str(tmp_path / "same")).orderBy("id")
    assert [r.asDict(recursive=True) for r in got.drop("sequence").collect()] == [
        r.asDict(recursive=True) for r in want.drop("sequence").collect()
    ]
    assert [r.error.exceptions[0].message for r in got.collect() if r.error] == ["boom"]
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").orderBy("version").collect()
    assert [(h.version, h.operation, h.operationParameters["mode"]) for h in history] == [
        (0, "WRITE", "Append"),
        (1, "WRITE", "Append"),
    ]
