"""Time travel by a suffix of the path, as delta-spark and the known platform read it:
``delta.`/p@v1``` is version 1 and ``delta.`/p@yyyyMMddHHmmssSSS``` the version at that
time, the same rows as ``VERSION AS OF`` / ``TIMESTAMP AS OF``; a version that does not
exist is a one-line error; a table whose own path holds an ``@`` is still read as itself."""

from __future__ import annotations

import datetime as dt

import pytest

import headwater
from headwater.delta.log.delta_log import DeltaLog
from headwater.sql import SqlError


def ids(spark, text: str) -> list[int]:
    return sorted(r[0] for r in headwater.sql(spark, text).collect())


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory):
    """Versions 0, 1, 2 holding ids 0, 0-1, 0-2."""
    path = str(tmp_path_factory.mktemp("ttp") / "t")
    for v in range(3):
        spark.range(v, v + 1).write.format("delta").mode("append").save(path)
    return path


def stamp(path: str, version: int) -> str:
    ms = next(h["timestamp"] for h in DeltaLog(path).history() if h["version"] == version)
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y%m%d%H%M%S%f")[:-3]


def test_version_suffix_in_the_path(spark, table):
    assert ids(spark, f"SELECT id FROM delta.`{table}@v1`") == [0, 1]
    assert ids(spark, f"SELECT id FROM delta.`{table}@V0` AS t WHERE t.id >= 0") == [0]
    assert ids(spark, f"SELECT id FROM delta.`{table}`") == [0, 1, 2]
    same = f"SELECT id FROM delta.`{table}` VERSION AS OF 1"
    assert ids(spark, same) == ids(spark, f"SELECT id FROM delta.`{table}@v1`")


def test_timestamp_suffix_in_the_path(spark, table):
    assert ids(spark, f"SELECT id FROM delta.`{table}@{stamp(table, 1)}`") == [0, 1]


def test_missing_version_and_bad_suffix_are_one_line_errors(spark, table):
    with pytest.raises(Exception) as missing:
        headwater.sql(spark, f"SELECT id FROM delta.`{table}@v9`").collect()
    first = str(missing.value).splitlines()[0]
    assert "9" in first and "version" in first.lower()
    with pytest.raises(SqlError, match="not a table version"):
        headwater.sql(spark, f"SELECT id FROM delta.`{table}@x1`")


def test_a_table_whose_path_has_an_at_sign_is_read_as_itself(spark, tmp_path):
    path = str(tmp_path / "odd@v1")
    spark.range(5).write.format("delta").save(path)
    assert ids(spark, f"SELECT id FROM delta.`{path}`") == [0, 1, 2, 3, 4]


def test_three_part_name_with_version_suffix(spark, table):
    spark.sql("CREATE DATABASE IF NOT EXISTS ttp")
    spark.read.format("delta").load(table).write.saveAsTable("ttp.named")
    spark.range(3, 4).write.mode("append").saveAsTable("ttp.named")
    assert ids(spark, "SELECT id FROM ttp.named@v0") == [0, 1, 2]
    assert ids(spark, "SELECT id FROM spark_catalog.ttp.named@v0") == [0, 1, 2]
