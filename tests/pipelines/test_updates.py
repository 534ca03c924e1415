"""Update kinds (refresh all, selected, full refresh, dry run), failures that stop only
what depends on them, retries, and materialized views after their inputs on reruns."""

from __future__ import annotations

import pytest
from pipeline_rows import orders

PIPELINE = """
from pyspark import pipelines as dp

source = spark.conf.get("source_dir")


@dp.table(table_properties={"quality": "bronze"})
def raw():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.schemaHints", "id bigint, amount bigint")
        .load(source + "/orders")
    )


@dp.materialized_view
def total():
    return spark.read.table("raw").groupBy().count()
"""


def test_refresh_all_then_mv_follows_its_inputs_on_every_rerun(project):
    project.source("p.py", PIPELINE)
    project.land("1.json", orders(0, 3))
    assert project.run().ok
    assert project.rows("total") == [(3,)]
    for i in range(2, 4):
        project.land(f"{i}.json", orders(i * 100, 2))
        result = project.run()
        assert result.ok
        assert list(result.flows) == ["raw", "total"]
        assert project.rows("total") == [(3 + 2 * (i - 1),)]


def test_refresh_selected_runs_only_those_datasets(project):
    project.source("p.py", PIPELINE)
    project.land("1.json", orders(0, 3))
    assert project.run().ok
    project.land("2.json", orders(10, 4))
    result = project.run(refresh=["raw"])
    assert list(result.flows) == ["raw"]
    assert project.count("raw") == 7
    assert project.rows("total") == [(3,)]  # not refreshed


def test_full_refresh_clears_the_table_and_reprocesses_every_file(project):
    project.source("p.py", PIPELINE)
    project.land("1.json", orders(0, 3))
    project.land("2.json", orders(10, 2))
    assert project.run().ok
    project.spark.sql(f"DELETE FROM {project.database}.raw WHERE id = 0")
    assert project.count("raw") == 4
    result = project.run(full_refresh=["raw"])
    assert result.ok
    assert result.flows["raw"].num_output_rows == 5
    assert project.count("raw") == 5
    assert project.run().flows["raw"].num_output_rows == 0  # nothing new after the refresh


def test_full_refresh_all_honours_reset_allowed_false(project):
    project.source(
        "p.py",
        PIPELINE.replace('{"quality": "bronze"}', '{"pipelines.reset.allowed": "false"}'),
    )
    project.land("1.json", orders(0, 3))
    assert project.run().ok
    project.spark.sql(f"DELETE FROM {project.database}.raw WHERE id = 0")
    result = project.run(full_refresh_all=True)
    assert result.ok
    assert project.count("raw") == 2  # kept: the table may not be reset
    assert project.rows("total") == [(2,)]
    assert any(e.event_type == "full_refresh_skipped" for e in result.events)


def test_dry_run_analyses_and_writes_nothing(project):
    project.source("p.py", PIPELINE)
    project.land("1.json", orders(0, 3))
    result = project.run(dry_run=True)
    assert result.ok
    assert result.flows == {}
    schema = result.graph.schemas[f"{project.database}.raw"]
    assert {"id", "amount", "region"} <= set(schema.fieldNames())
    assert not project.storage.exists()
    assert not project.spark.catalog.tableExists(f"{project.database}.raw")


FAILING = """
from pyspark import pipelines as dp
from pyspark.sql import functions as F


@dp.materialized_view
def good():
    return spark.range(5)


@dp.materialized_view
def bad():
    return spark.range(3).select(F.raise_error(F.lit("boom")).cast("int").alias("x"))


@dp.materialized_view
def after_bad():
    return spark.read.table("bad")


@dp.materialized_view
def after_good():
    return spark.read.table("good").where("id > 2")
"""


def test_a_failing_flow_skips_only_its_downstream(project):
    project.source("p.py", FAILING)
    result = project.run()
    assert not result.ok
    assert result.state == "FAILED"
    status = {n: r.status for n, r in result.flows.items()}
    assert status == {
        "good": "COMPLETED",
        "bad": "FAILED",
        "after_bad": "SKIPPED",
        "after_good": "COMPLETED",
    }
    assert "boom" in str(result.flows["bad"].error)
    assert project.count("after_good") == 2
    assert not project.spark.catalog.tableExists(f"{project.database}.after_bad")


def test_retries_run_a_flow_again_before_failing_it(project):
    project.source("p.py", FAILING)
    result = project.run(refresh=["bad"], max_retries=2)
    retries = [
        e
        for e in result.events
        if e.event_type == "flow_progress" and e.details["status"] == "RETRYING"
    ]
    assert len(retries) == 2
    assert result.flows["bad"].status == "FAILED"


def test_cluster_by_makes_liquid_clustered_tables_that_optimize_clusters(project):
    project.source(
        "p.py",
        PIPELINE.replace(
            "@dp.table(table_properties", '@dp.table(cluster_by=["id"], table_properties'
        ).replace("@dp.materialized_view", '@dp.materialized_view(cluster_by=["count"])'),
    )
    project.land("1.json", orders(0, 3))
    assert project.run().ok
    project.land("2.json", orders(10, 2))
    assert project.run().ok
    raw = f"{project.database}.raw"
    detail = project.spark.sql(f"DESCRIBE DETAIL {raw}").first()
    assert detail.clusteringColumns == ["id"] and "clustering" in detail.tableFeatures
    view = project.spark.sql(f"DESCRIBE DETAIL {project.database}.total").first()
    assert view.clusteringColumns == ["count"]
    metrics = project.spark.sql(f"OPTIMIZE {raw}").first().metrics
    assert metrics.numFilesRemoved >= 2 and project.count("raw") == 5


SETTINGS_PY = """
from pyspark import pipelines as dp

@dp.materialized_view(spark_conf={"hw.test.flow": "flow", "hw.test.caller": "flow"})
def seen():
    return spark.createDataFrame(
        [(spark.conf.get("hw.test.spec"), spark.conf.get("hw.test.sql"))],
        "spec string, sql string",
    )
"""


def test_the_updates_settings_are_seen_by_its_code_and_put_back_when_it_ends(project):
    """The spec's configuration, a SQL file's SET and a flow's spark_conf are session
    settings while the update runs, and the caller's session is left as the update found it
    (a later update, or the caller's own queries, never see another pipeline's settings)."""
    spark = project.spark
    project.source("a_settings.sql", "SET hw.test.sql = sql;\n")
    project.source("b_seen.py", SETTINGS_PY)
    project.spec(configuration={"hw.test.spec": "spec", "hw.test.caller": "spec"})
    spark.conf.set("hw.test.caller", "caller")
    try:
        result = project.run()
        assert result.ok, result.failed()
        assert project.rows("seen") == [("spec", "sql")]
        assert spark.conf.get("hw.test.caller") == "caller"  # set twice, back once
        for key in ("hw.test.spec", "hw.test.sql", "hw.test.flow"):
            assert spark.conf.get(key, None) is None, key
    finally:
        spark.conf.unset("hw.test.caller")


def test_a_static_setting_is_left_as_the_session_started_or_refused_naming_where_to_give_it(
    spark, tmp_path
):
    """A spec's static setting (Spark reads it only as it starts) that the running session
    has already is left alone; another value cannot apply to it, and says where to give it
    (the command line, or headwater.session before the session starts)."""
    from headwater.errors import PipelineDefinitionError
    from headwater.pipelines.define.settings import SessionSettings

    settings = SessionSettings(spark)
    memory = spark.sparkContext.getConf().get("spark.driver.memory")
    settings.set("spark.driver.memory", memory)  # as it started: nothing to do
    with pytest.raises(PipelineDefinitionError) as e:
        settings.set("spark.jars", str(tmp_path / "connector.jar"), "spark-pipeline.yml")
    assert e.value.error_class == "PIPELINE_SPEC_INVALID_CONFIGURATION"
    assert "Configuration 'spark.jars' cannot be set in a running session" in str(e.value)
    assert "headwater pipelines run --conf spark.jars=..." in str(e.value)
    assert "headwater.session(conf={'spark.jars': ...})" in str(e.value)
    settings.restore()
