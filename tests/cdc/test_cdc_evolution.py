"""What the chain needs from AUTO CDC beyond plain upserts: a TOASTed column
Debezium leaves out of an update (REPLICA IDENTITY DEFAULT) keeps the target's value
(``unavailable_columns``), and a column added in the database reaches the targets
(schema evolution). headwater.debezium already hands both over: ``_unavailable`` names
the left-out columns, and a restarted stream reads the new schema from the topic."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.cdc.chain import connector_config, kafka_connect
from tests.cdc.test_cdc_chain import PIPELINE, project, wait_for_messages

EVOLVING = PIPELINE.replace(
    "except_column_list=META,", 'except_column_list=META, unavailable_columns="_unavailable",'
)
LONG = "(SELECT string_agg(md5(i::text), '') FROM generate_series(1, 500) i)"


def run_until_equal(spark, root, postgres, name: str, columns: str) -> None:
    """One update (two when the first fails on the schema change, as a restart does);
    then SCD1 and SCD2's current rows equal the table."""
    from headwater import pipelines

    result = pipelines.run(root, spark)
    if not result.ok:
        result = pipelines.run(root, spark)
    assert result.ok, [(f.name, f.error) for f in result.failed()]
    want = [tuple(r) for r in postgres.rows(f"SELECT {columns} FROM docs ORDER BY id")]
    for table, where in ((f"{name}.docs", "true"), (f"{name}.docs_history", "__END_AT IS NULL")):
        got = spark.table(table).where(where).selectExpr(*columns.split(", ")).orderBy("id")
        assert [tuple(r) for r in got.collect()] == want


def test_toasted_column_left_out_and_a_column_added_mid_stream(
    spark, broker, postgres, connect_classpath, tmp_path: Path
):
    name = f"e{uuid.uuid4().hex[:8]}"
    pipeline = EVOLVING.replace("accounts", "docs")
    postgres.execute(
        "CREATE TABLE docs (id INT PRIMARY KEY, title TEXT, body TEXT)",
        f"INSERT INTO docs VALUES (1, 'one', {LONG}), (2, 'two', 'short')",
    )
    topic = f"{name}.public.docs"
    root = project(tmp_path, name, broker.bootstrap, topic, pipeline)
    config = connector_config(name, postgres, ["public.docs"])
    try:
        with kafka_connect(connect_classpath, broker.bootstrap, {name: config}):
            wait_for_messages(broker, topic, 2)
            run_until_equal(spark, root, postgres, name, "id, title, body")
            postgres.execute("UPDATE docs SET title = 'uno' WHERE id = 1")  # body left out
            wait_for_messages(broker, topic, 3)
            run_until_equal(spark, root, postgres, name, "id, title, body")
            postgres.execute(
                "ALTER TABLE docs ADD COLUMN pages INT",
                "UPDATE docs SET pages = 7 WHERE id = 2",
            )
            wait_for_messages(broker, topic, 4)
            run_until_equal(spark, root, postgres, name, "id, title, body, pages")
    finally:
        postgres.execute("DROP TABLE docs")


def test_a_stream_fails_on_a_new_column_and_reads_it_when_restarted(
    spark, broker, postgres, connect_classpath
):
    from pyspark.errors import StreamingQueryException

    from headwater import debezium

    name = f"s{uuid.uuid4().hex[:8]}"
    postgres.execute("CREATE TABLE notes (id INT PRIMARY KEY, title TEXT)",
                     "INSERT INTO notes VALUES (1, 'one')")  # fmt: skip
    topic = f"{name}.public.notes"
    config = connector_config(name, postgres, ["public.notes"])

    def changes():
        stream = (spark.readStream.format("kafka")
                  .option("kafka.bootstrap.servers", broker.bootstrap)
                  .option("subscribe", topic).option("startingOffsets", "earliest").load())  # fmt: skip
        return debezium.changes(stream)

    def drain(out, query_name: str):
        query = (out.writeStream.format("memory").queryName(query_name)
                 .trigger(availableNow=True).start())  # fmt: skip
        query.awaitTermination()
        return spark.table(query_name).orderBy("_sequence")

    try:
        with kafka_connect(connect_classpath, broker.bootstrap, {name: config}):
            wait_for_messages(broker, topic, 1)
            before = changes()  # its columns are fixed now
            assert before.columns[:2] == ["id", "title"] and "pages" not in before.columns
            postgres.execute("ALTER TABLE notes ADD COLUMN pages INT",
                             "INSERT INTO notes VALUES (2, 'two', 7)")  # fmt: skip
            wait_for_messages(broker, topic, 2)
            with pytest.raises(StreamingQueryException, match="DEBEZIUM_SCHEMA_CHANGED"):
                drain(before, f"{name}_old")
            rows = drain(changes(), f"{name}_new")  # started again: the new schema
            assert [(r.id, r.title, r.pages) for r in rows.collect()] == [
                (1, "one", None),
                (2, "two", 7),
            ]
    finally:
        postgres.execute("DROP TABLE notes")
