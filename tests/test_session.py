"""The ready session: defaults, install() on a user's session, executors in other processes."""

from __future__ import annotations

import textwrap

import pytest

from tests.conftest import run_python


def test_session_defaults(spark):
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert spark.conf.get("spark.sql.python.filterPushdown.enabled") == "true"
    assert spark.conf.get("spark.sql.parquet.outputTimestampType") == "TIMESTAMP_MICROS"
    # One shuffle partition per task slot of the local master.
    assert spark.conf.get("spark.sql.shuffle.partitions") == str(
        spark.sparkContext.defaultParallelism
    )


@pytest.mark.parametrize(
    ("master", "cores"),
    [("local", 1), ("local[3]", 3), ("local[2,4]", 2), ("local-cluster[2,1,1024]", 2)],
)
def test_local_masters_shuffle_into_one_partition_per_task_slot(master, cores):
    from headwater.session import _cores

    assert _cores(master) == cores


def test_install_is_idempotent(spark):
    import headwater

    assert headwater.install(spark) is spark
    assert headwater.install(spark) is spark


FS_MANAGER = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
)
FC_MANAGER = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileContextBasedCheckpointFileManager"
)
MANAGER_CONF = "spark.sql.streaming.checkpointFileManagerClass"


def test_streams_checkpoint_through_the_file_system_manager_unless_the_user_chose(spark):
    import headwater

    assert spark.conf.get(MANAGER_CONF) == FS_MANAGER
    spark.conf.set(MANAGER_CONF, FC_MANAGER)
    try:
        headwater.install(spark)
        assert spark.conf.get(MANAGER_CONF) == FC_MANAGER  # the user's choice is kept
    finally:
        spark.conf.set(MANAGER_CONF, FS_MANAGER)


def test_local_writes_and_checkpoints_leave_no_hadoop_checksum_files(spark, tmp_path):
    """Spark's Parquet files, a Delta table and a stream's checkpoint: no ``.x.crc`` beside
    them (each cost a child process), and the checkpoint's logs are whole."""
    spark.range(3).write.parquet(str(tmp_path / "p"))
    source = tmp_path / "p"
    query = (
        spark.readStream.schema("id long")
        .parquet(str(source))
        .writeStream.format("delta")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start(str(tmp_path / "t"))
    )
    query.awaitTermination(120)
    assert sorted(r.id for r in spark.read.format("delta").load(str(tmp_path / "t")).collect()) == [
        0,
        1,
        2,
    ]
    names = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")}
    assert {"ck/offsets/0", "ck/commits/0"} <= names, names
    hadoop_checksums = [n for n in names if n.rsplit("/", 1)[-1].startswith(".")]
    assert not [n for n in hadoop_checksums if n.endswith(".crc")], hadoop_checksums
    assert not [n for n in names if n.endswith(".tmp")]


@pytest.mark.slow
def test_local_cluster_executors_in_other_processes_read_and_write(tmp_path):
    code = textwrap.dedent(
        f"""
        import os, headwater
        spark = headwater.session(master="local-cluster[2,1,1024]", warehouse={str(tmp_path / "wh")!r})
        pids = spark.sparkContext.parallelize(range(4), 4).map(lambda _: os.getpid()).distinct().collect()
        assert os.getpid() not in pids, pids
        p = {str(tmp_path / "t")!r}
        spark.range(1000).selectExpr("id", "id % 4 as k").write.format("delta").option("partitionBy", "k").save(p)
        from headwater.delta.read.batch import python_read
        from headwater.delta.log.delta_log import DeltaLog
        assert python_read(spark, DeltaLog(p).snapshot()).count() == 1000
        src = spark.readStream.format("delta").load(p)
        src.writeStream.format("delta").option("checkpointLocation", p + "_ck").trigger(availableNow=True).start(p + "_out").awaitTermination()
        spark.read.format("delta").load(p + "_out").write.saveAsTable("lc.t")
        print("ROWS", spark.sql("SELECT count(*) FROM lc.t").first()[0])
        """
    )
    out = run_python(code, timeout=400).stdout
    assert "ROWS 1000" in out


def _started_workers(tmp_path, code: str, pythonpath: list[str]) -> tuple[list[str], str]:
    """The arguments of the Python processes a child session started (a ``sitecustomize``
    that every Python on the path runs records each one's), and the child's output."""
    import os

    record = tmp_path / "started.txt"
    recorder = tmp_path / "recorder"
    recorder.mkdir()
    (recorder / "sitecustomize.py").write_text(
        f"import sys\nwith open({str(record)!r}, 'a') as f: f.write(' '.join(sys.argv) + '\\n')\n"
    )
    path = os.pathsep.join([*pythonpath, str(recorder)])
    out = run_python(code, env={"PYTHONPATH": path}).stdout
    return record.read_text().splitlines(), out


@pytest.mark.slow
def test_a_session_answers_sparks_data_source_lookup_without_a_python_worker(tmp_path):
    """Spark lists the path's ``pyspark_*`` packages in a Python worker of its own at the
    first registration; with none on the path, the session tells it so."""
    code = "import headwater; spark = headwater.session(); spark.range(3).collect()"
    started, _ = _started_workers(tmp_path, code, [])
    assert started and not [s for s in started if "lookup_data_sources" in s], started


@pytest.mark.slow
def test_a_pyspark_package_on_the_path_is_still_found_by_sparks_own_lookup(tmp_path):
    """An installed ``pyspark_*`` package with a ``DefaultSource`` (Spark's convention for
    data sources registered by installing them) is still looked up, and readable."""
    package = tmp_path / "packages" / "pyspark_hwprobe"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        textwrap.dedent(
            """
            from pyspark.sql.datasource import DataSource, DataSourceReader

            class _Reader(DataSourceReader):
                def read(self, partition):
                    yield (7,)

            class DefaultSource(DataSource):
                @classmethod
                def name(cls):
                    return "hwprobe"

                def schema(self):
                    return "n int"

                def reader(self, schema):
                    return _Reader()
            """
        )
    )
    code = (
        "import headwater; spark = headwater.session(); "
        "print('ROWS', spark.read.format('hwprobe').load().collect())"
    )
    started, out = _started_workers(tmp_path, code, [str(package.parent)])
    assert [s for s in started if "lookup_data_sources" in s], started
    assert "ROWS [Row(n=7)]" in out
