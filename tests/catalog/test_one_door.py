"""One door to the tables: every change of a named table's schema, whichever API or
statement makes it, reaches Spark's catalog mirror, so ``spark.sql`` resolves the table's
columns as they are now (not as they were when the mirror was last registered)."""

from __future__ import annotations

import pytest

from headwater.delta.tables import DeltaTable


def _sql_columns(spark, name: str) -> list[str]:
    """The columns Spark's own catalog resolves for ``name`` (what ``spark.sql`` sees)."""
    return spark.sql(f"SELECT * FROM {name}").columns


@pytest.fixture
def base(spark):
    """A named table (id, v) with two rows, at version 0."""
    made: list[str] = []

    def make(name: str) -> str:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
        spark.range(2).selectExpr("id", "'a' AS v").write.saveAsTable(name)
        made.append(name)
        return name

    yield make
    for name in made:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_merge_with_schema_evolution_through_for_name_reaches_sql(spark, base):
    name = base("door1.t")
    src = spark.range(1, 3).selectExpr("id", "'b' AS v", "id * 10 AS extra")
    (
        DeltaTable.forName(spark, name)
        .alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .withSchemaEvolution()
        .execute()
    )
    assert spark.table(name).columns == ["id", "v", "extra"]
    rows = spark.sql(f"SELECT id, extra FROM {name} ORDER BY id").collect()
    assert [tuple(r) for r in rows] == [(0, None), (1, 10), (2, 20)]


def test_merge_with_schema_evolution_through_the_table_path_reaches_sql(spark, base):
    name = base("door1.by_path")
    location = DeltaTable.forName(spark, name).path
    src = spark.range(1).selectExpr("id", "'b' AS v", "7 AS extra")
    (
        DeltaTable.forPath(spark, location)
        .alias("t")
        .merge(src.alias("s"), "t.id = s.id")
        .whenMatchedUpdateAll()
        .withSchemaEvolution()
        .execute()
    )
    assert spark.sql(f"SELECT extra FROM {name} WHERE id = 0").first().extra == 7


def test_write_with_merge_schema_by_path_reaches_sql_under_the_name(spark, base):
    name = base("door1.written_by_path")
    location = DeltaTable.forName(spark, name).path
    more = spark.range(1).selectExpr("5L AS id", "'c' AS v", "3 AS extra")
    more.write.format("delta").mode("append").option("mergeSchema", "true").save(location)
    assert spark.sql(f"SELECT extra FROM {name} WHERE id = 5").first().extra == 3


def test_restore_to_a_version_before_a_new_column_reaches_sql(spark, base):
    name = base("door1.restored")
    spark.sql(f"ALTER TABLE {name} ADD COLUMNS (extra INT)")
    assert _sql_columns(spark, name) == ["id", "v", "extra"]
    spark.sql(f"RESTORE TABLE {name} TO VERSION AS OF 0")
    assert _sql_columns(spark, name) == ["id", "v"]
    spark.sql(f"ALTER TABLE {name} ADD COLUMNS (other STRING)")
    DeltaTable.forName(spark, name).restoreToVersion(0)
    assert _sql_columns(spark, name) == ["id", "v"]


def test_every_schema_changing_write_by_name_reaches_sql(spark, base, tmp_path):
    """ALTER ADD COLUMNS, MERGE WITH SCHEMA EVOLUTION, ALTER COLUMN TYPE (type widening),
    mergeSchema and overwriteSchema writes, a streaming write with mergeSchema, CREATE OR
    REPLACE and DeltaTable.replace: after each, SQL sees the new columns."""
    name = base("door1.every")
    spark.sql(f"ALTER TABLE {name} ADD COLUMNS (a INT)")
    assert _sql_columns(spark, name) == ["id", "v", "a"]
    spark.sql(
        f"MERGE WITH SCHEMA EVOLUTION INTO {name} t USING (SELECT 5L AS id, 'c' AS v, 1 AS a, "
        "2 AS b) s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *"
    )
    assert _sql_columns(spark, name) == ["id", "v", "a", "b"]
    spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    spark.sql(f"ALTER TABLE {name} ALTER COLUMN a TYPE BIGINT")
    assert spark.sql(f"SELECT a FROM {name}").schema["a"].dataType.simpleString() == "bigint"
    more = spark.range(1).selectExpr("9L AS id", "'d' AS v", "1L AS a", "2 AS b", "3 AS c")
    more.write.mode("append").option("mergeSchema", "true").saveAsTable(name)
    assert _sql_columns(spark, name) == ["id", "v", "a", "b", "c"]
    stream_src = str(tmp_path / "src")
    spark.range(1).selectExpr("10L AS id", "'e' AS v", "4 AS d").write.format("delta").save(
        stream_src
    )
    (
        spark.readStream.format("delta")
        .load(stream_src)
        .writeStream.option("mergeSchema", "true")
        .option("checkpointLocation", str(tmp_path / "chk"))
        .trigger(availableNow=True)
        .toTable(name)
        .awaitTermination()
    )
    assert _sql_columns(spark, name) == ["id", "v", "a", "b", "c", "d"]
    spark.range(1).selectExpr("id", "'x' AS w").write.mode("overwrite").option(
        "overwriteSchema", "true"
    ).saveAsTable(name)
    assert _sql_columns(spark, name) == ["id", "w"]
    spark.sql(f"CREATE OR REPLACE TABLE {name} (k STRING, n INT) USING DELTA")
    assert _sql_columns(spark, name) == ["k", "n"]
    DeltaTable.replace(spark).tableName(name).addColumn("z", "INT").execute()
    assert _sql_columns(spark, name) == ["z"]
