"""Parity of ingestion into Delta: Auto Loader (``cloudFiles``: JSON and CSV, inferred
types, new columns, rescued data) and COPY INTO, the same files landed for each engine
(tests/engines/parity/matrix.py says how they are compared)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.engines.parity import matrix
from tests.engines.parity.matrix import collected, location, raised, ran, row


def land(root: str, name: str, rows: list[dict] | str) -> str:
    """A file of ``rows`` (JSON lines, or the text as it is) in ``root``/land."""
    folder = Path(root, "land")
    folder.mkdir(exist_ok=True)
    text = rows if isinstance(rows, str) else "".join(json.dumps(r) + "\n" for r in rows)
    Path(folder, name).write_text(text)
    return str(folder)


def ingest(spark, root: str, fmt: str = "json", table: str = "", **options: str) -> list[int]:
    """One ``availableNow`` run of Auto Loader over ``root``/land into ``root``/sink (or
    the table ``table``); the rows of each batch that had any."""
    reader = spark.readStream.format("cloudFiles").option("cloudFiles.format", fmt)
    reader = reader.option("cloudFiles.schemaLocation", f"{root}/schema").options(**options)
    writer = reader.load(f"{root}/land").writeStream.format("delta").trigger(availableNow=True)
    writer = writer.option("checkpointLocation", f"{root}/checkpoint").option("mergeSchema", "true")
    query = writer.toTable(table) if table else writer.start(f"{root}/sink")
    query.awaitTermination()
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]


ORDERS = [{"id": 1, "name": "a", "amount": 2.5}, {"id": 2, "name": "b", "amount": None}]


# -- Auto Loader ------------------------------------------------------------------------------


def auto_loader_json(spark, root):
    land(root, "1.json", ORDERS)
    first = ingest(spark, root)
    land(root, "2.json", [{"id": 3, "name": "c", "amount": 1}])
    return ran([first, ingest(spark, root)], sink=f"{root}/sink")


def auto_loader_json_inferred(spark, root):
    land(root, "1.json", [{**r, "at": "2024-01-02T03:04:05Z", "tags": [1, 2]} for r in ORDERS])
    options = {"cloudFiles.inferColumnTypes": "true", "cloudFiles.schemaHints": "id int"}
    return ran(ingest(spark, root, **options), sink=f"{root}/sink")


def auto_loader_csv_inferred(spark, root):
    land(root, "1.csv", "id,name,amount,day\n1,a,2.5,2024-01-02\n2,b,,2024-01-03\n")
    options = {"header": "true", "cloudFiles.inferColumnTypes": "true"}
    return ran(ingest(spark, root, "csv", **options), sink=f"{root}/sink")


def auto_loader_new_columns(spark, root):
    land(root, "1.json", ORDERS)
    first = ingest(spark, root)
    land(root, "2.json", [{"id": 3, "name": "c", "extra": "new"}])
    stopped = raised(lambda: ingest(spark, root))
    return ran([first, stopped, ingest(spark, root)], sink=f"{root}/sink")


def auto_loader_rescued_data(spark, root):
    land(root, "1.json", ORDERS)
    options = {"cloudFiles.inferColumnTypes": "true", "cloudFiles.schemaEvolutionMode": "rescue"}
    first = ingest(spark, root, **options)
    land(root, "2.json", [{"id": "x", "name": "c", "amount": 4.0, "extra": 1}])
    return ran([first, ingest(spark, root, **options)], sink=f"{root}/sink")


def auto_loader_into_a_table(spark, root):
    land(root, "1.json", ORDERS)
    land(root, "2.json", [{"id": 3, "name": "c", "amount": 1}])
    found = ingest(
        spark, root, table="ingest_auto_loader", **{"cloudFiles.maxFilesPerTrigger": "1"}
    )
    rows = collected(spark.table("ingest_auto_loader"))
    return ran((found, rows), sink=location(spark, "ingest_auto_loader"))


# -- COPY INTO --------------------------------------------------------------------------------


def copy(spark, statement: str) -> list[tuple]:
    return [tuple(r) for r in spark.sql(statement).collect()]


def copy_into_json(spark, root):
    table = f"delta.`{root}/t`"
    spark.sql(f"CREATE TABLE {table} (id BIGINT, name STRING, amount DOUBLE) USING delta")
    statement = f"COPY INTO {table} FROM '{land(root, '1.json', ORDERS)}' FILEFORMAT = JSON"
    loads = [copy(spark, statement), copy(spark, statement)]  # the second loads nothing
    land(root, "2.json", [{"id": 3, "name": "c", "amount": 1}])
    return ran([*loads, copy(spark, statement)], t=f"{root}/t")


def copy_into_csv_merging_the_schema(spark, root):
    table = f"delta.`{root}/t`"
    spark.sql(f"CREATE TABLE {table} (id INT, name STRING) USING delta")
    source = land(root, "1.csv", "id,name,amount\n1,a,2.5\n2,b,\n")
    loaded = copy(
        spark,
        f"COPY INTO {table} FROM '{source}' FILEFORMAT = CSV "
        "FORMAT_OPTIONS ('header' = 'true', 'inferSchema' = 'true') "
        "COPY_OPTIONS ('mergeSchema' = 'true')",
    )
    return ran(loaded, t=f"{root}/t")


def copy_into_a_select_of_some_files(spark, root):
    table = f"delta.`{root}/t`"
    spark.sql(f"CREATE TABLE {table} (id BIGINT, label STRING) USING delta")
    source = land(root, "1.json", ORDERS)
    land(root, "2.json", [{"id": 3, "name": "c"}])
    land(root, "skip.json", [{"id": 4, "name": "d"}])
    loaded = copy(
        spark,
        f"COPY INTO {table} FROM (SELECT id::bigint, upper(name) AS label FROM '{source}') "
        "FILEFORMAT = JSON PATTERN = '[12].json'",
    )
    return ran(loaded, t=f"{root}/t")


OPERATIONS = [
    row(auto_loader_json),
    row(auto_loader_json_inferred),
    row(auto_loader_csv_inferred),
    row(auto_loader_new_columns),
    row(auto_loader_rescued_data),
    row(auto_loader_into_a_table),
    row(copy_into_json, documented=["copy-into-commits"]),
    row(copy_into_csv_merging_the_schema, documented=["copy-into-commits"]),
    row(copy_into_a_select_of_some_files, documented=["copy-into-commits"]),
]


@pytest.mark.parametrize("op", OPERATIONS)
def test_ingest(parity_runs, op):
    matrix.assert_parity(parity_runs[__file__], op)
