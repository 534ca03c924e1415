"""Parity of Delta's SQL: CREATE TABLE (partitions, constraints, generated columns,
properties, by name, as select), ALTER TABLE, DESCRIBE HISTORY/DETAIL/TABLE, time travel,
``table_changes`` and VACUUM's result (maintenance through the ``DeltaTable`` API:
test_parity_delta_table.py). tests/engines/parity/matrix.py says how they are compared."""

from __future__ import annotations

import pytest

from tests.engines.parity import matrix
from tests.engines.parity.matrix import (
    collected,
    default_isolation,
    location,
    raised,
    ran,
    refused,
    row,
)

COLUMNS = "id BIGINT, part INT, name STRING"
ROWS = "SELECT id, CAST(id % 3 AS INT) AS part, concat('n', id) AS name FROM range({}, {})"


def run(spark, *statements: str) -> list[list[tuple]]:
    """Each statement's rows, in order."""
    return [[tuple(r) for r in spark.sql(s).collect()] for s in statements]


def created(spark, root: str, clauses: str = "", columns: str = COLUMNS) -> str:
    """``delta.`<root>/t``` created with ``clauses`` and holding ids 0..5 (versions 0, 1)."""
    name = f"delta.`{root}/t`"
    spark.sql(f"CREATE TABLE {name} ({columns}) USING delta {clauses}")
    spark.sql(f"INSERT INTO {name} (id, part, name) {ROWS.format(0, 6)}")
    return name


def detail_of(spark, name: str) -> list[tuple]:
    found = spark.sql(f"DESCRIBE DETAIL {name}").select(
        "format",
        "partitionColumns",
        "numFiles",
        "properties",
        "minReaderVersion",
        "minWriterVersion",
        "description",
    )
    return collected(found)


def properties_of(spark, name: str) -> list[tuple]:
    return collected(spark.sql(f"SHOW TBLPROPERTIES {name}"))


# -- CREATE TABLE -----------------------------------------------------------------------------


def create_partitioned(spark, root):
    name = created(spark, root, "PARTITIONED BY (part) COMMENT 'parts'")
    return ran(detail_of(spark, name), t=f"{root}/t")


def constrained(spark, root: str) -> str:
    name = created(spark, root, columns="id BIGINT NOT NULL, part INT, name STRING")
    spark.sql(f"ALTER TABLE {name} ADD CONSTRAINT small CHECK (part < 3)")
    return name


def create_with_constraints(spark, root):
    name = constrained(spark, root)
    spark.sql(f"INSERT INTO {name} VALUES (7, 2, 'x')")
    return ran(properties_of(spark, name), t=f"{root}/t")


def constraint_violations_fail(spark, root):
    name = constrained(spark, root)
    path = f"{root}/t"
    return ran(
        [
            refused(path, lambda: spark.sql(f"INSERT INTO {name} VALUES (NULL, 1, 'x')")),
            refused(path, lambda: spark.sql(f"INSERT INTO {name} VALUES (9, 7, 'x')")),
            refused(path, lambda: spark.sql(f"UPDATE {name} SET part = 5 WHERE id = 1")),
        ]
    )


GENERATED = COLUMNS + ", doubled BIGINT GENERATED ALWAYS AS (id * 2)"


def create_with_generated_columns(spark, root):
    name = created(spark, root, columns=GENERATED)
    spark.sql(f"UPDATE {name} SET id = id + 100 WHERE part = 1")
    return ran(t=f"{root}/t")


def create_with_change_data_feed(spark, root):
    name = created(spark, root, "TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')")
    spark.sql(f"UPDATE {name} SET name = 'u' WHERE part = 1")
    return ran(t=f"{root}/t")


def a_wrong_generated_value_fails(spark, root):
    name = created(spark, root, columns=GENERATED)
    wrong = refused(f"{root}/t", lambda: spark.sql(f"INSERT INTO {name} VALUES (1, 1, 'x', 5)"))
    return ran(wrong)


APPEND_ONLY = (
    "TBLPROPERTIES ('delta.appendOnly' = 'true', "
    "'delta.logRetentionDuration' = 'interval 60 days', 'team.owner' = 'data')"
)


def create_with_properties(spark, root):
    name = created(spark, root, APPEND_ONLY)
    return ran((properties_of(spark, name), detail_of(spark, name)), t=f"{root}/t")


def a_delete_from_an_append_only_table_fails(spark, root):
    name = created(spark, root, APPEND_ONLY)
    return ran(refused(f"{root}/t", lambda: spark.sql(f"DELETE FROM {name} WHERE id = 1")))


def create_by_name(spark, root):
    run(
        spark,
        f"CREATE TABLE sql_by_name ({COLUMNS}) USING delta PARTITIONED BY (part)",
        f"INSERT INTO sql_by_name {ROWS.format(0, 4)}",
    )
    found = run(spark, "SELECT * FROM sql_by_name WHERE part = 1", "SHOW TABLES LIKE 'sql_by*'")
    return ran(found, t=location(spark, "sql_by_name"))


CTAS = (
    "CREATE TABLE delta.`{root}/t` USING delta PARTITIONED BY (part) AS " + ROWS.format(0, 5),
    "CREATE TABLE {name} USING delta AS SELECT * FROM delta.`{root}/t` WHERE id > 1",
)


def create_table_as_select(spark, root):
    run(spark, *(s.format(root=root, name="sql_ctas") for s in CTAS))
    return ran(t=f"{root}/t", named=location(spark, "sql_ctas"))


def create_table_as_select_result_rows(spark, root):
    return ran(run(spark, *(s.format(root=root, name="sql_ctas_rows") for s in CTAS)))


def create_or_replace_by_name(spark, root):
    run(
        spark,
        f"CREATE TABLE sql_replaced ({COLUMNS}) USING delta PARTITIONED BY (part)",
        f"INSERT INTO sql_replaced {ROWS.format(0, 4)}",
        "CREATE OR REPLACE TABLE sql_replaced (id BIGINT, flag BOOLEAN) USING delta",
        "INSERT INTO sql_replaced VALUES (1, true)",
        "CREATE TABLE IF NOT EXISTS sql_replaced (other STRING) USING delta",
    )
    return ran(run(spark, "SELECT * FROM sql_replaced"), t=location(spark, "sql_replaced"))


def create_or_replace_by_path(spark, root):
    name = created(spark, root, "PARTITIONED BY (part)")
    replace = f"CREATE OR REPLACE TABLE {name} (id BIGINT, flag BOOLEAN) USING delta"
    return ran(refused(f"{root}/t", lambda: run(spark, replace)))


def create_if_not_exists_with_another_schema(spark, root):
    name = created(spark, root)
    again = f"CREATE TABLE IF NOT EXISTS {name} (other STRING) USING delta"
    return ran(refused(f"{root}/t", lambda: run(spark, again)))


def create_over_an_existing_table_fails(spark, root):
    name = created(spark, root)
    return ran(
        refused(f"{root}/t", lambda: spark.sql(f"CREATE TABLE {name} ({COLUMNS}) USING delta"))
    )


# -- ALTER TABLE ------------------------------------------------------------------------------


def alter_add_columns(spark, root):
    name = created(spark, root)
    run(
        spark,
        f"ALTER TABLE {name} ADD COLUMNS (note STRING COMMENT 'a note', n INT)",
        f"INSERT INTO {name} VALUES (50, 1, 'x', 'noted', 5)",
    )
    return ran(t=f"{root}/t")


def alter_set_properties(spark, root):
    name = created(spark, root)
    run(
        spark,
        f"ALTER TABLE {name} SET TBLPROPERTIES ('team.owner' = 'data', 'delta.appendOnly' = 'true')",
        f"ALTER TABLE {name} UNSET TBLPROPERTIES ('delta.appendOnly')",
    )
    return ran(properties_of(spark, name), t=f"{root}/t")


def alter_add_constraint(spark, root):
    name = created(spark, root)
    spark.sql(f"ALTER TABLE {name} ADD CONSTRAINT known CHECK (id < 100)")
    violated = raised(lambda: spark.sql(f"ALTER TABLE {name} ADD CONSTRAINT no CHECK (id > 3)"))
    spark.sql(f"ALTER TABLE {name} DROP CONSTRAINT known")
    spark.sql(f"INSERT INTO {name} VALUES (200, 1, 'x')")
    return ran(violated, t=f"{root}/t")


def column_mapped(spark, root: str) -> str:
    name = created(spark, root)
    spark.sql(
        f"ALTER TABLE {name} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name', "
        "'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')"
    )
    return name


def alter_set_column_mapping(spark, root):
    name = column_mapped(spark, root)
    spark.sql(f"INSERT INTO {name} VALUES (60, 0, 'mapped')")
    return ran(t=f"{root}/t")


def alter_rename_column_with_column_mapping(spark, root):
    name = column_mapped(spark, root)
    spark.sql(f"ALTER TABLE {name} RENAME COLUMN name TO label")
    spark.sql(f"INSERT INTO {name} VALUES (60, 0, 'renamed')")
    return ran(run(spark, f"SELECT label FROM {name} WHERE id > 4"), t=f"{root}/t")


def alter_drop_column_with_column_mapping(spark, root):
    name = column_mapped(spark, root)
    spark.sql(f"ALTER TABLE {name} DROP COLUMN part")
    spark.sql(f"INSERT INTO {name} VALUES (60, 'dropped')")
    return ran(t=f"{root}/t")


def rename_without_column_mapping_fails(spark, root):
    name = created(spark, root)
    return ran(
        refused(f"{root}/t", lambda: spark.sql(f"ALTER TABLE {name} RENAME COLUMN name TO label"))
    )


# -- DESCRIBE, time travel, table_changes ------------------------------------------------------


def history_of(spark, root: str, *columns):
    name = created(spark, root, "PARTITIONED BY (part)")
    spark.sql(f"DELETE FROM {name} WHERE part = 2")
    spark.sql(f"UPDATE {name} SET name = 'u' WHERE id = 1")
    return collected(spark.sql(f"DESCRIBE HISTORY {name}").select("version", *columns))


def describe_history(spark, root):
    columns = ("operation", "readVersion", default_isolation("isolationLevel"), "isBlindAppend")
    return ran(history_of(spark, root, *columns), t=f"{root}/t")


def describe_history_parameters(spark, root):
    from pyspark.sql import functions as F

    # delta-spark writes a DELETE's or UPDATE's predicate as its analysed expression, with
    # expression ids (``(part#133144 = 2)``) that no two runs share.
    kept = F.map_filter("operationParameters", lambda k, v: k != "predicate")
    return ran(history_of(spark, root, kept.alias("parameters")))


def describe_detail(spark, root):
    name = created(spark, root, "PARTITIONED BY (part)")
    return ran(detail_of(spark, name), t=f"{root}/t")


def describe_table(spark, root):
    name = created(spark, root, "PARTITIONED BY (part)")
    return ran(run(spark, f"DESCRIBE TABLE {name}"), t=f"{root}/t")


def version_as_of(spark, root):
    name = created(spark, root)
    spark.sql(f"DELETE FROM {name} WHERE id > 2")
    found = run(
        spark,
        f"SELECT * FROM {name} VERSION AS OF 1 ORDER BY id",
        f"SELECT count(*) FROM {name} VERSION AS OF 0",
        f"SELECT * FROM {name} ORDER BY id",
    )
    return ran(found, t=f"{root}/t")


def timestamp_as_of(spark, root):
    from pyspark.sql import functions as F

    name = created(spark, root)
    spark.sql(f"DELETE FROM {name} WHERE id > 2")
    history = spark.sql(f"DESCRIBE HISTORY {name}").where("version = 1")
    (stamp,) = history.select(F.date_format("timestamp", "yyyy-MM-dd HH:mm:ss.SSS")).first()
    return ran(run(spark, f"SELECT * FROM {name} TIMESTAMP AS OF '{stamp}' ORDER BY id"))


def table_changes(spark, root):
    run(
        spark,
        f"CREATE TABLE sql_changes ({COLUMNS}) USING delta "
        "TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')",
        f"INSERT INTO sql_changes {ROWS.format(0, 5)}",
        "UPDATE sql_changes SET name = 'u' WHERE id = 1",
        "DELETE FROM sql_changes WHERE id = 2",
    )
    found = run(
        spark,
        "SELECT id, name, _change_type, _commit_version FROM table_changes('sql_changes', 1) "
        "ORDER BY _commit_version, id, _change_type",
        "SELECT count(*) FROM table_changes('sql_changes', 2, 3)",
    )
    return ran(found, t=location(spark, "sql_changes"))


# -- VACUUM --------------------------------------------------------------------------------------


def vacuum_result(spark, root):
    return ran(run(spark, f"VACUUM {created(spark, root)}"))


OPERATIONS = [
    row(create_partitioned),
    row(create_with_constraints, documented=["read-nullability"]),
    row(constraint_violations_fail),
    row(create_with_generated_columns),
    row(create_with_change_data_feed),
    row(a_wrong_generated_value_fails),
    row(create_with_properties),
    row(a_delete_from_an_append_only_table_fails),
    row(create_by_name),
    row(create_table_as_select),
    row(create_table_as_select_result_rows),
    row(create_or_replace_by_name),
    row(create_or_replace_by_path),
    row(create_if_not_exists_with_another_schema),
    row(create_over_an_existing_table_fails),
    row(alter_add_columns),
    row(alter_set_properties),
    row(alter_add_constraint),
    row(alter_set_column_mapping),
    row(alter_rename_column_with_column_mapping),
    row(alter_drop_column_with_column_mapping),
    row(rename_without_column_mapping_fails),
    row(
        describe_history,
        documented=["isolation-default"],
    ),
    row(describe_history_parameters),
    row(describe_detail),
    row(describe_table),
    row(version_as_of),
    row(timestamp_as_of),
    row(table_changes, protocol_in="create_with_change_data_feed"),
    row(vacuum_result),
]


@pytest.mark.parametrize("op", OPERATIONS)
def test_sql(parity_runs, op):
    matrix.assert_parity(parity_runs[__file__], op)
