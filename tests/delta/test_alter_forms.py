"""ALTER TABLE forms delta-spark users port: moving a column (FIRST / AFTER), DROP and SET
NOT NULL, UNSET TBLPROPERTIES, RENAME TO and SET LOCATION, on real Delta tables, each logged
as delta-spark logs it."""

from __future__ import annotations

import glob
import json
import os

import pytest

from headwater.delta.log.delta_log import DeltaLog


def _last_commit_info(path: str) -> dict:
    last = sorted(glob.glob(os.path.join(path, "_delta_log", "*.json")))[-1]
    with open(last) as f:
        actions = [json.loads(line) for line in f if line.strip()]
    return next(a["commitInfo"] for a in actions if "commitInfo" in a)


@pytest.fixture
def table(spark, tmp_path) -> str:
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (a LONG, b STRING NOT NULL, c INT) USING delta")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'x', 10)")
    return path


def test_change_column_after_and_first_reorder_without_rewriting(spark, table):
    spark.sql(f"ALTER TABLE delta.`{table}` CHANGE COLUMN a a LONG AFTER b")
    df = spark.sql(f"SELECT * FROM delta.`{table}`")
    assert df.columns == ["b", "a", "c"]
    assert [tuple(r) for r in df.collect()] == [("x", 1, 10)]
    info = _last_commit_info(table)
    assert info["operation"] == "CHANGE COLUMN"
    assert info["operationParameters"]["position"] == "AFTER b"
    spark.sql(f"ALTER TABLE delta.`{table}` ALTER COLUMN c FIRST")
    assert spark.read.format("delta").load(table).columns == ["c", "b", "a"]
    with pytest.raises(Exception, match="no column zz"):
        spark.sql(f"ALTER TABLE delta.`{table}` CHANGE COLUMN a a LONG AFTER zz")


def test_drop_and_set_not_null(spark, table):
    spark.sql(f"ALTER TABLE delta.`{table}` ALTER COLUMN b DROP NOT NULL")
    assert {f.name: f for f in DeltaLog(table).snapshot().schema}["b"].nullable
    assert _last_commit_info(table)["operation"] == "CHANGE COLUMN"
    spark.sql(f"ALTER TABLE delta.`{table}` ALTER COLUMN a SET NOT NULL")
    assert not {f.name: f for f in DeltaLog(table).snapshot().schema}["a"].nullable
    with pytest.raises(Exception, match="(?i)null"):
        spark.sql(f"INSERT INTO delta.`{table}` VALUES (NULL, 'y', 3)")
    spark.sql(f"INSERT INTO delta.`{table}` VALUES (2, 'y', NULL)")
    with pytest.raises(Exception, match="DELTA_NOT_NULL_CONSTRAINT_VIOLATED"):
        spark.sql(f"ALTER TABLE delta.`{table}` ALTER COLUMN c SET NOT NULL")


def test_unset_tblproperties(spark, table):
    spark.sql(f"ALTER TABLE delta.`{table}` SET TBLPROPERTIES ('k' = 'v', 'k2' = 'w')")
    spark.sql(f"ALTER TABLE delta.`{table}` UNSET TBLPROPERTIES ('k')")
    props = {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES delta.`{table}`").collect()}
    assert "k" not in props and props["k2"] == "w"
    info = _last_commit_info(table)
    assert info["operation"] == "UNSET TBLPROPERTIES"
    with pytest.raises(Exception, match="UNSET_NONEXISTENT_PROPERTIES"):
        spark.sql(f"ALTER TABLE delta.`{table}` UNSET TBLPROPERTIES ('nope')")
    spark.sql(f"ALTER TABLE delta.`{table}` UNSET TBLPROPERTIES IF EXISTS ('nope', k2)")
    props = {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES delta.`{table}`").collect()}
    assert "k2" not in props


def test_rename_managed_table_moves_it_and_frees_the_name(spark):
    spark.sql("DROP TABLE IF EXISTS alter_forms_src")
    spark.sql("DROP TABLE IF EXISTS alter_forms_dst")
    spark.sql("CREATE TABLE alter_forms_src (id LONG) USING delta")
    spark.sql("INSERT INTO alter_forms_src VALUES (1), (2)")
    try:
        spark.sql("ALTER TABLE alter_forms_src RENAME TO alter_forms_dst")
        assert spark.sql("SELECT count(*) FROM alter_forms_dst").first()[0] == 2
        detail = spark.sql("DESCRIBE DETAIL alter_forms_dst").first()
        assert detail["location"].rstrip("/").endswith("alter_forms_dst")
        spark.sql("CREATE TABLE alter_forms_src (other STRING) USING delta")
        assert spark.table("alter_forms_src").columns == ["other"]
        assert spark.sql("SELECT count(*) FROM alter_forms_dst").first()[0] == 2
    finally:
        spark.sql("DROP TABLE IF EXISTS alter_forms_src")
        spark.sql("DROP TABLE IF EXISTS alter_forms_dst")


def test_set_location_points_the_name_at_another_table(spark, tmp_path):
    spark.sql("DROP TABLE IF EXISTS alter_forms_loc")
    first, second, other = (str(tmp_path / n) for n in ("first", "second", "other"))
    spark.createDataFrame([(1, "a")], ["id", "s"]).write.format("delta").save(first)
    spark.createDataFrame([(2, "b"), (3, "c")], ["id", "s"]).write.format("delta").save(second)
    spark.createDataFrame([(4,)], ["n"]).write.format("delta").save(other)
    spark.sql(f"CREATE TABLE alter_forms_loc USING delta LOCATION '{first}'")
    try:
        spark.sql(f"ALTER TABLE alter_forms_loc SET LOCATION '{second}'")
        assert sorted(r.id for r in spark.table("alter_forms_loc").collect()) == [2, 3]
        with pytest.raises(Exception, match="DELTA_SET_LOCATION_SCHEMA_MISMATCH"):
            spark.sql(f"ALTER TABLE alter_forms_loc SET LOCATION '{other}'")
        with pytest.raises(Exception, match="needs a table name"):
            spark.sql(f"ALTER TABLE delta.`{first}` SET LOCATION '{second}'")
    finally:
        spark.sql("DROP TABLE IF EXISTS alter_forms_loc")
