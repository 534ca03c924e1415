"""Generated columns (``GENERATED ALWAYS AS``, the builder's ``generatedAlwaysAs``) and column
defaults (``DEFAULT``): computed where a write leaves them out, checked where it gives them,
on every write path, with the protocol features delta-spark expects."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from deltalake import DeltaTable as RsTable
from pyspark.errors import AnalysisException

from headwater.delta.tables import DeltaTable
from headwater.errors import ConstraintViolationError


def _fields(path):
    return {f["name"]: f for f in json.loads(RsTable(path).schema().to_json())["fields"]}


@pytest.fixture
def events(spark, tmp_path):
    path = str(tmp_path / "events")
    (
        DeltaTable.create(spark)
        .location(path)
        .addColumn("id", "BIGINT")
        .addColumn("ts", "TIMESTAMP")
        .addColumn("day", "DATE", generatedAlwaysAs="CAST(ts AS DATE)")
        .partitionedBy("day")
        .execute()
    )
    return path


def test_generated_column_is_logged_as_delta_specifies_and_computed_on_append(spark, events):
    field = _fields(events)["day"]
    assert field["metadata"]["delta.generationExpression"] == "CAST(ts AS DATE)"
    protocol = RsTable(events).protocol()
    assert protocol.min_writer_version >= 4  # generatedColumns (writer version 4)
    spark.createDataFrame(
        [(1, dt.datetime(2026, 3, 1, 10)), (2, dt.datetime(2026, 3, 2, 23))],
        "id bigint, ts timestamp",
    ).write.format("delta").mode("append").save(events)
    rows = spark.read.format("delta").load(events).orderBy("id").collect()
    assert [(r.id, r.day) for r in rows] == [(1, dt.date(2026, 3, 1)), (2, dt.date(2026, 3, 2))]
    assert sorted(RsTable(events).metadata().partition_columns) == ["day"]


def test_a_given_generated_value_must_match_its_expression(spark, events):
    good = spark.createDataFrame(
        [(1, dt.datetime(2026, 3, 1, 10), dt.date(2026, 3, 1))], "id bigint, ts timestamp, day date"
    )
    good.write.format("delta").mode("append").save(events)
    bad = spark.createDataFrame(
        [(2, dt.datetime(2026, 3, 1, 10), dt.date(2020, 1, 1))], "id bigint, ts timestamp, day date"
    )
    with pytest.raises(ConstraintViolationError, match="Generated Column day"):
        bad.write.format("delta").mode("append").save(events)
    with pytest.raises(Exception, match="Generated Column day"):
        spark.sql(
            f"INSERT INTO delta.`{events}` VALUES (3, timestamp'2026-03-01 00:00:00', date'1999-01-01')"
        )
    assert spark.read.format("delta").load(events).count() == 1


def test_update_and_merge_recompute_the_generated_column(spark, events):
    spark.sql(
        f"INSERT INTO delta.`{events}` (id, ts) VALUES (1, timestamp'2026-03-01 10:00:00'), "
        "(2, timestamp'2026-03-05 10:00:00')"
    )
    table = DeltaTable.forPath(spark, events)
    table.update("id = 1", {"ts": "timestamp'2026-04-09 08:00:00'"})
    source = spark.createDataFrame(
        [(2, dt.datetime(2026, 5, 1, 1)), (3, dt.datetime(2026, 6, 1, 1))],
        "id bigint, ts timestamp",
    )
    (
        table.alias("t")
        .merge(source.alias("s"), "t.id = s.id")
        .whenMatchedUpdate(set={"ts": "s.ts"})
        .whenNotMatchedInsert(values={"id": "s.id", "ts": "s.ts"})
        .execute()
    )
    rows = {r.id: r.day for r in table.toDF().collect()}
    assert rows == {1: dt.date(2026, 4, 9), 2: dt.date(2026, 5, 1), 3: dt.date(2026, 6, 1)}
    with pytest.raises(ConstraintViolationError, match="Generated Column"):
        table.update("id = 1", {"day": "date'2000-01-01'"})


def test_sql_generated_and_default_columns(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id INT, price DOUBLE, "
        "gross DOUBLE GENERATED ALWAYS AS (price * 1.2), "
        "status STRING DEFAULT 'new', qty INT NOT NULL DEFAULT 1) USING DELTA "
        "TBLPROPERTIES ('delta.feature.allowColumnDefaults' = 'supported')"
    )
    fields = _fields(path)
    assert fields["status"]["metadata"]["CURRENT_DEFAULT"] == "'new'"
    assert fields["gross"]["metadata"]["delta.generationExpression"] == "price * 1.2"
    assert fields["qty"]["nullable"] is False
    protocol = RsTable(path).protocol()
    assert {"allowColumnDefaults", "generatedColumns"} <= set(protocol.writer_features or [])
    spark.sql(f"INSERT INTO delta.`{path}` (id, price) VALUES (1, 10.0)")
    spark.createDataFrame([(2, 5.0, "sold")], "id int, price double, status string").write.format(
        "delta"
    ).mode("append").save(path)
    rows = sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())
    assert rows == [(1, 10.0, 12.0, "new", 1), (2, 5.0, 6.0, "sold", 1)]


def test_generated_columns_reading_missing_or_generated_columns_are_refused(spark, tmp_path):
    with pytest.raises(AnalysisException, match="does not have"):
        DeltaTable.create(spark).location(str(tmp_path / "a")).addColumn("a", "INT").addColumn(
            "b", "INT", generatedAlwaysAs="nope + 1"
        ).execute()
    with pytest.raises(AnalysisException, match="generated column"):
        DeltaTable.create(spark).location(str(tmp_path / "b")).addColumn("a", "INT").addColumn(
            "b", "INT", generatedAlwaysAs="a + 1"
        ).addColumn("c", "INT", generatedAlwaysAs="b + 1").execute()
