"""CHECK constraints: added and dropped through SQL, and enforced, as delta-spark does, on
every row an append, UPDATE, MERGE or COPY INTO writes (false or null fails the write,
naming the constraint and the row's values; nothing is committed)."""

from __future__ import annotations

import pytest
from deltalake import DeltaTable as RsTable

import headwater
from headwater.delta.tables import DeltaTable
from headwater.errors import ConstraintViolationError
from headwater.sql.text import SqlError


def _version(path: str) -> int:
    return RsTable(path).version()


@pytest.fixture
def orders(spark, tmp_path):
    """A table of 4 orders with ``CHECK (qty > 0)`` added through SQL, and its path."""
    path = str(tmp_path / "orders")
    spark.createDataFrame(
        [(1, 5, "a"), (2, 1, "b"), (3, 2, "c"), (4, 9, "d")], "id long, qty int, note string"
    ).write.format("delta").save(path)
    headwater.sql(spark, f"ALTER TABLE delta.`{path}` ADD CONSTRAINT qty_pos CHECK (qty > 0)")
    return path


def _ids(spark, path):
    return sorted(r.id for r in spark.read.format("delta").load(path).collect())


def test_add_constraint_is_recorded_where_other_engines_read_it(spark, orders):
    table = RsTable(orders)
    assert table.metadata().configuration["delta.constraints.qty_pos"] == "qty > 0"
    assert table.protocol().min_writer_version == 3  # writers must enforce it
    assert table.history(1)[0]["operation"] == "ADD CONSTRAINT"
    # Spark SQL that delta-rs's own add_constraint cannot print back is fine here.
    headwater.sql(
        spark, f"ALTER TABLE delta.`{orders}` ADD CONSTRAINT short CHECK (length(note) < 3)"
    )
    with pytest.raises(
        ConstraintViolationError, match=r"(?s)short \(LENGTH\(note\) < 3\).*note : long"
    ):
        spark.createDataFrame([(9, 1, "long")], "id long, qty int, note string").write.format(
            "delta"
        ).mode("append").save(orders)


def test_an_append_breaking_a_constraint_fails_naming_it_and_the_values(spark, orders):
    before = _version(orders)
    bad = spark.createDataFrame([(5, 3, "ok"), (6, -2, "bad")], "id long, qty int, note string")
    with pytest.raises(ConstraintViolationError, match=r"qty_pos \(qty > 0\).*\n - qty : -2"):
        bad.write.format("delta").mode("append").save(orders)
    assert _version(orders) == before and _ids(spark, orders) == [1, 2, 3, 4]
    nulls = spark.createDataFrame([(7, None, "n")], "id long, qty int, note string")
    with pytest.raises(ConstraintViolationError, match=r"qty : null"):  # null fails, too
        nulls.write.format("delta").mode("append").save(orders)
    spark.createDataFrame([(5, 3, "ok")], "id long, qty int, note string").write.format(
        "delta"
    ).mode("append").save(orders)
    assert _ids(spark, orders) == [1, 2, 3, 4, 5]


def test_update_and_merge_breaking_a_constraint_commit_nothing(spark, orders):
    before = _version(orders)
    table = DeltaTable.forPath(spark, orders)
    with pytest.raises(ConstraintViolationError, match="qty_pos"):
        table.update("id = 2", {"qty": "qty - 5"})
    src = spark.createDataFrame([(3, 0, "zero"), (9, 1, "new")], "id long, qty int, note string")
    with pytest.raises(ConstraintViolationError, match=r"qty : 0"):
        (
            table.alias("t").merge(src.alias("s"), "t.id = s.id")
            .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
        )  # fmt: skip
    assert _version(orders) == before
    table.update("id = 2", {"qty": "qty + 5"})  # still satisfied: written
    rows = {r.id: r.qty for r in spark.read.format("delta").load(orders).collect()}
    assert rows == {1: 5, 2: 6, 3: 2, 4: 9}


def test_adding_a_constraint_existing_rows_break_fails_and_adds_nothing(spark, orders):
    with pytest.raises(SqlError, match=r"2 rows .* violate .*\(qty < 5\)"):
        headwater.sql(spark, f"ALTER TABLE delta.`{orders}` ADD CONSTRAINT small CHECK (qty < 5)")
    assert "delta.constraints.small" not in RsTable(orders).metadata().configuration
    with pytest.raises(SqlError, match="already exists"):
        headwater.sql(spark, f"ALTER TABLE delta.`{orders}` ADD CONSTRAINT qty_pos CHECK (qty > 1)")


def test_drop_constraint_lifts_it(spark, orders):
    headwater.sql(spark, f"ALTER TABLE delta.`{orders}` DROP CONSTRAINT qty_pos")
    assert "delta.constraints.qty_pos" not in RsTable(orders).metadata().configuration
    spark.createDataFrame([(6, -2, "now fine")], "id long, qty int, note string").write.format(
        "delta"
    ).mode("append").save(orders)
    assert _ids(spark, orders) == [1, 2, 3, 4, 6]
    with pytest.raises(SqlError, match="nonexistent constraint 'qty_pos'"):
        headwater.sql(spark, f"ALTER TABLE delta.`{orders}` DROP CONSTRAINT qty_pos")
    headwater.sql(spark, f"ALTER TABLE delta.`{orders}` DROP CONSTRAINT IF EXISTS qty_pos")


def test_a_constraint_on_a_deletion_vector_table_holds_for_vector_merges(spark, tmp_path):
    path = str(tmp_path / "dv")
    (
        DeltaTable.create(spark).location(path).addColumn("id", "bigint").addColumn("qty", "int")
        .property("delta.enableDeletionVectors", "true").execute()
    )  # fmt: skip
    spark.createDataFrame([(1, 1), (2, 2)], "id long, qty int").write.format("delta").mode(
        "append"
    ).save(path)
    headwater.sql(spark, f"ALTER TABLE delta.`{path}` ADD CONSTRAINT qty_pos CHECK (qty > 0)")
    before = _version(path)
    src = spark.createDataFrame([(1, -1)], "id long, qty int")
    with pytest.raises(ConstraintViolationError, match="qty_pos"):
        (
            DeltaTable.forPath(spark, path).alias("t").merge(src.alias("s"), "t.id = s.id")
            .whenMatchedUpdateAll().execute()
        )  # fmt: skip
    assert _version(path) == before and not list((tmp_path / "dv").glob("deletion_vector_*"))


def test_a_not_null_column_another_engine_declared_takes_no_null(spark, tmp_path):
    import deltalake
    import pyarrow as pa

    path = str(tmp_path / "rs")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
    deltalake.write_deltalake(path, pa.table({"id": [1], "v": ["a"]}, schema=schema))
    nulls = spark.createDataFrame([(2, "b"), (None, "c")], "id long, v string")
    with pytest.raises(
        ConstraintViolationError, match="NOT NULL constraint violated for column: id"
    ):
        nulls.write.format("delta").mode("append").save(path)
    with pytest.raises(ConstraintViolationError, match="NOT NULL .* id"):
        DeltaTable.forPath(spark, path).update("id = 1", {"id": "null"})
    assert _version(path) == 0
    spark.createDataFrame([(2, None)], "id long, v string").write.format("delta").mode(
        "append"
    ).save(path)  # v is nullable
    assert _ids(spark, path) == [1, 2]
