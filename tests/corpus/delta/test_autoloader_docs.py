"""Auto Loader examples from the known platform's documentation:

* "Configure schema inference and evolution in Auto Loader"
  (https://docs.databricks.com/aws/en/ingestion/cloud-object-storage/auto-loader/schema),
  its syntax example and its schema hints example;
* "Common data loading patterns"
  (https://docs.databricks.com/aws/en/ingestion/cloud-object-storage/auto-loader/patterns),
  the Python snippets of each pattern;
* "Tutorial: Run your first ETL workload"
  (https://docs.databricks.com/aws/en/getting-started/etl-quick-start), its Auto Loader cell.

Read 2026-11-29: the pages' openings through the public page index, the snippets' full
text from public notebooks that copy them (the pages themselves only partly readable
here). Placeholders (``<path_to_checkpoint>``, ``<schema>``) are filled by each test; the
snippets that end at a DataFrame are drained by the test into a Delta table or memory. The
streams run with ``trigger(availableNow=True)`` once per batch of landed files, so the
schema change that stops an ``addNewColumns`` stream once is part of the case.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from delta_corpus import assert_schema, assert_table, bag, finish, write_json, write_lines
from pyspark.sql.functions import col, current_timestamp
from pyspark.sql.types import IntegerType, StringType, StructField, StructType


def _drain(df, out: str, checkpoint: str) -> None:
    """Run a snippet's streaming DataFrame into the Delta table ``out`` (the test's sink)."""
    finish(
        df.writeStream.format("delta")
        .option("checkpointLocation", checkpoint)
        .option("mergeSchema", "true")
        .trigger(availableNow=True)
        .start(out)
    )


def test_schema_inference_syntax_parquet(spark, tmp_path):
    """schema: the syntax example (Parquet, schema location = checkpoint, ``start``): a
    later file of the same columns is appended; a column added by a later file stops the
    stream once (Auto Loader records it), and then the Delta sink, which the example gives
    no ``mergeSchema``, refuses it: the table keeps the rows before it."""
    landing, checkpoint, target = (str(tmp_path / n) for n in ("source", "checkpoint", "target"))
    os.makedirs(landing)
    files = [
        pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["a", None]}),
        pa.table({"id": pa.array([3], pa.int64()), "name": ["c"]}),
        pa.table({"id": pa.array([4], pa.int64()), "name": ["d"], "score": [0.5]}),
    ]

    def run():
        finish(
            spark.readStream.format("cloudFiles")
            .option("cloudFiles.format", "parquet")
            .option("cloudFiles.schemaLocation", checkpoint)  # <path-to-checkpoint>
            .load(landing)  # <path-to-source-data>
            .writeStream.option("checkpointLocation", checkpoint)  # <path-to-checkpoint>
            .trigger(availableNow=True)
            .start(target)  # <path_to_target
        )

    pq.write_table(files[0], os.path.join(landing, "f1.parquet"))
    run()
    pq.write_table(files[1], os.path.join(landing, "f2.parquet"))
    run()
    pq.write_table(files[2], os.path.join(landing, "f3.parquet"))
    with pytest.raises(Exception, match="score"):
        run()  # addNewColumns: the stream stops once, naming the new column
    with pytest.raises(Exception, match="score"):
        run()  # the sink: a column the table lacks, and no mergeSchema
    rows = [(1, "a"), (2, None), (3, "c")]
    assert_table(spark, target, ["id", "name"], rows)
    assert_schema(spark, target, {"id": "bigint", "name": "string", "_rescued_data": "string"})


EVENTS_1 = [{"id": 1, "user": "ann", "amount": 10}, {"id": 2, "user": None, "amount": 12}]
EVENTS_2 = [
    {"id": 3, "user": "bo", "amount": 7, "coupon": "X1"},
    {"id": 5, "user": "di", "amount": "lots"},
]
MALFORMED = '{"id": 4, "user": "cy"'


def test_enable_easy_etl(spark, tmp_path):
    """patterns, "Enable easy ETL": JSON with a schema location, ``mergeSchema`` on the
    sink. Columns are strings (no type inference); a new column stops the stream once; a
    line that is not JSON is kept in ``_rescued_data``."""
    landing = str(tmp_path / "landing")
    schemas, checkpoint, target = (str(tmp_path / n) for n in ("schemas", "checkpoint", "target"))
    write_json(landing, "a.json", EVENTS_1)

    def run():
        finish(
            spark.readStream.format("cloudFiles")
            .option("cloudFiles.format", "json")
            .option("cloudFiles.schemaLocation", schemas)  # <path_to_schema_location>
            .load(landing)  # <path_to_source_data>
            .writeStream.option("mergeSchema", "true")
            .option("checkpointLocation", checkpoint)  # <path_to_checkpoint>
            .trigger(availableNow=True)
            .start(target)  # <path_to_target
        )

    run()
    import json

    second = write_lines(
        landing, "b.json", [json.dumps(EVENTS_2[0]), MALFORMED, json.dumps(EVENTS_2[1])]
    )
    with pytest.raises(Exception, match="coupon"):
        run()
    run()
    columns = ["id", "user", "amount", "coupon", "_rescued_data"]

    def as_strings(e):
        return tuple(None if e.get(c) is None else str(e[c]) for c in columns[:4]) + (None,)

    rows = [as_strings(e) for e in EVENTS_1 + EVENTS_2]
    rows.append((None, None, None, None, {"_corrupt_record": MALFORMED, "_file_path": second}))
    assert_table(spark, target, columns, rows, json_columns=["_rescued_data"])


def test_prevent_data_loss_in_well_structured_data(spark, tmp_path):
    """patterns, "Prevent data loss in well-structured data": a given schema and
    ``schemaEvolutionMode = rescue``: new fields and type mismatches go to
    ``_rescued_data``, nothing stops the stream."""
    landing, checkpoint, target = (str(tmp_path / n) for n in ("landing", "checkpoint", "target"))
    first = write_json(landing, "a.json", EVENTS_1)
    second = write_json(landing, "b.json", EVENTS_2)
    expected_schema = StructType(
        [
            StructField("id", IntegerType()),
            StructField("user", StringType()),
            StructField("amount", IntegerType()),
        ]
    )
    finish(
        spark.readStream.format("cloudFiles")
        .schema(expected_schema)
        .option("cloudFiles.format", "json")
        .option("cloudFiles.schemaEvolutionMode", "rescue")
        .load(landing)  # <path_to_source_data>
        .writeStream.option("checkpointLocation", checkpoint)  # <path_to_checkpoint>
        .trigger(availableNow=True)
        .start(target)  # <path_to_target
    )
    rows = [(1, "ann", 10, None), (2, None, 12, None)]
    rows.append((3, "bo", 7, {"coupon": "X1", "_file_path": second}))
    rows.append((5, "di", None, {"amount": "lots", "_file_path": second}))
    assert first != second
    assert_table(
        spark,
        target,
        ["id", "user", "amount", "_rescued_data"],
        rows,
        json_columns=["_rescued_data"],
    )


NESTED = [
    {
        "id": 1,
        "price": 9,
        "ok": True,
        "nothing": None,
        "tags": {"page": {"name": "home", "id": 7}, "eventType": "click"},
    },
    {
        "id": 2,
        "price": 9.5,
        "ok": False,
        "nothing": None,
        "tags": {"page": {"name": None, "id": 8}, "eventType": None},
    },
    {"id": 3, "price": None, "ok": None, "nothing": None, "tags": None},
]

LATER = {"id": 4, "price": 1.25, "ok": None, "nothing": None, "tags": None}  # ok: NULL throughout


def test_transform_nested_json(spark, tmp_path):
    """patterns, "Transform nested JSON data": ``selectExpr`` with ``tags:page.name``,
    ``tags:page.id::int`` and ``tags:eventType`` on the inferred string column."""
    landing, checkpoint = str(tmp_path / "landing"), str(tmp_path / "checkpoint")
    write_json(landing, "a.json", NESTED)
    df = (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.schemaLocation", checkpoint)  # <path_to_checkpoint>
        .load(landing)  # <source_data_with_nested_json>
        .selectExpr("*", "tags:page.name", "tags:page.id::int", "tags:eventType")
    )
    query = (
        df.writeStream.format("memory")
        .queryName("transform_nested_json")
        .option("checkpointLocation", str(tmp_path / "memory"))
        .trigger(availableNow=True)
        .start()
    )
    finish(query)
    got = [tuple(r)[-3:] for r in spark.table("transform_nested_json").collect()]
    want = [
        (None, None, None)
        if e["tags"] is None
        else (e["tags"]["page"]["name"], e["tags"]["page"]["id"], e["tags"]["eventType"])
        for e in NESTED
    ]
    assert bag(got) == bag(want)


def test_infer_nested_json(spark, tmp_path):
    """patterns, "Infer nested JSON data": ``cloudFiles.inferColumnTypes``: numbers,
    booleans and nested structs typed, an int column widened by a later double, a column
    only ever null a string."""
    landing, checkpoint, out = (str(tmp_path / n) for n in ("landing", "checkpoint", "out"))
    write_json(landing, "a.json", NESTED)
    write_json(landing, "b.json", [LATER])
    df = (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.schemaLocation", checkpoint)  # <path_to_checkpoint>
        .option("cloudFiles.inferColumnTypes", "true")
        .load(landing)  # <source_data_with_nested_json>
    )
    _drain(df, out, str(tmp_path / "sink"))
    assert_schema(
        spark,
        out,
        {
            "id": "bigint",
            "price": "double",
            "ok": "boolean",
            "nothing": "string",
            "tags": "struct<eventType:string,page:struct<id:bigint,name:string>>",
            "_rescued_data": "string",
        },
    )
    rows = [
        (e["id"], None if e["price"] is None else float(e["price"]), e["ok"], None, e["tags"], None)
        for e in [*NESTED, LATER]
    ]
    assert_table(spark, out, ["id", "price", "ok", "nothing", "tags", "_rescued_data"], rows)


CSV_SCHEMA = StructType(
    [
        StructField("id", IntegerType()),
        StructField("name", StringType()),
        StructField("amount", IntegerType()),
    ]
)


def test_load_csv_files_without_headers(spark, tmp_path):
    """patterns, "Load CSV files without headers": a given schema and
    ``rescuedDataColumn``: a value that does not fit is rescued under its column's name."""
    landing = str(tmp_path / "landing")
    path = write_lines(landing, "a.csv", ["1,ann,10", "2,,oops", "3,cy,"])
    df = (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "csv")
        .option("rescuedDataColumn", "_rescued_data")  # makes sure that you don't lose data
        .schema(CSV_SCHEMA)  # <schema>
        .load(landing)  # <path>
    )
    out = str(tmp_path / "out")
    _drain(df, out, str(tmp_path / "sink"))
    rows = [
        (1, "ann", 10, None),
        (2, None, None, {"amount": "oops", "_file_path": path}),
        (3, "cy", None, None),
    ]
    assert_table(
        spark, out, ["id", "name", "amount", "_rescued_data"], rows, json_columns=["_rescued_data"]
    )


def test_enforce_a_schema_on_csv_files_with_headers(spark, tmp_path):
    """patterns, "Enforce a schema on CSV files with headers": the header names the
    columns; a header column the schema lacks is rescued."""
    landing = str(tmp_path / "landing")
    path = write_lines(landing, "a.csv", ["id,name,amount,note", "1,ann,10,x", "2,bo,oops,"])
    df = (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "csv")
        .option("header", "true")
        .option("rescuedDataColumn", "_rescued_data")  # makes sure that you don't lose data
        .schema(CSV_SCHEMA)  # <schema>
        .load(landing)  # <path>
    )
    out = str(tmp_path / "out")
    _drain(df, out, str(tmp_path / "sink"))
    rows = [
        (1, "ann", 10, {"note": "x", "_file_path": path}),
        (2, "bo", None, {"amount": "oops", "_file_path": path}),
    ]
    assert_table(
        spark, out, ["id", "name", "amount", "_rescued_data"], rows, json_columns=["_rescued_data"]
    )


def test_ingest_binary_data(spark, tmp_path):
    """patterns, "Ingest image or binary data to Delta Lake for ML": ``binaryFile``."""
    landing, checkpoint, target = (str(tmp_path / n) for n in ("landing", "checkpoint", "target"))
    os.makedirs(landing)
    blobs = {"a.png": b"\x89PNG\r\n\x1a\n", "b.bin": bytes(range(256)), "empty.bin": b""}
    for name, content in blobs.items():
        with open(os.path.join(landing, name), "wb") as f:
            f.write(content)
    finish(
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "binaryFile")
        .load(landing)  # <path_to_source_data>
        .writeStream.option("checkpointLocation", checkpoint)  # <path_to_checkpoint>
        .trigger(availableNow=True)
        .start(target)  # <path_to_target
    )
    got = spark.read.format("delta").load(target).select("path", "length", "content").collect()
    want = [(os.path.join(landing, n), len(c), c) for n, c in blobs.items()]
    assert bag((r.path.removeprefix("file:"), r.length, bytes(r.content)) for r in got) == bag(want)


def test_schema_hints(spark, tmp_path):
    """schema, "Override schema inference with schema hints": ``tags map<string,string>,
    version int`` over inferred strings; a version that is not a number is rescued."""
    landing, checkpoint, out = (str(tmp_path / n) for n in ("landing", "checkpoint", "out"))
    path = write_json(
        landing,
        "a.json",
        [
            {"name": "x", "tags": {"a": "1", "b": None}, "version": 3},
            {"name": None, "tags": {}, "version": "abc"},
            {"name": "z", "tags": None, "version": None},
        ],
    )
    df = (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.schemaLocation", checkpoint)
        .option("cloudFiles.schemaHints", "tags map<string,string>, version int")
        .load(landing)
    )
    _drain(df, out, str(tmp_path / "sink"))
    schema = {
        "name": "string",
        "tags": "map<string,string>",
        "version": "int",
        "_rescued_data": "string",
    }
    assert_schema(spark, out, schema)
    rows = [
        ("x", {"a": "1", "b": None}, 3, None),
        (None, {}, None, {"version": "abc", "_file_path": path}),
        ("z", None, None, None),
    ]
    assert_table(spark, out, list(schema), rows, json_columns=["_rescued_data"])


def test_etl_quick_start(spark, tmp_path):
    """The ETL tutorial's Auto Loader cell: JSON events into a table by name, with the
    source file and the processing time, ``trigger(availableNow=True)``, ``toTable``."""
    file_path = str(tmp_path / "structured-streaming" / "events")  # changed: path (a dataset)
    files = [
        write_json(
            file_path,
            f"file-{i}.json",
            [
                {"time": 1469501107 + 60 * i + j, "action": a}
                for j, a in enumerate(("Open", "Close"))
            ],
        )
        for i in range(3)
    ]
    username = spark.sql("SELECT regexp_replace(current_user(), '[^a-zA-Z0-9]', '_')").first()[0]
    table_name = f"{username}_etl_quickstart"
    checkpoint_path = str(tmp_path / username / "_checkpoint" / "etl_quickstart")  # changed: path
    spark.sql(f"DROP TABLE IF EXISTS {table_name}")
    # dbutils.fs.rm(checkpoint_path, True) left out: dbutils is the platform's; the path is new
    try:
        (
            spark.readStream.format("cloudFiles")
            .option("cloudFiles.format", "json")
            .option("cloudFiles.schemaLocation", checkpoint_path)
            .load(file_path)
            .select(
                "*",
                col("_metadata.file_path").alias("source_file"),
                current_timestamp().alias("processing_time"),
            )
            .writeStream.option("checkpointLocation", checkpoint_path)
            .trigger(availableNow=True)
            .toTable(table_name)
        ).awaitTermination()  # the tutorial's next cell reads the table
        df = spark.read.table(table_name)
        assert df.where("processing_time IS NULL").count() == 0
        rows = [
            (str(1469501107 + 60 * i + j), a, "file:" + files[i])
            for i in range(3)
            for j, a in enumerate(("Open", "Close"))
        ]
        assert_table(spark, table_name, ["time", "action", "source_file"], rows)
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {table_name}")
