"""headwater on a delta-spark session: delta-spark serves every Delta read, write and
statement and the session catalog every name; headwater's Auto Loader and table door work
on top of it, and what only headwater's engine does is a named error."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

import headwater
from headwater import api, engines
from headwater.autoloader import run_with_schema_evolution
from headwater.engines.delta_spark import DeltaSparkTable
from headwater.errors import ConcurrentModificationException, EngineUnsupportedError


def _plan(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def test_the_session_runs_delta_spark_and_headwater_stands_aside(spark, tmp_path):
    assert engines.of(spark) == engines.DELTA_SPARK
    path = str(tmp_path / "t")
    spark.range(5).write.format("delta").save(path)
    # delta-spark's own scan and SQL: its file index, its history, its DeltaTable
    assert "DeltaFileIndex" in _plan(spark.read.format("delta").load(path))
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
    assert [r["operation"] for r in history] == ["WRITE"]
    assert "engineInfo" in history[0].asDict() and "Delta-Lake" in str(history[0]["engineInfo"])
    # install() again is idempotent and keeps the engine
    assert headwater.install(spark) is spark and engines.of(spark) == engines.DELTA_SPARK


def test_a_local_session_sizes_delta_spark_jobs_to_its_task_slots(spark, tmp_path):
    """delta-spark's cluster defaults (50 snapshot partitions, VACUUM listing in up to 10000
    tasks) made its own VACUUM test take 105 s here; local[2] gets one task per slot."""
    from headwater.session import LOCAL_DELTA_SPARK_PARALLELISM

    assert [spark.conf.get(key) for key in LOCAL_DELTA_SPARK_PARALLELISM] == ["2", "2"]
    path = str(tmp_path / "t")
    spark.range(10).repartition(5).write.format("delta").save(path)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id < 5")
    jobs = spark.sparkContext.statusTracker()
    before = set(jobs.getJobIdsForGroup(None))
    spark.sql(f"VACUUM delta.`{path}`")
    tasks = [
        jobs.getStageInfo(stage).numTasks
        for job in set(jobs.getJobIdsForGroup(None)) - before
        for stage in (jobs.getJobInfo(job).stageIds if jobs.getJobInfo(job) else [])
        if jobs.getStageInfo(stage)
    ]
    assert tasks and max(tasks) <= 2, tasks
    assert spark.read.format("delta").load(path).count() == 5


def test_names_are_the_session_catalogs(spark):
    spark.sql("CREATE SCHEMA IF NOT EXISTS engine_names")  # delta-spark creates no schema
    spark.range(3).write.format("delta").saveAsTable("engine_names.numbers")
    table = api.table(spark, "engine_names.numbers", create=False)
    assert isinstance(table, DeltaSparkTable)
    detail = spark.sql("DESCRIBE DETAIL engine_names.numbers").first()
    assert table.location.rstrip("/") == str(detail["location"]).removeprefix("file:").rstrip("/")
    assert api.find(spark, "engine_names.no_such_table") is None
    assert api.find(spark, "no_such_database.numbers") is None
    spark.range(2).write.format("parquet").saveAsTable("engine_names.plain")
    assert api.find(spark, "engine_names.plain") is None  # not a Delta table
    spark.range(2).createOrReplaceTempView("engine_view")
    assert api.find(spark, "engine_view") is None  # a view is no table


def test_the_door_writes_merges_and_reads_through_delta_spark(spark, tmp_path):
    table = api.for_path(spark, str(tmp_path / "door"))
    first = table.write(spark.createDataFrame([(1, "a"), (2, "b")], "id int, v string"),
                        api.WriteSpec(mode="append", txn=("door-test", 1)))  # fmt: skip
    assert first.version == 0 and first.created and first.num_rows == 2
    again = table.write(spark.createDataFrame([(1, "a")], "id int, v string"),
                        api.WriteSpec(mode="append", txn=("door-test", 1)))  # fmt: skip
    assert again.version is None  # the transaction was recorded: nothing committed
    source = spark.createDataFrame([(2, "B"), (3, "c")], "id int, v string")
    clauses = [api.Clause("matched", "update"), api.Clause("not_matched", "insert")]
    merged = table.merge(source.alias("s"), "t.id = s.id", clauses, ("merge-test", 7), "t",
                         user_metadata="from the door")  # fmt: skip
    assert merged.version == 1 and merged.metrics["numTargetRowsUpdated"] == 1
    replay = table.merge(source.alias("s"), "t.id = s.id", clauses, ("merge-test", 7), "t")
    assert replay.version is None
    rows = sorted(tuple(r) for r in table.read().collect())
    assert rows == [(1, "a"), (2, "B"), (3, "c")]
    info = spark.sql(f"DESCRIBE HISTORY delta.`{table.location}`").first()
    assert info["operation"] == "MERGE" and info["userMetadata"] == "from the door"

    # rows the driver holds: appended, and replaced against the version they were read at
    schema = table.log().snapshot().schema
    assert not table.commits_arrow  # (they go through delta-spark's writer)
    added = table.append_arrow(pa.table({"id": pa.array([4], pa.int32()), "v": ["d"]}), schema)
    assert added.version == 2 and added.num_rows == 1
    read = table.log().snapshot()
    rows = pa.table({"id": pa.array([9], pa.int32()), "v": ["z"]})
    replaced = table.overwrite_arrow(rows, read, "replaced")
    assert replaced.version == 3 and [tuple(r) for r in table.read().collect()] == [(9, "z")]
    assert table.log().commit_info(3)["userMetadata"] == "replaced"
    with pytest.raises(ConcurrentModificationException, match="changed after version 2"):
        table.overwrite_arrow(rows, read)  # the table moved on since: nothing written
    assert table.log().version() == 3


def _land(folder, name, rows):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "w") as f:
        f.write("\n".join(json.dumps(r) for r in rows) + "\n")


def test_auto_loader_into_a_delta_spark_table_exactly_once_with_new_columns(spark, tmp_path):
    land, ckpt, out = (str(tmp_path / k) for k in ("land", "ckpt", "out"))

    def start():
        df = (spark.readStream.format("cloudFiles").option("cloudFiles.format", "json")
              .option("cloudFiles.schemaLocation", ckpt).load(land))  # fmt: skip
        writer = df.writeStream.format("delta").option("checkpointLocation", ckpt)
        return writer.option("mergeSchema", "true").trigger(availableNow=True).start(out)

    _land(land, "a.json", [{"id": 1}, {"id": 2}])
    run_with_schema_evolution(start)
    run_with_schema_evolution(start)  # nothing new: nothing committed twice
    _land(land, "b.json", [{"id": 3, "extra": "x"}])
    run_with_schema_evolution(start)  # stops for the new column, restarts with it
    rows = spark.read.format("delta").load(out).orderBy("id").collect()
    # JSON columns are strings unless cloudFiles.inferColumnTypes, as on the known platform
    assert [(r["id"], r["extra"]) for r in rows] == [("1", None), ("2", None), ("3", "x")]
    history = spark.sql(f"DESCRIBE HISTORY delta.`{out}`").collect()
    assert {r["operation"] for r in history} == {"STREAMING UPDATE"}  # delta-spark's own sink
    assert len(history) == 2  # one commit per batch of new files, none for the empty run


def test_copy_into_sql_loads_once_and_records_in_delta_sparks_commit(spark, tmp_path):
    from headwater.copyinto import create_schemaless_table, loaded_files

    land, out = tmp_path / "land", tmp_path / "t"
    _land(land, "a.json", [{"id": 1}, {"id": 2}])
    spark.sql(f"CREATE TABLE delta.`{out}` (id BIGINT) USING delta")
    statement = f"COPY INTO delta.`{out}` FROM '{land}' FILEFORMAT = JSON"
    assert tuple(spark.sql(statement).first()) == (2, 2, 0)
    assert tuple(spark.sql(statement).first()) == (0, 0, 0)  # loaded once
    last = spark.sql(f"DESCRIBE HISTORY delta.`{out}`").first()  # delta-spark's history
    assert last["version"] == 1 and json.loads(last["userMetadata"])["headwaterCopyInto"] == {
        "source": str(land), "files": ["a.json"], "corrupt": []
    }  # fmt: skip
    assert loaded_files(spark, f"delta.`{out}`") == [str(land / "a.json")]
    with pytest.raises(EngineUnsupportedError, match="delta_engine='headwater'"):
        create_schemaless_table(spark, "copyinto_on_delta_spark.no_columns")
