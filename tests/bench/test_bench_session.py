"""A bench given the suite's session runs in it and hands it back as it found it, so the
tests after it in the same process are unaffected by what the bench set or created."""

from __future__ import annotations

import argparse

import pytest

SHUFFLE = "spark.sql.shuffle.partitions"
TIME_ZONE = "spark.sql.session.timeZone"
ADDED = "spark.headwater.bench.probe"


def test_a_given_session_is_used_left_running_and_put_back(spark, bench_common, tmp_path):
    confs = dict(spark.conf.getAll)
    databases = {db.name for db in spark.catalog.listDatabases()}
    current = spark.catalog.currentDatabase()
    streams = {q.id for q in spark.streams.active}
    args = argparse.Namespace(master="local[1]")

    with bench_common.bench_session(args, "probe", tmp_path, spark) as session:
        assert session is spark
        session.conf.set(SHUFFLE, str(int(confs[SHUFFLE]) + 5))  # changed
        session.conf.set(ADDED, "1")  # added
        session.conf.unset(TIME_ZONE)  # removed (headwater's session sets it)
        session.sql("CREATE DATABASE bench_probe")
        session.range(3).write.format("delta").saveAsTable("bench_probe.t")
        session.range(3).write.format("delta").saveAsTable(f"{current}.bench_probe_t")
        session.range(1).createOrReplaceTempView("bench_probe_v")
        session.catalog.setCurrentDatabase("bench_probe")
        session.readStream.format("rate").load().writeStream.format("noop").start()

    assert dict(spark.conf.getAll) == confs
    assert {db.name for db in spark.catalog.listDatabases()} == databases
    assert spark.catalog.currentDatabase() == current
    assert {q.id for q in spark.streams.active} == streams
    names = {t.name for t in spark.catalog.listTables(current)}
    assert not names & {"bench_probe_t", "bench_probe_v"}
    with pytest.raises(Exception, match="bench_probe"):  # gone from headwater's catalog too
        spark.read.table(f"{current}.bench_probe_t").count()
    assert spark.range(2).count() == 2  # not stopped
