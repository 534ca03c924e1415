"""Parity of DML through ``spark.sql``: INSERT (values, select, by name, overwrite,
partitions), UPDATE, DELETE and MERGE (every clause, schema evolution), their result rows
and the tables they leave (tests/engines/parity/matrix.py says how they are compared)."""

from __future__ import annotations

import pytest

from tests.engines.parity import matrix
from tests.engines.parity.matrix import raised, ran, refused, row

COLUMNS = "id BIGINT, part INT, name STRING, amount DOUBLE"
ROWS = (
    "SELECT id, CAST(id % 3 AS INT) AS part, concat('n', id) AS name, id * 1.5 AS amount "
    "FROM range({}, {})"
)


def made(spark, root: str, clauses: str = "", stop: int = 10) -> str:
    """``delta.`<root>/t``` created with ``clauses``, holding ids 0..stop-1 (versions 0, 1)."""
    name = f"delta.`{root}/t`"
    spark.sql(f"CREATE TABLE {name} ({COLUMNS}) USING delta {clauses}")
    spark.sql(f"INSERT INTO {name} {ROWS.format(0, stop)}")
    return name


def statement(spark, root: str, text: str, clauses: str = "", rows: bool = True) -> dict:
    """``text`` (``{t}``: the table) on a table made with ``clauses``: its result rows
    (``rows``), and the table."""
    name = made(spark, root, clauses)
    found = [tuple(r) for r in spark.sql(text.format(t=name)).collect()]
    return ran(found if rows else None, t=f"{root}/t")


def insert(spark, root: str, text: str, clauses: str = "") -> dict:
    """An INSERT's table (its result rows: :func:`insert_result_rows`)."""
    return statement(spark, root, text, clauses, rows=False)


PARTITIONED = "PARTITIONED BY (part)"
DELETION_VECTORS = "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"

# -- INSERT ------------------------------------------------------------------------------------


def insert_values(spark, root):
    return insert(spark, root, "INSERT INTO {t} VALUES (100, 1, 'x', 1.0), (101, 2, NULL, NULL)")


def insert_select(spark, root):
    return insert(spark, root, "INSERT INTO {t} " + ROWS.format(20, 25))


def insert_by_name(spark, root):
    text = "INSERT INTO {t} BY NAME SELECT 'late' AS name, 2.5 AS amount, 50L AS id, 2 AS part"
    return insert(spark, root, text)


def insert_a_column_list(spark, root):
    return insert(spark, root, "INSERT INTO {t} (name, id) VALUES ('only', 60)")


def insert_overwrite(spark, root):
    return insert(spark, root, "INSERT OVERWRITE {t} " + ROWS.format(30, 33))


def insert_overwrite_a_partition(spark, root):
    text = "INSERT OVERWRITE {t} PARTITION (part = 1) SELECT 70L, 'p1', 1.0"
    return insert(spark, root, text, PARTITIONED)


def insert_replace_where(spark, root):
    text = "INSERT INTO {t} REPLACE WHERE part = 1 SELECT 80L, 1, 'replaced', 2.0"
    return insert(spark, root, text, PARTITIONED)


def insert_result_rows(spark, root):
    return statement(spark, root, "INSERT INTO {t} " + ROWS.format(20, 25))


def insert_a_wrong_column_count_fails(spark, root):
    name = made(spark, root)
    return ran(refused(f"{root}/t", lambda: spark.sql(f"INSERT INTO {name} VALUES (1, 2)")))


# -- UPDATE and DELETE -------------------------------------------------------------------------


def update_where(spark, root):
    return statement(spark, root, "UPDATE {t} SET name = upper(name), amount = -1 WHERE id > 6")


def update_every_row(spark, root):
    return statement(spark, root, "UPDATE {t} SET amount = amount * 2")


def update_moves_rows_between_partitions(spark, root):
    return statement(spark, root, "UPDATE {t} SET part = 0 WHERE part = 1", PARTITIONED)


def update_with_deletion_vectors(spark, root):
    return statement(spark, root, "UPDATE {t} SET name = 'dv' WHERE id % 4 = 0", DELETION_VECTORS)


def delete_where(spark, root):
    return statement(spark, root, "DELETE FROM {t} WHERE amount > 6")


def delete_a_partition(spark, root):
    return statement(spark, root, "DELETE FROM {t} WHERE part = 2", PARTITIONED)


def delete_every_row(spark, root):
    return statement(spark, root, "DELETE FROM {t}")


def delete_with_deletion_vectors(spark, root):
    return statement(spark, root, "DELETE FROM {t} WHERE id % 4 = 1", DELETION_VECTORS)


def delete_with_a_subquery(spark, root):
    """docs/engines.md, "DELETE with a subquery" (``delete-subquery``): delta-spark refuses
    it, headwater deletes, as the known platform does. On delta-spark the refusal is
    checked, then the rows are deleted by their values, so the tables compare."""
    name = made(spark, root)
    text = f"DELETE FROM {name} WHERE id IN (SELECT id * 2 FROM range(3))"
    if matrix.engine(spark) == "delta-spark":
        refusal = raised(lambda: spark.sql(text).collect())
        assert refusal == ("raised", "DELTA_UNSUPPORTED_SUBQUERY"), refusal
        text = f"DELETE FROM {name} WHERE id IN (0, 2, 4)"
    return ran(raised(lambda: spark.sql(text).collect()), t=f"{root}/t")


# -- MERGE -------------------------------------------------------------------------------------

SOURCE = ROWS.format(6, 14)  # ids 6..9 match the table's, 10..13 are new


def merge_upsert(spark, root):
    text = (
        "MERGE INTO {t} t USING (" + SOURCE + ") s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET name = 'matched', amount = s.amount + 1 "
        "WHEN NOT MATCHED THEN INSERT *"
    )
    return statement(spark, root, text)


def merge_every_clause(spark, root):
    text = (
        "MERGE INTO {t} t USING (" + SOURCE + ") s ON t.id = s.id "
        "WHEN MATCHED AND s.id = 6 THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET t.name = concat(t.name, '+', s.name) "
        "WHEN NOT MATCHED AND s.id < 12 THEN INSERT (id, part, name) VALUES (s.id, s.part, 'new') "
        "WHEN NOT MATCHED BY SOURCE AND t.id < 2 THEN DELETE "
        "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET name = 'orphan'"
    )
    return statement(spark, root, text)


def merge_into_partitions(spark, root):
    text = (
        "MERGE INTO {t} t USING (" + SOURCE + ") s ON t.id = s.id AND t.part = 1 "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    return statement(spark, root, text, PARTITIONED)


def merge_insert_only(spark, root):
    text = "MERGE INTO {t} t USING (" + SOURCE + ") s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *"
    return statement(spark, root, text, DELETION_VECTORS)


EVOLVING = (
    " {t} t USING (SELECT id, part, 'wide' AS name, amount, id * 10 AS extra FROM ("
    + SOURCE
    + ")) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
)


def merge_with_schema_evolution(spark, root):
    return statement(spark, root, "MERGE WITH SCHEMA EVOLUTION INTO" + EVOLVING)


def merge_with_auto_merge_on(spark, root):
    setting = "spark.databricks.delta.schema.autoMerge.enabled"
    spark.conf.set(setting, "true")
    try:
        return statement(spark, root, "MERGE INTO" + EVOLVING)
    finally:
        spark.conf.unset(setting)


def merge_new_columns_without_evolution_are_dropped(spark, root):
    return statement(spark, root, "MERGE INTO" + EVOLVING)


def merge_two_source_rows_on_one_target_row_fails(spark, root):
    name = made(spark, root)
    text = (
        f"MERGE INTO {name} t USING (SELECT id % 2 AS id FROM range(4)) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET name = 'twice'"
    )
    return ran(refused(f"{root}/t", lambda: spark.sql(text).collect()))


OPERATIONS = [
    row(insert_values),
    row(insert_select),
    row(insert_by_name),
    row(insert_a_column_list),
    row(insert_overwrite),
    row(insert_overwrite_a_partition),
    row(insert_replace_where),
    row(insert_result_rows),
    row(insert_a_wrong_column_count_fails),
    row(update_where),
    row(update_every_row),
    row(update_moves_rows_between_partitions),
    row(update_with_deletion_vectors),
    row(delete_where),
    row(delete_a_partition),
    row(delete_every_row),
    row(delete_with_deletion_vectors),
    row(
        delete_with_a_subquery,
        documented=["delete-subquery"],
    ),
    row(merge_upsert),
    row(merge_every_clause),
    row(merge_into_partitions),
    row(merge_insert_only),
    row(merge_with_schema_evolution),
    row(merge_with_auto_merge_on),
    row(merge_new_columns_without_evolution_are_dropped),
    row(merge_two_source_rows_on_one_target_row_fails),
]


@pytest.mark.parametrize("op", OPERATIONS)
def test_dml(parity_runs, op):
    matrix.assert_parity(parity_runs[__file__], op)
