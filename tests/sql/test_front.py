"""The SQL front: spark.sql routing, parameters, scripts, and errors on bad input."""

from __future__ import annotations

import os

import pytest
from deltalake import DeltaTable as RsTable
from pyspark.errors import AnalysisException, ParseException

import headwater
from headwater.sql import SqlError


@pytest.fixture(scope="module")
def people(spark, tmp_path_factory):
    """``sqlf.people`` (named) with two versions: ids 1-2, then 3 appended."""
    headwater.sql(
        spark,
        """CREATE TABLE sqlf.people (id INT, name STRING);
           INSERT INTO sqlf.people VALUES (1, 'ann'), (2, 'bob');
           INSERT INTO sqlf.people VALUES (3, 'cy')""",
    )
    return spark._headwater_catalog.require("sqlf.people").location


def versions(path):
    return len(RsTable(path).history())


def test_spark_sql_routes_delta_statements_and_passes_the_rest(spark, people):
    # Spark's own statements reach Spark as they are
    assert spark.sql("SHOW TABLES IN sqlf").where("tableName = 'people'").count() == 1
    assert spark.sql("SELECT count(*) AS n FROM sqlf.people").first().n == 3
    # statements Spark lacks, through spark.sql itself
    assert spark.sql("DESCRIBE HISTORY sqlf.people").count() == 3
    assert spark.sql("SELECT count(*) FROM sqlf.people VERSION AS OF 1").first()[0] == 2
    # a script: the last statement's result
    last = spark.sql("SET x.y = 1; SELECT name FROM sqlf.people@v1 WHERE id = 2")
    assert [r.name for r in last.collect()] == ["bob"]
    # a view over a time-travelled table keeps working after the statement
    spark.sql("CREATE OR REPLACE TEMP VIEW people_v0 AS SELECT * FROM sqlf.people VERSION AS OF 0")
    assert spark.sql("SELECT count(*) FROM people_v0").first()[0] == 0


def test_parameters_and_dataframe_substitution(spark, people):
    ids = spark.sql("SELECT id FROM sqlf.people@v2 WHERE id > :low ORDER BY id", args={"low": 1})
    assert [r.id for r in ids.collect()] == [2, 3]
    before = versions(people)
    result = spark.sql(
        "UPDATE sqlf.people SET name = :name WHERE id = :id", args={"name": "al", "id": 1}
    )
    assert result.first().num_affected_rows == 1
    extra = spark.createDataFrame([(9, "zed")], "id int, name string")
    spark.sql("INSERT INTO sqlf.people SELECT * FROM {extra}", extra=extra)
    got = sorted(tuple(r) for r in spark.table("sqlf.people").collect())
    assert got == [(1, "al"), (2, "bob"), (3, "cy"), (9, "zed")]
    assert versions(people) == before + 2
    headwater.sql(spark, "DELETE FROM sqlf.people WHERE name = ? OR id = ?", args=["nobody", 9])
    assert spark.table("sqlf.people").count() == 3


def test_malformed_statement_names_statement_line_and_column(spark, people):
    before = versions(people)
    with pytest.raises(SqlError) as info:
        headwater.sql(
            spark,
            "DELETE FROM sqlf.people WHERE id = 3;\n-- second\nUPDATE sqlf.people\n  SET name = WHERE id = 1",
        )
    e = info.value
    assert e.statement == 2 and e.line == 4 and e.column == 14
    assert "UPDATE sqlf.people" in str(e)
    assert versions(people) == before + 1  # statement 1 ran, statement 2 wrote nothing
    headwater.sql(spark, "INSERT INTO sqlf.people VALUES (3, 'cy')")
    # Spark's own parse errors get the same context in a script...
    with pytest.raises(SqlError) as info:
        headwater.sql(spark, "SELECT 1;\nSELECT id FROM sqlf.people WHERE id =")
    assert (info.value.statement, info.value.line) == (2, 2)
    assert "PARSE_SYNTAX_ERROR" in str(info.value)
    # ...while one statement Spark runs raises Spark's own exception through spark.sql
    with pytest.raises(ParseException):
        spark.sql("SELECT id FROM sqlf.people WHERE id =")
    with pytest.raises(AnalysisException):
        spark.sql("SELECT nope FROM sqlf.people")


def test_unknown_tables_are_clear_errors(spark, people):
    for text in (
        "UPDATE sqlf.nobody SET name = 'x'",
        "DELETE FROM sqlf.nobody",
        "MERGE INTO sqlf.nobody USING sqlf.people s ON 1 = 1 WHEN MATCHED THEN DELETE",
        "OPTIMIZE sqlf.nobody",
        "DESCRIBE HISTORY sqlf.nobody",
        "SELECT * FROM sqlf.nobody VERSION AS OF 1",
    ):
        with pytest.raises(SqlError, match="(?i)sqlf.*nobody.*not found") as info:
            spark.sql(text)
        assert info.value.statement == 1 and info.value.column > 1, text
    with pytest.raises(SqlError, match="no Delta table at"):
        spark.sql(f"DELETE FROM delta.`{people}-missing`")
    assert not os.path.exists(f"{people}-missing")


def test_non_delta_targets_are_refused_and_untouched(spark, tmp_path):
    spark.sql("CREATE TABLE sqlf.pq (a INT) USING parquet")  # Spark's: passed through
    spark.sql("INSERT INTO sqlf.pq VALUES (1), (2)")  # into a parquet table: Spark's
    assert sorted(r.a for r in spark.sql("SELECT a FROM sqlf.pq").collect()) == [1, 2]
    for text in ("UPDATE sqlf.pq SET a = 3", "DELETE FROM sqlf.pq", "DESCRIBE DETAIL sqlf.pq"):
        with pytest.raises(SqlError, match="not a Delta table|not Delta"):
            spark.sql(text)
    assert sorted(r.a for r in spark.sql("SELECT a FROM sqlf.pq").collect()) == [1, 2]
    plain = str(tmp_path / "plain")
    spark.range(3).write.parquet(plain)
    listing = sorted(os.listdir(plain))
    for text in (
        f"DELETE FROM delta.`{plain}` WHERE id = 1",
        f"INSERT INTO delta.`{plain}` VALUES (5)",
        f"OPTIMIZE delta.`{plain}`",
        f"SELECT * FROM delta.`{plain}`",
    ):
        with pytest.raises(SqlError, match="no Delta log"):
            spark.sql(text)
    assert sorted(os.listdir(plain)) == listing
    with pytest.raises(SqlError, match="already exists in Spark's catalog"):
        spark.sql("CREATE TABLE sqlf.pq (a INT) USING DELTA")


def test_a_subscript_after_a_colon_runs_as_a_json_path_and_other_syntax_errors_stay(spark):
    # d:a:[*] (the event log demos' form) is not in Spark's grammar: run as a JSON path.
    row = spark.sql(
        """SELECT d:a:[*] AS xs, d:a:[0]:n AS first FROM VALUES ('{"a": [{"n": 1}, {"n": 2}]}') AS t(d)"""
    ).first()
    assert (row.xs, row.first) == ('[{"n":1},{"n":2}]', "1")
    with pytest.raises(ParseException, match="PARSE_SYNTAX_ERROR"):
        spark.sql("SELECT d:a:[0] FROM VALUES ('{}') AS t(d) WHERE")
