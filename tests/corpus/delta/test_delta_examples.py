"""delta-spark's own examples, ``examples/python`` in github.com/delta-io/delta at tag
v4.4.0 (commit 88c008d55b38fb8f49a9a80982004cb5b06a2b59, read 2026-11-29; Apache-2.0).

Each test makes the example's calls in its order, with its names, options and SQL; the
lines marked ``# changed:`` differ as the README says users change code (the import of
``DeltaTable``, the session, paths). Checks are inserted where the example shows a table.
The examples' ``SparkSession.builder`` lines are the session line: the test process's
headwater session (``spark``) stands in, and ``spark.stop()`` is left to the fixture.
"""

from __future__ import annotations

import os
import random
import shutil

from delta_corpus import assert_table, bag, history_operations, rs_changes
from pyspark.sql.functions import col, expr
from pyspark.sql.utils import AnalysisException

from headwater.delta.tables import DeltaTable  # changed: was from delta.tables


def test_quickstart_py(spark, tmp_path):
    """examples/python/quickstart.py: create, read, merge, overwrite, update, delete, time
    travel, on one path."""
    path = str(tmp_path / "delta-table")  # changed: path (was /tmp/delta-table)
    shutil.rmtree(path, ignore_errors=True)

    data = spark.range(0, 5)
    data.write.format("delta").save(path)
    ids = set(range(0, 5))
    assert_table(spark, path, ["id"], [(i,) for i in ids])

    df = spark.read.format("delta").load(path)
    df.show()

    newData = spark.range(0, 20)
    deltaTable = DeltaTable.forPath(spark, path)
    deltaTable.alias("oldData").merge(
        newData.alias("newData"), "oldData.id = newData.id"
    ).whenMatchedUpdate(set={"id": col("newData.id")}).whenNotMatchedInsert(
        values={"id": col("newData.id")}
    ).execute()
    deltaTable.toDF().show()
    ids |= set(range(0, 20))  # matched ids keep their value, the others are inserted
    assert_table(spark, path, ["id"], [(i,) for i in ids])

    data = spark.range(5, 10)
    data.write.format("delta").mode("overwrite").save(path)
    deltaTable.toDF().show()
    ids = set(range(5, 10))
    assert_table(spark, path, ["id"], [(i,) for i in ids])

    deltaTable = DeltaTable.forPath(spark, path)
    deltaTable.update(condition=expr("id % 2 == 0"), set={"id": expr("id + 100")})
    deltaTable.toDF().show()
    ids = {i + 100 if i % 2 == 0 else i for i in ids}
    assert_table(spark, path, ["id"], [(i,) for i in ids])

    deltaTable.delete(condition=expr("id % 2 == 0"))
    deltaTable.toDF().show()
    ids = {i for i in ids if i % 2 != 0}
    assert_table(spark, path, ["id"], [(i,) for i in ids])

    df = spark.read.format("delta").option("versionAsOf", 0).load(path)
    df.show()
    assert bag(df.collect()) == bag((i,) for i in range(0, 5))
    assert_table(spark, path, ["id"], [(i,) for i in range(0, 5)], version=0)
    assert history_operations(path) == ["WRITE", "MERGE", "WRITE", "UPDATE", "DELETE"]

    shutil.rmtree(path)


def _quickstart_sql(spark, table: str, source: str, path_form: bool) -> None:
    """The statements quickstart_sql.py and quickstart_sql_on_paths.py share, checked
    after each; ``table`` is how the statements name the target."""
    target = table[len("delta.`") : -1] if path_form else table
    spark.sql(f"CREATE TABLE {table}(id LONG) USING delta")
    spark.sql(f"INSERT INTO {table} VALUES 0, 1, 2, 3, 4")
    ids = [0, 1, 2, 3, 4]
    spark.sql(f"SELECT * FROM {table}").show()
    assert_table(spark, target, ["id"], [(i,) for i in ids])

    spark.sql("CREATE TABLE newData(id LONG) USING parquet")
    spark.sql("INSERT INTO newData VALUES 3, 4, 5, 6")
    new = [3, 4, 5, 6]
    assert bag(spark.table("newData").collect()) == bag((i,) for i in new)  # not a Delta table

    alias = "data" if path_form else table
    spark.sql(
        f"""MERGE INTO {table}{" AS data" if path_form else ""} USING newData
            ON {alias}.id = newData.id
            WHEN MATCHED THEN
              UPDATE SET {alias}.id = newData.id
            WHEN NOT MATCHED THEN INSERT *
        """
    )
    spark.sql(f"SELECT * FROM {table}").show()
    ids = sorted(set(ids) | set(new))
    assert_table(spark, target, ["id"], [(i,) for i in ids])

    spark.sql(f"INSERT OVERWRITE {table} select * FROM (VALUES 5, 6, 7, 8, 9) x (id)")
    spark.sql(f"SELECT * FROM {table}").show()
    ids = [5, 6, 7, 8, 9]
    assert_table(spark, target, ["id"], [(i,) for i in ids])

    spark.sql(f"UPDATE {table} SET id = (id + 100) WHERE (id % 2 == 0)")
    spark.sql(f"SELECT * FROM {table}").show()
    ids = [i + 100 if i % 2 == 0 else i for i in ids]
    assert_table(spark, target, ["id"], [(i,) for i in ids])

    spark.sql(f"DELETE FROM {table} WHERE (id % 2 == 0)")
    spark.sql(f"SELECT * FROM {table}").show()
    ids = [i for i in ids if i % 2 != 0]
    assert_table(spark, target, ["id"], [(i,) for i in ids])
    # versions: 0 CREATE TABLE (empty), 1 INSERT, 2 MERGE, 3 overwrite, 4 UPDATE, 5 DELETE
    assert_table(spark, target, ["id"], [], version=0)
    assert_table(spark, target, ["id"], [(i,) for i in range(5)], version=1)


def test_quickstart_sql_py(spark):
    """examples/python/quickstart_sql.py: the same steps in SQL on a table by name, and
    time travel with ``.option("versionAsOf", 0).table(name)``."""
    tableName = "tbltestpython"
    spark.sql("DROP TABLE IF EXISTS " + tableName)
    spark.sql("DROP TABLE IF EXISTS newData")
    try:
        _quickstart_sql(spark, tableName, "newData", path_form=False)
        df = spark.read.format("delta").option("versionAsOf", 0).table(tableName)
        df.show()
        assert df.collect() == []  # version 0 is the CREATE TABLE: no rows yet
    finally:
        spark.sql("DROP TABLE " + tableName)
        spark.sql("DROP TABLE IF EXISTS newData")
        # spark.stop() left out: the session is the test process's (the session line)
    assert not spark.catalog.tableExists(tableName)


def test_quickstart_sql_on_paths_py(spark, tmp_path):
    """examples/python/quickstart_sql_on_paths.py: the SQL steps on ``delta.`<path>```."""
    table_dir = str(tmp_path / "delta-table")  # changed: path (was /tmp/delta-table)
    shutil.rmtree(table_dir, ignore_errors=True)
    spark.sql("DROP TABLE IF EXISTS newData")
    try:
        _quickstart_sql(spark, f"delta.`{table_dir}`", "newData", path_form=True)
    finally:
        spark.sql("DROP TABLE IF EXISTS newData")
        # spark.stop() left out: the session is the test process's (the session line)


def test_utilities_py(spark, tmp_path):
    """examples/python/utilities.py: convertToDelta, vacuum, history, detail, the symlink
    manifest, SQL VACUUM on a quoted path and DESCRIBE HISTORY."""
    path = str(tmp_path / "delta-table")  # changed: path (was /tmp/delta-table)
    shutil.rmtree(path, ignore_errors=True)

    data = spark.range(0, 5)
    data.write.format("parquet").save(path)
    parquet_files = sorted(f for f in os.listdir(path) if f.endswith(".parquet"))

    DeltaTable.convertToDelta(spark, f"parquet.`{path}`")  # changed: path
    df = spark.read.format("delta").load(path)
    df.show()
    assert_table(spark, path, ["id"], [(i,) for i in range(5)])

    deltaTable = DeltaTable.forPath(spark, path)
    deltaTable.vacuum()
    assert sorted(f for f in os.listdir(path) if f.endswith(".parquet")) == parquet_files

    history = deltaTable.history()
    history.show()
    logged = history_operations(path)
    assert [r.operation for r in history.orderBy("version").collect()] == logged
    assert logged[0] == "CONVERT"

    detail = deltaTable.detail()
    detail.show()
    row = detail.collect()[0]
    assert (row.format, row.numFiles, row.partitionColumns) == ("delta", len(parquet_files), [])
    assert row.sizeInBytes == sum(os.path.getsize(os.path.join(path, f)) for f in parquet_files)
    assert row.location.removeprefix("file:") == path

    deltaTable.generate("SYMLINK_FORMAT_MANIFEST")
    with open(os.path.join(path, "_symlink_format_manifest", "manifest")) as f:
        listed = sorted(os.path.basename(line.strip()) for line in f if line.strip())
    assert listed == parquet_files

    spark.sql(f"VACUUM '{path}' RETAIN 169 HOURS").collect()  # changed: path
    described = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()  # changed: path
    print(described)
    assert sorted(r.version for r in described) == list(range(len(history_operations(path))))
    assert_table(spark, path, ["id"], [(i,) for i in range(5)])

    shutil.rmtree(path)


def exists(spark, filepath):
    """Checks if a delta table exists at `filepath` (examples/python/table_exists.py)."""
    try:
        spark.read.load(path=filepath, format="delta")
    except AnalysisException as exception:
        if "is not a Delta table" in str(exception) or "Path does not exist" in str(exception):
            return False
        raise exception
    return True


def test_table_exists_py(spark, tmp_path):
    """examples/python/table_exists.py: tells a Delta table from a missing path by the
    error message delta-spark gives."""
    filepath = str(tmp_path / "table_exists")  # changed: path (was /tmp/table_exists)
    shutil.rmtree(filepath, ignore_errors=True)
    assert not exists(spark, filepath)
    data = spark.range(0, 5)
    data.write.format("delta").save(filepath)
    assert exists(spark, filepath)
    assert_table(spark, filepath, ["id"], [(i,) for i in range(5)])
    shutil.rmtree(filepath)


def _student_changes():
    """The change data feed change_data_feed.py's steps make, computed in Python:
    (id, name, age, change type, version) per change, and the table after the last step."""
    rows = [(i, str(i), i % 4 + 18) for i in range(10)]
    changes = [(*r, "insert", 1) for r in rows]
    updated = [(i + 1, n, a) for i, n, a in rows]  # v2: id -> id + 1
    changes += [(*r, "update_preimage", 2) for r in rows]
    changes += [(*r, "update_postimage", 2) for r in updated]
    changes += [(*r, "delete", 3) for r in updated if r[0] >= 7]  # v3
    rows = [r for r in updated if r[0] < 7]
    changes += [(*r, "delete", 4) for r in rows if r[2] == 18]  # v4: a whole partition
    rows = [r for r in rows if r[2] != 18]
    source = [(i, str(i), i % 4 + 18) for i in range(3)]  # v5: the MERGE
    merged = []
    for r in rows:
        match = [s for s in source if s[0] == r[0]]
        if match:
            after = (match[0][0], r[1], match[0][2] + 10)
            changes += [(*r, "update_preimage", 5), (*after, "update_postimage", 5)]
            merged.append(after)
        else:
            merged.append(r)
    inserted = [s for s in source if s[0] not in {r[0] for r in rows}]
    changes += [(*s, "insert", 5) for s in inserted]
    return changes, merged + inserted


def test_change_data_feed_py(spark, tmp_path):
    """examples/python/change_data_feed.py: a partitioned table with the change data feed;
    UPDATE, DELETE, a partition DELETE and MERGE, each read back as changes by table name,
    then streamed to the console."""
    path = str(tmp_path / "student")  # changed: path (was /tmp/delta-change-data-feed/...)
    otherPath = str(tmp_path / "student_source")  # changed: path

    def cleanup():
        shutil.rmtree(path, ignore_errors=True)
        shutil.rmtree(otherPath, ignore_errors=True)
        spark.sql("DROP TABLE IF EXISTS student")
        spark.sql("DROP TABLE IF EXISTS student_source")

    def read_cdc_by_table_name(starting_version):
        return (
            spark.read.format("delta")
            .option("readChangeFeed", "true")
            .option("startingVersion", str(starting_version))
            .table("student")
            .orderBy("_change_type", "id")
        )

    def stream_cdc_by_table_name(starting_version):
        return (
            spark.readStream.format("delta")
            .option("readChangeFeed", "true")
            .option("startingVersion", str(starting_version))
            .table("student")
            .writeStream.format("console")
            .option("numRows", 1000)
            .start()
        )

    changes, final = _student_changes()
    columns = ["id", "name", "age"]

    def check_feed(start):
        latest = history_operations(path).__len__() - 1
        want = bag(c for c in changes if start <= c[4] <= latest)
        cols = [*columns, "_change_type", "_commit_version"]
        assert bag(read_cdc_by_table_name(start).select(*cols).collect()) == want
        assert rs_changes(path, start, columns) == want

    cleanup()
    try:
        spark.sql(
            f"""CREATE TABLE student (id INT, name STRING, age INT)
                 USING DELTA
                 PARTITIONED BY (age)
                 TBLPROPERTIES (delta.enableChangeDataFeed = true)
                 LOCATION '{path}'
             """
        )
        spark.range(0, 10).selectExpr(
            "CAST(id as INT) as id", "CAST(id as STRING) as name", "CAST(id % 4 + 18 as INT) as age"
        ).write.format("delta").mode("append").save(path)
        spark.read.format("delta").load(path).orderBy("id").show()
        read_cdc_by_table_name(1).show()
        check_feed(1)

        table = DeltaTable.forPath(spark, path)
        table.update(set={"id": expr("id + 1")})
        read_cdc_by_table_name(2).show()
        check_feed(2)
        table.delete(condition=expr("id >= 7"))
        read_cdc_by_table_name(3).show()
        check_feed(3)
        table.delete(condition=expr("age = 18"))
        read_cdc_by_table_name(4).show()
        check_feed(4)

        spark.sql(
            f"""CREATE TABLE student_source (id INT, name STRING, age INT)
                 USING DELTA
                 LOCATION '{otherPath}'
             """
        )
        spark.range(0, 3).selectExpr(
            "CAST(id as INT) as id", "CAST(id as STRING) as name", "CAST(id % 4 + 18 as INT) as age"
        ).write.format("delta").mode("append").saveAsTable("student_source")
        source = spark.sql("SELECT * FROM student_source")
        assert_table(spark, otherPath, columns, [(i, str(i), i % 4 + 18) for i in range(3)])

        table.alias("target").merge(
            source.alias("source"), "target.id = source.id"
        ).whenMatchedUpdate(
            set={"id": "source.id", "age": "source.age + 10"}
        ).whenNotMatchedInsertAll().execute()
        read_cdc_by_table_name(5).show()
        check_feed(5)
        check_feed(1)
        assert_table(spark, "student", columns, final)

        cdfStream = stream_cdc_by_table_name(0)
        cdfStream.processAllAvailable()  # was awaitTermination(10): run until caught up
        cdfStream.stop()
        assert sum(p["numInputRows"] for p in cdfStream.recentProgress) == len(changes)
    finally:
        cleanup()
        # spark.stop() left out: the session is the test process's (the session line)


def test_streaming_py_write_and_read(spark, tmp_path):
    """examples/python/streaming.py, first part: a table of random values, the rate source
    streamed into a second table, and that table streamed to the console."""
    root = str(tmp_path / "delta-streaming")  # changed: path (was /tmp/delta-streaming)
    random.seed(7)  # the oracle draws the same random offset below
    shutil.rmtree(root + "/", ignore_errors=True)

    data = spark.range(8)
    data = data.withColumn("value", data.id + random.randint(0, 5000))
    data.write.format("delta").save(root + "/delta-table")
    random.seed(7)
    offset = random.randint(0, 5000)
    assert_table(spark, root + "/delta-table", ["id", "value"], [(i, i + offset) for i in range(8)])

    streamingDf = spark.readStream.format("rate").load()
    stream = (
        streamingDf.selectExpr("value as id")
        .writeStream.format("delta")
        .option("checkpointLocation", root + "/checkpoint")
        .start(root + "/delta-table2")
    )
    _run_until(stream, rows=3)  # was awaitTermination(10): until a few rows are in
    stream.stop()
    written = spark.read.format("delta").load(root + "/delta-table2").count()
    # the rate source counts 0, 1, 2, ...: the table holds each value once, from 0
    assert written >= 3
    assert_table(spark, root + "/delta-table2", ["id"], [(i,) for i in range(written)])

    stream2 = (
        spark.readStream.format("delta")
        .load(root + "/delta-table2")
        .writeStream.format("console")
        .start()
    )
    stream2.processAllAvailable()  # was awaitTermination(10): run until caught up
    stream2.stop()
    assert sum(p["numInputRows"] for p in stream2.recentProgress) == written
    shutil.rmtree(root + "/", ignore_errors=True)


def _run_until(query, rows: int, timeout: float = 120) -> None:
    """Let a rate-fed stream run until its progress reports ``rows`` rows."""
    import time

    deadline = time.monotonic() + timeout
    while sum(p["numInputRows"] for p in query.recentProgress) < rows:
        if query.exception() is not None:
            raise query.exception()
        assert time.monotonic() < deadline, f"fewer than {rows} rows after {timeout}s"
        time.sleep(0.2)


def _upserted(start: list[tuple[int, int]], rows: int) -> list[tuple[int, int]]:
    """streaming.py's target after its merge has taken rate rows ``0 .. rows-1`` (one per
    batch or so: no batch holds the same id twice), each as ``(id = value % 10, value)``."""
    table = dict(start)
    for value in range(rows):
        table[value % 10] = value
    return sorted(table.items())


def test_streaming_py_foreach_batch_upsert(spark, tmp_path):
    """examples/python/streaming.py, second part: rate rows upserted into a Delta table by
    ``DeltaTable.merge`` in ``foreachBatch``, output mode update."""
    root = str(tmp_path / "delta-streaming")  # changed: path (was /tmp/delta-streaming)
    random.seed(11)
    data = spark.range(8)
    data = data.withColumn("value", data.id + random.randint(0, 5000))
    data.write.format("delta").save(root + "/delta-table")
    random.seed(11)
    offset = random.randint(0, 5000)
    start = [(i, i + offset) for i in range(8)]

    def upsertToDelta(microBatchOutputDF, batchId):
        deltaTable.alias("t").merge(
            microBatchOutputDF.alias("s"), "s.id = t.id"
        ).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()

    streamingAggregatesDF = (
        spark.readStream.format("rate").load().withColumn("id", col("value") % 10).drop("timestamp")
    )
    deltaTable = DeltaTable.forPath(spark, root + "/delta-table")
    deltaTable.toDF().show()
    stream3 = (
        streamingAggregatesDF.writeStream.format("delta")
        .foreachBatch(upsertToDelta)
        .outputMode("update")
        .start()
    )
    _run_until(stream3, rows=3)  # was awaitTermination(10): until a few rows are merged
    stream3.stop()
    deltaTable.toDF().show()
    seen = sum(p["numInputRows"] for p in stream3.recentProgress)
    got = bag(tuple(r) for r in deltaTable.toDF().select("id", "value").collect())
    # The table holds the merge of rate rows 0 .. n-1 for one n: progress over-counts a
    # merge's input (it reads it twice), and a batch merged as the stream stopped may be
    # missing from it.
    assert any(got == bag(_upserted(start, n)) for n in range(1, seen + 3)), got
    assert_table(spark, root + "/delta-table", ["id", "value"], got)


def test_streaming_py_append_while_rearranged(spark, tmp_path):
    """examples/python/streaming.py, last part: a table streamed into another while a batch
    job rewrites it with ``dataChange = false``; the stream must deliver no row twice."""
    root = str(tmp_path / "delta-streaming")  # changed: path (was /tmp/delta-streaming)
    tbl1 = root + "/delta-table4"  # changed: path
    tbl2 = root + "/delta-table5"  # changed: path
    numRows = 10
    spark.range(numRows).write.mode("overwrite").format("delta").save(tbl1)
    spark.read.format("delta").load(tbl1).show()
    spark.range(numRows, numRows * 10).write.mode("overwrite").format("delta").save(tbl2)

    stream4 = (
        spark.readStream.format("delta")
        .load(tbl2)
        .writeStream.format("delta")
        .option("checkpointLocation", root + "/checkpoint/tbl1")  # changed: path
        .outputMode("append")
        .start(tbl1)
    )
    spark.read.format("delta").load(tbl2).repartition(10).write.format("delta").mode(
        "overwrite"
    ).option("dataChange", "false").save(tbl2)
    stream4.processAllAvailable()  # was awaitTermination(10): run until caught up
    stream4.stop()
    spark.read.format("delta").load(tbl1).show()
    assert_table(spark, tbl2, ["id"], [(i,) for i in range(numRows, numRows * 10)])
    assert_table(spark, tbl1, ["id"], [(i,) for i in range(numRows * 10)])
    shutil.rmtree(root + "/", ignore_errors=True)
