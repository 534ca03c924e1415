"""The typed service API: tables by name or path, written, read and streamed into without
the PySpark hooks."""

from __future__ import annotations

import pytest

import headwater
from headwater import api
from headwater.errors import TableNotFoundError


def test_a_named_table_is_written_read_time_travelled_and_streamed_without_hooks(spark, tmp_path):
    headwater.uninstall()
    try:
        orders = api.table(spark, "apitest.orders")
        assert not orders.exists()
        first = orders.write(spark.range(3).toDF("id"), api.WriteSpec(mode="append"))
        assert first.created and first.version == 0
        wider = spark.range(3, 5).selectExpr("id", "'x' AS note")
        orders.write(wider, api.WriteSpec(mode="append", merge_schema=True))
        assert orders.read().count() == 5 and orders.read(version=0).columns == ["id"]
        # Spark's own catalog was told about the new column
        assert spark.sql("SELECT * FROM apitest.orders").columns == ["id", "note"]
        copy = api.for_path(spark, str(tmp_path / "copy"))
        query = copy.start_stream(
            orders.read_stream(), str(tmp_path / "chk"), trigger={"availableNow": True}
        )
        query.awaitTermination()
        assert copy.read().count() == 5
        assert copy.delta_table().history(1).first().operation == "STREAMING UPDATE"
    finally:
        headwater.install(spark)


def test_a_missing_name_is_found_only_when_asked_to_create(spark):
    assert api.find(spark, "apitest.nothing") is None
    with pytest.raises(TableNotFoundError, match="apitest.nothing"):
        api.table(spark, "apitest.nothing", create=False)
