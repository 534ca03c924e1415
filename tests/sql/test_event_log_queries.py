"""The known platform's event-log monitoring queries, as its docs and courses print them
(only the ``event_log`` argument changed), on the event log of a real pipeline update: they
run, give the update's numbers, and name their columns as the platform does (a ``:`` path
by its last key)."""

from __future__ import annotations

import json

import pytest
import yaml

from headwater import pipelines

PIPELINE_SQL = """
CREATE OR REFRESH STREAMING TABLE orders_bronze (
  CONSTRAINT valid_amount EXPECT (amount > 0),
  CONSTRAINT has_id EXPECT (id IS NOT NULL) ON VIOLATION DROP ROW
) AS SELECT * FROM STREAM read_files('${source_dir}', format => 'json');

CREATE OR REFRESH MATERIALIZED VIEW order_totals
AS SELECT count(*) AS n, sum(amount) AS total FROM orders_bronze;
"""
ROWS = [
    {"id": 1, "amount": 10},
    {"id": 2, "amount": -5},  # warned: kept
    {"id": None, "amount": 7},  # dropped
    {"id": 4, "amount": 0},  # warned: kept
    {"id": 5, "amount": 3},
]


@pytest.fixture(scope="module")
def event_log(spark, tmp_path_factory):
    """One update of a two-flow pipeline with expectations; the view ``event_log_raw`` and
    ``latest_update`` made as the docs make them."""
    root = tmp_path_factory.mktemp("event_log_queries")
    (root / "landing").mkdir()
    (root / "landing" / "orders.json").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (root / "transformations").mkdir()
    (root / "transformations" / "orders.sql").write_text(PIPELINE_SQL)
    spec = {
        "name": "elq",
        "storage": str(root / "storage"),
        "database": "elq",
        "configuration": {"source_dir": str(root / "landing")},
        "libraries": [{"glob": {"include": "transformations/**"}}],
    }
    (root / "spark-pipeline.yml").write_text(yaml.safe_dump(spec))
    result = pipelines.run(root, spark)
    assert result.ok
    storage = str(root / "storage")
    spark.sql(f"CREATE OR REPLACE TEMP VIEW event_log_raw AS SELECT * FROM event_log('{storage}')")
    spark.sql("""
      CREATE OR REPLACE TEMP VIEW latest_update AS
      SELECT origin.update_id AS id FROM event_log_raw
      WHERE event_type = 'create_update' ORDER BY timestamp DESC LIMIT 1""")
    yield storage
    spark.catalog.dropTempView("event_log_raw")
    spark.catalog.dropTempView("latest_update")


def test_data_quality_with_spaced_paths_and_schema_of_json(spark, event_log):
    for path, schema in [
        (
            "details :flow_progress :data_quality :expectations",
            '"array<struct<name: string, dataset: string, passed_records: int, '
            'failed_records: int>>"',
        ),
        (
            "details:flow_progress:data_quality:expectations",
            """schema_of_json("[{'name':'str', 'dataset':'str', 'passed_records':42, """
            """'failed_records':42}]")""",
        ),
    ]:
        quality = spark.sql(f"""
          SELECT
            row_expectations.dataset as dataset,
            row_expectations.name as expectation,
            SUM(row_expectations.passed_records) as passing_records,
            SUM(row_expectations.failed_records) as failing_records
          FROM
            (
              SELECT
                explode(
                  from_json(
                    {path},
                    {schema}
                  )
                ) row_expectations
              FROM
                event_log_raw,
                latest_update
              WHERE
                event_type = 'flow_progress'
                AND origin.update_id = latest_update.id
            )
          GROUP BY
            row_expectations.dataset,
            row_expectations.name
        """)
        assert quality.columns == ["dataset", "expectation", "passing_records", "failing_records"]
        got = sorted(tuple(r)[1:] for r in quality.collect())
        assert got == [("has_id", 4, 1), ("valid_amount", 3, 2)]  # each rule sees every row


def test_lineage_user_actions_and_dropped_records_are_named_by_their_last_key(spark, event_log):
    lineage = spark.sql("""
      SELECT details:flow_definition.output_dataset, details:flow_definition.input_datasets
      FROM event_log_raw, latest_update
      WHERE event_type = 'flow_definition' AND origin.update_id = latest_update.id
    """)
    assert lineage.columns == ["output_dataset", "input_datasets"]
    edges = {(r.output_dataset, r.input_datasets) for r in lineage.collect()}
    assert edges == {("elq.orders_bronze", "[]"), ("elq.order_totals", '["elq.orders_bronze"]')}

    actions = spark.sql("""
      SELECT timestamp, details:user_action:action, details:user_action:user_name
      FROM event_log_raw WHERE event_type = 'user_action'
    """)
    assert actions.columns == ["timestamp", "action", "user_name"]
    assert [r.action for r in actions.collect()] == ["START"]

    dropped = spark.sql(f"""
      SELECT origin.flow_name, details:flow_progress.data_quality.dropped_records
      FROM event_log('{event_log}')
      WHERE event_type = 'flow_progress' AND details:flow_progress.status = 'COMPLETED'
        AND origin.flow_name = 'orders_bronze'
    """)
    assert dropped.columns == ["flow_name", "dropped_records"]
    assert [r.dropped_records for r in dropped.collect()] == ["1"]


def test_metrics_backlog_and_cluster_resources(spark, event_log):
    metrics = spark.sql("""
      SELECT timestamp, origin.flow_name, details :flow_progress.metrics
      FROM event_log_raw
      WHERE event_type = 'flow_progress' AND details:flow_progress.metrics IS NOT NULL
        AND origin.flow_name = 'orders_bronze' AND details:flow_progress.status = 'COMPLETED'
    """)
    assert metrics.columns == ["timestamp", "flow_name", "metrics"]
    assert json.loads(metrics.first().metrics)["num_output_rows"] == 4

    backlog = spark.sql("""
      SELECT
        timestamp,
        Double(details :flow_progress.metrics.backlog_bytes) as backlog_bytes,
        Double(details :flow_progress.metrics.backlog_files) as backlog_files
      FROM
        event_log_raw,
        latest_update
      WHERE
        event_type = 'flow_progress'
        AND
        origin.update_id = latest_update.id
    """)
    assert backlog.columns == ["timestamp", "backlog_bytes", "backlog_files"]
    final = backlog.where("backlog_files IS NOT NULL").orderBy("timestamp").collect()[-1]
    assert (final.backlog_bytes, final.backlog_files) == (0.0, 0.0)

    resources = spark.sql("""
      SELECT
        timestamp,
        Double(details:cluster_resources.avg_num_queued_tasks) as queue_size,
        Double(details:cluster_resources.avg_task_slot_utilization) as utilization,
        Double(details:cluster_resources.num_executors) as current_executors,
        details :cluster_resources.state as autoscaling_state
      FROM
        event_log_raw,
        latest_update
      WHERE
        event_type = 'cluster_resources'
        AND
        origin.update_id = latest_update.id
    """)  # a local session does not autoscale: no such events, the query still runs
    assert resources.columns == [
        "timestamp", "queue_size", "utilization", "current_executors", "autoscaling_state"
    ]  # fmt: skip
    assert resources.count() == 0
