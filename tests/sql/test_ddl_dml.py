"""CREATE / CTAS / REPLACE, INSERT, UPDATE, DELETE, MERGE, ALTER, DROP through SQL."""

from __future__ import annotations

import os

import pytest
from deltalake import DeltaTable as RsTable

import headwater
from headwater.errors import TableNotFoundError


def q(spark, text):
    return headwater.sql(spark, text)


def rows(spark, text):
    return [tuple(r) for r in q(spark, text).collect()]


def table(spark, name):
    """Rows of a table, sorted (read through the native path, cheaper than SQL's)."""

    def key(row):
        return [(v is None, v if isinstance(v, (int, float)) else 0, str(v)) for v in row]

    return sorted((tuple(r) for r in spark.table(name).collect()), key=key)


def ops(path, n=None):
    """Operation names of the table's history, newest first."""
    return [h.get("headwaterOperation") or h["operation"] for h in RsTable(path).history(n)]


def test_create_table_with_columns_partitions_location_properties_comment(spark, tmp_path):
    loc = str(tmp_path / "ext")
    q(
        spark,
        f"""CREATE TABLE IF NOT EXISTS sqlc.events (
              id BIGINT NOT NULL, amount DECIMAL(10, 2), tags ARRAY<STRING>, day DATE COMMENT 'partition')
            USING DELTA PARTITIONED BY (day) LOCATION '{loc}'
            TBLPROPERTIES ('owner' = 'team-a', delta.appendOnly = false) COMMENT 'raw events'""",
    )
    meta = RsTable(loc).metadata()
    assert meta.partition_columns == ["day"]
    assert meta.configuration == {"delta.appendOnly": "false", "owner": "team-a"}
    assert meta.description == "raw events"
    assert ops(loc)[-1] == "CREATE TABLE"
    schema = spark.table("sqlc.events").schema
    assert [(f.name, f.dataType.simpleString()) for f in schema] == [
        ("id", "bigint"), ("amount", "decimal(10,2)"), ("tags", "array<string>"), ("day", "date"),
    ]  # fmt: skip
    # IF NOT EXISTS on an existing table: nothing happens
    q(spark, "CREATE TABLE IF NOT EXISTS sqlc.events (x INT) USING DELTA")
    assert len(RsTable(loc).history()) == len(ops(loc))
    # by path, no name; then registered under a name from its LOCATION
    path = str(tmp_path / "bypath")
    q(spark, f"CREATE TABLE delta.`{path}` (a INT, b STRING) USING DELTA")
    q(spark, f"CREATE TABLE sqlc.registered USING DELTA LOCATION '{path}'")
    q(spark, "INSERT INTO sqlc.registered VALUES (1, 'x')")
    assert table(spark, f"delta.`{path}`") == [(1, "x")]


def test_ctas_and_create_or_replace(spark):
    result = rows(
        spark,
        "CREATE TABLE sqlc.ctas USING DELTA PARTITIONED BY (k) "
        "AS SELECT id, id % 2 AS k, concat('v', id) AS v FROM range(5)",
    )
    assert result == []  # as delta-spark: no result rows
    path = spark._headwater_catalog.require("sqlc.ctas").location
    assert RsTable(path).metadata().partition_columns == ["k"]
    assert rows(spark, "SELECT count(*), sum(id) FROM sqlc.ctas") == [(5, 10)]
    with pytest.raises(headwater.sql.SqlError, match="already exists"):
        q(spark, "CREATE TABLE sqlc.ctas AS SELECT 1 AS id")
    assert rows(spark, "CREATE TABLE IF NOT EXISTS sqlc.ctas AS SELECT 1 AS id") == []
    # replace with a query: new schema and data, same table, history kept
    q(spark, "CREATE OR REPLACE TABLE sqlc.ctas AS SELECT 'x' AS name")
    assert table(spark, "sqlc.ctas") == [("x",)]
    assert RsTable(path).metadata().partition_columns == []
    # replace with columns: empty table with the new schema
    q(spark, "CREATE OR REPLACE TABLE sqlc.ctas (a INT, b STRING) USING DELTA")
    assert spark.table("sqlc.ctas").columns == ["a", "b"]
    assert spark.table("sqlc.ctas").count() == 0
    assert len(ops(path)) == 3
    assert rows(spark, "SELECT count(*) FROM sqlc.ctas VERSION AS OF 0") == [(5,)]


def test_insert_into_and_overwrite(spark, tmp_path):
    path = str(tmp_path / "t")
    q(spark, f"CREATE TABLE delta.`{path}` (id INT, name STRING, score DOUBLE) USING DELTA")
    q(spark, "CREATE TABLE sqlc.ins (id INT, name STRING, score DOUBLE) PARTITIONED BY (name)")
    inserted = q(spark, "INSERT INTO sqlc.ins VALUES (1, 'a', 1.5), (2, 'b', 2)")
    assert (inserted.columns, inserted.collect()) == ([], [])  # delta-spark's: no result
    q(spark, "INSERT INTO TABLE sqlc.ins (score, id) SELECT 9.0, 3")  # listed columns, in any order
    q(spark, "INSERT INTO sqlc.ins BY NAME SELECT 'c' AS name, 4 AS id")
    assert table(spark, "sqlc.ins") == [
        (1, "a", 1.5), (2, "b", 2.0), (3, None, 9.0), (4, "c", None),
    ]  # fmt: skip
    # by path, from a query over the named table
    q(spark, f"INSERT INTO delta.`{path}` SELECT * FROM sqlc.ins WHERE id < 3")
    assert [r[0] for r in table(spark, f"delta.`{path}`")] == [1, 2]
    # overwrite everything; then REPLACE WHERE only one partition
    assert rows(spark, "INSERT OVERWRITE sqlc.ins SELECT 10, 'a', 0.5") == []
    q(spark, "INSERT INTO sqlc.ins VALUES (11, 'b', 0.0)")
    q(spark, "INSERT INTO sqlc.ins REPLACE WHERE name = 'a' VALUES (12, 'a', 1.0)")
    assert [r[0] for r in table(spark, "sqlc.ins")] == [11, 12]
    path_ins = spark._headwater_catalog.require("sqlc.ins").location
    assert ops(path_ins, 3) == ["WRITE", "WRITE", "WRITE"]
    assert RsTable(path_ins).history(3)[2]["operationParameters"]["mode"] == "Overwrite"
    with pytest.raises(headwater.sql.SqlError, match="table has 3 column"):
        q(spark, "INSERT INTO sqlc.ins VALUES (1, 'x')")
    with pytest.raises(headwater.sql.SqlError, match="nope"):
        q(spark, "INSERT INTO sqlc.ins (id, nope) VALUES (1, 'x')")
    assert ops(path_ins, 1) == ["WRITE"] and len(RsTable(path_ins).history()) == 7


def test_update_and_delete(spark):
    q(spark, "CREATE TABLE sqlc.ud AS SELECT id, id % 3 AS k, 'v' AS v FROM range(9)")
    path = spark._headwater_catalog.require("sqlc.ud").location
    assert rows(spark, "UPDATE sqlc.ud AS u SET v = upper(u.v), k = k + 10 WHERE u.k = 1") == [(3,)]
    assert [r for r in table(spark, "sqlc.ud") if r[2] == "V"] == [
        (1, 11, "V"), (4, 11, "V"), (7, 11, "V"),
    ]  # fmt: skip
    assert rows(spark, "UPDATE sqlc.ud SET v = 'all'") == [(9,)]
    assert rows(spark, "DELETE FROM sqlc.ud WHERE id IN (0, 1) OR k = 2") == [(5,)]
    assert [r[0] for r in table(spark, "sqlc.ud")] == [3, 4, 6, 7]
    assert rows(spark, "DELETE FROM sqlc.ud") == [(4,)]
    assert ops(path, 4) == ["DELETE", "DELETE", "UPDATE", "UPDATE"]
    h = RsTable(path).history(4)
    assert h[3]["operationMetrics"]["numUpdatedRows"] == "3"
    assert h[1]["operationMetrics"]["numDeletedRows"] == "5"


def test_merge_with_every_clause(spark):
    q(spark, "CREATE TABLE sqlc.m AS SELECT id, concat('old', id) AS v FROM range(6)")
    q(
        spark,
        "CREATE TABLE sqlc.msrc AS SELECT * FROM VALUES (1, 'one'), (2, 'drop'), (10, 'ten'), (11, 'skip') AS s(id, v)",
    )
    result = q(
        spark,
        """MERGE INTO sqlc.m AS t
           USING (SELECT id, v FROM sqlc.msrc) AS s
           ON t.id = s.id
           WHEN MATCHED AND s.v = 'drop' THEN DELETE
           WHEN MATCHED THEN UPDATE SET t.v = s.v
           WHEN NOT MATCHED BY TARGET AND s.v <> 'skip' THEN INSERT (id, v) VALUES (s.id, upper(s.v))
           WHEN NOT MATCHED BY SOURCE AND t.id >= 4 THEN DELETE
           WHEN NOT MATCHED BY SOURCE THEN UPDATE SET v = 'untouched'""",
    ).first()
    assert (result.num_updated_rows, result.num_deleted_rows, result.num_inserted_rows) == (3, 3, 1)
    assert result.num_affected_rows == 7
    assert table(spark, "sqlc.m") == [
        (0, "untouched"), (1, "one"), (3, "untouched"), (10, "TEN"),
    ]  # fmt: skip
    path = spark._headwater_catalog.require("sqlc.m").location
    assert ops(path, 1) == ["MERGE"]
    # UPDATE SET * / INSERT * from a table source, no aliases
    q(spark, "MERGE INTO sqlc.m USING sqlc.msrc ON m.id = msrc.id "
             "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")  # fmt: skip
    assert table(spark, "sqlc.m") == [
        (0, "untouched"), (1, "one"), (2, "drop"), (3, "untouched"), (10, "ten"), (11, "skip"),
    ]  # fmt: skip


def test_merge_with_schema_evolution(spark):
    q(spark, "CREATE TABLE sqlc.evo AS SELECT 1 AS id, 'a' AS v")
    q(
        spark,
        """MERGE WITH SCHEMA EVOLUTION INTO sqlc.evo t
           USING (SELECT 1 AS id, 'b' AS v, 100 AS extra UNION ALL SELECT 2, 'c', 200) s
           ON t.id = s.id
           WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *""",
    )
    assert rows(spark, "SELECT id, v, extra FROM sqlc.evo ORDER BY id") == [
        (1, "b", 100),
        (2, "c", 200),
    ]
    assert spark.table("sqlc.evo").columns == ["id", "v", "extra"]


def test_merge_with_auto_merge_on_adds_the_new_columns(spark):
    # spark.databricks.delta.schema.autoMerge.enabled: as WITH SCHEMA EVOLUTION (delta-spark).
    q(spark, "CREATE TABLE sqlc.auto_evo AS SELECT 1 AS id, 'a' AS v")
    spark.conf.set("spark.databricks.delta.schema.autoMerge.enabled", "true")
    try:
        q(
            spark,
            """MERGE INTO sqlc.auto_evo t USING (SELECT 2 AS id, 'c' AS v, 200 AS extra) s
               ON t.id = s.id WHEN NOT MATCHED THEN INSERT *""",
        )
    finally:
        spark.conf.unset("spark.databricks.delta.schema.autoMerge.enabled")
    assert rows(spark, "SELECT * FROM sqlc.auto_evo ORDER BY id") == [(1, "a", None), (2, "c", 200)]


def test_insert_overwrite_a_static_partition(spark, tmp_path):
    t = f"delta.`{tmp_path / 't'}`"
    q(
        spark,
        f"CREATE TABLE {t} (id BIGINT, part INT, name STRING) USING delta PARTITIONED BY (part)",
    )
    q(spark, f"INSERT INTO {t} VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 1, 'c')")
    q(spark, f"INSERT OVERWRITE {t} PARTITION (part = 1) SELECT 70, 'p1'")  # the other columns
    q(spark, f"INSERT INTO {t} PARTITION (part = 3) VALUES (80, 'p3')")
    assert rows(spark, f"SELECT * FROM {t} ORDER BY id") == [
        (2, 2, "b"),
        (70, 1, "p1"),
        (80, 3, "p3"),
    ]
    with pytest.raises(headwater.sql.SqlError, match="not a partition column"):
        q(spark, f"INSERT INTO {t} PARTITION (name = 'x') SELECT 1, 1")


def test_create_or_replace_by_path_keeps_the_table_as_delta_spark_does(spark, tmp_path):
    # delta-spark replaces tables by name only: at a path, the columns must be the table's
    # own (and nothing is committed), else DELTA_CREATE_TABLE_SCHEME_MISMATCH.
    path = str(tmp_path / "t")
    t = f"delta.`{path}`"
    q(spark, f"CREATE TABLE {t} (id BIGINT, name STRING) USING delta")
    q(spark, f"INSERT INTO {t} VALUES (1, 'a')")
    q(spark, f"CREATE OR REPLACE TABLE {t} (id BIGINT, name STRING) USING delta")
    assert rows(spark, f"SELECT * FROM {t}") == [(1, "a")] and len(RsTable(path).history()) == 2
    with pytest.raises(headwater.sql.SqlError, match="DELTA_CREATE_TABLE_SCHEME_MISMATCH"):
        q(spark, f"CREATE OR REPLACE TABLE {t} (id BIGINT, flag BOOLEAN) USING delta")
    with pytest.raises(headwater.sql.SqlError, match="DELTA_CREATE_TABLE_SCHEME_MISMATCH"):
        q(spark, f"CREATE TABLE sqlc.elsewhere (flag BOOLEAN) USING delta LOCATION '{path}'")
    assert len(RsTable(path).history()) == 2


def test_alter_table_add_columns_and_set_properties(spark):
    q(spark, "CREATE TABLE sqlc.alt AS SELECT 1 AS id")
    path = spark._headwater_catalog.require("sqlc.alt").location
    q(spark, "ALTER TABLE sqlc.alt ADD COLUMNS (name STRING COMMENT 'who', score DOUBLE)")
    q(spark, "ALTER TABLE sqlc.alt ADD COLUMN flag BOOLEAN")
    q(
        spark,
        "ALTER TABLE sqlc.alt SET TBLPROPERTIES ('delta.logRetentionDuration' = 'interval 60 days', 'team' = 'x')",
    )
    assert table(spark, "sqlc.alt") == [(1, None, None, None)]
    assert spark.sql("SELECT * FROM sqlc.alt").columns == [
        "id",
        "name",
        "score",
        "flag",
    ]  # Spark's mirror too
    assert RsTable(path).metadata().configuration["team"] == "x"
    assert ops(path, 3) == [
        "SET TBLPROPERTIES",
        "ADD COLUMNS",
        "ADD COLUMNS",
    ]  # delta-spark's names
    with pytest.raises(headwater.sql.SqlError, match="already has"):
        q(spark, "ALTER TABLE sqlc.alt ADD COLUMNS (ID INT)")
    with pytest.raises(headwater.sql.SqlError, match="not supported"):
        q(spark, "ALTER TABLE sqlc.alt DROP COLUMN flag")
    assert len(RsTable(path).history()) == 4


def test_drop_table(spark, tmp_path):
    q(spark, "CREATE TABLE sqlc.dropme AS SELECT 1 AS id")
    managed = spark._headwater_catalog.require("sqlc.dropme").location
    ext = str(tmp_path / "ext")
    q(spark, f"CREATE TABLE sqlc.dropext (a INT) LOCATION '{ext}'")
    q(spark, "DROP TABLE sqlc.dropme")
    q(spark, "DROP TABLE IF EXISTS sqlc.dropext")
    assert not os.path.exists(managed)  # managed: data gone
    assert os.path.isdir(os.path.join(ext, "_delta_log"))  # external: data kept
    assert spark._headwater_catalog.get("sqlc.dropme") is None
    assert not spark.catalog.tableExists("sqlc.dropme")
    q(spark, "DROP TABLE IF EXISTS sqlc.dropme")  # gone: no error
    with pytest.raises(Exception, match="(?i)not found|cannot be found"):
        q(spark, "DROP TABLE sqlc.dropme")
    with pytest.raises(TableNotFoundError):
        spark._headwater_catalog.require("sqlc.dropext")
