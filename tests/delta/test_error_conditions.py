"""headwater's errors carry delta-spark's error conditions, in their class (``error_class``)
and at the start of their text (``[DELTA_PATH_EXISTS] ...``), as delta-spark's do: code
that looks for the condition finds the same one on either engine (tests/engines/parity
compares them operation by operation). The classes users catch stay headwater's."""

from __future__ import annotations

import pytest

from headwater.errors import (
    ConstraintViolationError,
    DeltaError,
    SchemaMismatchError,
    TableAlreadyExistsError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)


def test_a_delta_errors_text_starts_with_its_condition():
    assert str(VersionNotFoundError("Cannot time travel.")).startswith(
        "[DELTA_VERSION_NOT_FOUND] Cannot time travel."
    )
    given = SchemaMismatchError("No.", error_class="DELTA_FAILED_TO_MERGE_FIELDS")
    assert str(given) == "[DELTA_FAILED_TO_MERGE_FIELDS] No."
    leading = TableAlreadyExistsError("[DELTA_PATH_EXISTS] There.")
    assert (str(leading), leading.getCondition()) == (
        "[DELTA_PATH_EXISTS] There.",
        "DELTA_PATH_EXISTS",
    )
    assert str(DeltaError("generic")) == "generic"  # no condition of delta-spark's to show


def _rows(spark, start: int, stop: int, extra: str = ""):
    return spark.sql(f"SELECT id, CAST(id % 3 AS INT) AS part{extra} FROM range({start}, {stop})")


def _refused(kind: type, condition: str, action) -> None:
    with pytest.raises(kind) as raised:
        action()
    found = raised.value.__cause__ if type(raised.value).__name__ == "SqlError" else raised.value
    assert isinstance(found, kind)
    assert str(found).startswith(f"[{condition}]"), str(found)
    assert found.error_class == condition


def test_writes_refused_name_delta_sparks_conditions(spark, table_path):
    _rows(spark, 0, 6).write.format("delta").partitionBy("part").save(table_path)

    def writer():  # a new one each time: a DataFrameWriter's settings stay on it
        return _rows(spark, 6, 9).write.format("delta")

    _refused(TableAlreadyExistsError, "DELTA_PATH_EXISTS", lambda: writer().save(table_path))
    other_parts = writer().mode("append").partitionBy("id")
    _refused(SchemaMismatchError, "DELTA_METADATA_MISMATCH", lambda: other_parts.save(table_path))
    wider = _rows(spark, 6, 9, ", id AS extra").write.format("delta").mode("append")
    _refused(SchemaMismatchError, "DELTA_METADATA_MISMATCH", lambda: wider.save(table_path))
    typed = spark.sql("SELECT CAST(id AS STRING) AS id FROM range(2)").write.format("delta")
    _refused(
        SchemaMismatchError,
        "DELTA_FAILED_TO_MERGE_FIELDS",
        lambda: typed.mode("overwrite").save(table_path),
    )
    outside = writer().mode("overwrite").option("replaceWhere", "part = 1")
    _refused(SchemaMismatchError, "DELTA_REPLACE_WHERE_MISMATCH", lambda: outside.save(table_path))
    late = spark.read.format("delta").option("versionAsOf", 7)
    _refused(VersionNotFoundError, "DELTA_VERSION_NOT_FOUND", lambda: late.load(table_path).count())


def test_sql_refusals_name_delta_sparks_conditions(spark, table_path):
    t = f"delta.`{table_path}`"
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT NOT NULL, part INT, doubled BIGINT GENERATED ALWAYS AS "
        "(id * 2)) USING delta TBLPROPERTIES ('delta.appendOnly' = 'true')"
    )
    spark.sql(f"ALTER TABLE {t} ADD CONSTRAINT small CHECK (part < 3)")
    for statement, kind, condition in (
        (f"INSERT INTO {t} VALUES (NULL, 1, NULL)", ConstraintViolationError, "DELTA_NOT_NULL_CONSTRAINT_VIOLATED"),
        (f"INSERT INTO {t} VALUES (1, 7, 2)", ConstraintViolationError, "DELTA_VIOLATE_CONSTRAINT_WITH_VALUES"),
        (f"INSERT INTO {t} VALUES (1, 1, 5)", ConstraintViolationError, "DELTA_VIOLATE_CONSTRAINT_WITH_VALUES"),
        (f"INSERT INTO {t} VALUES (1, 2)", SchemaMismatchError, "DELTA_INSERT_COLUMN_ARITY_MISMATCH"),
        (f"DELETE FROM {t} WHERE id = 1", UnsupportedFeatureError, "DELTA_CANNOT_MODIFY_APPEND_ONLY"),
        (f"CREATE TABLE {t} (id BIGINT) USING delta", TableAlreadyExistsError, "TABLE_OR_VIEW_ALREADY_EXISTS"),
    ):  # fmt: skip
        with pytest.raises(Exception, match=rf"\[{condition}\]") as refused:
            spark.sql(statement)
        assert isinstance(refused.value.__cause__, kind), statement
        assert refused.value.__cause__.error_class == condition
