"""Type widening, as delta-spark users run it: ``ALTER TABLE ... ALTER COLUMN c TYPE <wider>``
(or ``CHANGE COLUMN c c <wider>``) on a table with ``delta.enableTypeWidening = true``
changes only the schema; files written before keep their narrow type and every read
(native scan, Python path, DML, streams) upcasts them. The log carries the ``typeWidening``
feature and each column's ``delta.typeChanges``, as delta-spark writes them."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable as RsTable
from pyspark.errors import StreamingQueryException
from pyspark.sql.types import (
    DecimalType,
    DoubleType,
    LongType,
    ShortType,
    TimestampNTZType,
)

from headwater.delta.tables import DeltaTable
from headwater.errors import (
    SchemaMismatchError,
    UnsupportedFeatureError,
)
from headwater.sql.text import SqlError
from tests.delta.helpers import drain_to_memory

BIG = 5_000_000_000  # past 2^31: only fits once the column is a long


def _create(spark, path: str, columns: str, widening: bool = True, extra: str = "") -> None:
    props = "'delta.enableTypeWidening' = 'true'" if widening else "'delta.appendOnly' = 'false'"
    spark.sql(f"CREATE TABLE delta.`{path}` ({columns}) USING DELTA TBLPROPERTIES ({props}{extra})")


def _rows(spark, path: str, order: str = "id") -> list[tuple]:
    return [tuple(r) for r in spark.read.format("delta").load(path).orderBy(order).collect()]


def _last_commit(path: str) -> dict:
    log = sorted(Path(path, "_delta_log").glob("*.json"))[-1]
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    return next(a["commitInfo"] for a in actions if "commitInfo" in a)


def _field(path: str, name: str) -> dict:
    schema = json.loads(RsTable(path).schema().to_json())
    return next(f for f in schema["fields"] if f["name"] == name)


@pytest.fixture
def widened(spark, tmp_path):
    """A table whose first file was written as (int, float, date, decimal(5,2), short) and
    whose columns were then widened to (bigint, double, timestamp_ntz, decimal(10,4), double),
    with a second file written in the wide types."""
    path = str(tmp_path / "widened")
    _create(spark, path, "id INT, f FLOAT, d DATE, m DECIMAL(5,2), s SMALLINT")
    spark.sql(
        f"INSERT INTO delta.`{path}` VALUES (1, 1.5, DATE'2024-01-02', 123.45, 7), "
        "(2, 2.5, DATE'2024-03-04', -1.10, 8)"
    )
    for column, wider in [
        ("id", "BIGINT"),
        ("f", "DOUBLE"),
        ("d", "TIMESTAMP_NTZ"),
        ("m", "DECIMAL(10,4)"),
        ("s", "DOUBLE"),
    ]:
        spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN {column} TYPE {wider}")
    spark.sql(
        f"INSERT INTO delta.`{path}` VALUES ({BIG}, 2.25, TIMESTAMP_NTZ'2024-05-06 07:08:09', "
        "123456.7891, 1.5)"
    )
    return path


EXPECTED = [
    (1, 1.5, dt.datetime(2024, 1, 2), Decimal("123.4500"), 7.0),
    (2, 2.5, dt.datetime(2024, 3, 4), Decimal("-1.1000"), 8.0),
    (BIG, 2.25, dt.datetime(2024, 5, 6, 7, 8, 9), Decimal("123456.7891"), 1.5),
]


def test_old_files_are_read_in_the_wider_types(spark, widened):
    df = spark.read.format("delta").load(widened)
    assert [f.dataType for f in df.schema] == [
        LongType(),
        DoubleType(),
        TimestampNTZType(),
        DecimalType(10, 4),
        DoubleType(),
    ]
    assert _rows(spark, widened) == EXPECTED
    # Filters on widened columns (file skipping over the old file's stats) keep every match.
    hits = spark.sql(f"SELECT id FROM delta.`{widened}` WHERE id > 1 AND d >= '2024-03-01'")
    assert sorted(r.id for r in hits.collect()) == [2, BIG]
    assert DeltaTable.forPath(spark, widened).toDF().count() == 3


def test_log_carries_the_feature_and_type_changes_as_delta_spark_writes_them(widened):
    table = RsTable(widened)
    protocol = table.protocol()
    assert (protocol.min_reader_version, protocol.min_writer_version) == (3, 7)
    assert "typeWidening" in protocol.reader_features
    assert "typeWidening" in protocol.writer_features
    assert table.metadata().configuration["delta.enableTypeWidening"] == "true"
    assert _field(widened, "id")["type"] == "long"
    assert _field(widened, "id")["metadata"]["delta.typeChanges"] == [
        {"fromType": "integer", "toType": "long"}
    ]
    assert _field(widened, "d")["metadata"]["delta.typeChanges"] == [
        {"fromType": "date", "toType": "timestamp_ntz"}
    ]
    assert _field(widened, "m")["metadata"]["delta.typeChanges"] == [
        {"fromType": "decimal(5,2)", "toType": "decimal(10,4)"}
    ]
    history = [h for h in table.history() if h["operation"] == "CHANGE COLUMN"]
    assert len(history) == 5
    column = json.loads(history[-1]["operationParameters"]["column"])  # the first change
    assert column["name"] == "id" and column["type"] == "long"
    assert column["metadata"]["delta.typeChanges"] == [{"fromType": "integer", "toType": "long"}]


def test_change_column_syntax_and_successive_changes_keep_the_history(spark, tmp_path):
    path = str(tmp_path / "t")
    _create(spark, path, "id INT, b TINYINT")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 100)")
    spark.sql(f"ALTER TABLE delta.`{path}` CHANGE COLUMN b b SMALLINT")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (2, 30000)")
    spark.sql(f"ALTER TABLE delta.`{path}` CHANGE COLUMN b b INT COMMENT 'grew twice'")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (3, 2000000000)")
    assert _rows(spark, path) == [(1, 100), (2, 30000), (3, 2_000_000_000)]
    meta = _field(path, "b")["metadata"]
    assert meta["comment"] == "grew twice"
    assert meta["delta.typeChanges"] == [
        {"fromType": "byte", "toType": "short"},
        {"fromType": "short", "toType": "integer"},
    ]
    assert _last_commit(path)["operation"] == "WRITE"
    # Another change keeps the recorded history (the spec requires writers to preserve it).
    spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS (note STRING)")
    assert len(_field(path, "b")["metadata"]["delta.typeChanges"]) == 2


def test_appends_of_the_wider_type_and_dataframe_writes(spark, tmp_path):
    path = str(tmp_path / "t")
    _create(spark, path, "id INT, v INT")
    spark.createDataFrame([(1, 10)], "id int, v int").write.format("delta").mode("append").save(
        path
    )
    spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN v TYPE BIGINT")
    spark.createDataFrame([(2, BIG)], "id int, v long").write.format("delta").mode("append").save(
        path
    )
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (3, 7)")  # an int literal, stored as a long
    assert _rows(spark, path) == [(1, 10), (2, BIG), (3, 7)]
    assert spark.read.format("delta").load(path).schema["v"].dataType == LongType()


def test_setting_the_property_later_adds_the_feature(spark, tmp_path):
    path = str(tmp_path / "t")
    _create(spark, path, "id INT, v SMALLINT", widening=False)
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 5)")
    assert "typeWidening" not in (RsTable(path).protocol().writer_features or [])
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    protocol = RsTable(path).protocol()
    assert "typeWidening" in protocol.reader_features
    assert "typeWidening" in protocol.writer_features
    spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN v TYPE INT")
    assert _rows(spark, path) == [(1, 5)]


def _refused(spark, path: str, column: str, target: str) -> str:
    """The message of the refused ``ALTER COLUMN column TYPE target``; nothing committed."""
    before = RsTable(path).version()
    with pytest.raises(SqlError) as e:
        spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN {column} TYPE {target}")
    assert isinstance(e.value.__cause__, SchemaMismatchError)
    assert "DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP" in str(e.value)
    assert RsTable(path).version() == before
    return str(e.value)


def test_widening_refused_without_the_property(spark, tmp_path):
    path = str(tmp_path / "t")
    _create(spark, path, "id INT", widening=False)
    message = _refused(spark, path, "id", "BIGINT")
    assert "delta.enableTypeWidening" in message and "column id " in message
    # Explicitly disabled is refused too.
    spark.sql(
        f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableTypeWidening' = 'false')"
    )
    with pytest.raises(SqlError, match="delta.enableTypeWidening"):
        spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN id TYPE BIGINT")


@pytest.mark.parametrize(
    ("column", "target", "hint"),
    [
        ("v", "INT", "bigint can widen to decimal"),  # narrowing
        ("v", "DOUBLE", "bigint can widen to decimal"),  # long -> double loses digits
        ("v", "STRING", "bigint"),
        ("m", "DECIMAL(6,4)", "decimal(5,2) can widen to decimal(5 + k1, 2 + k2)"),  # 2 digits < 3
        ("m", "DECIMAL(4,2)", "k1 >= k2 >= 0"),
        ("i", "DECIMAL(9,0)", "p - s >= 10"),
        ("f", "DECIMAL(10,2)", "float can widen to double"),
        ("d", "TIMESTAMP", "date can widen to timestamp_ntz"),
    ],
)
def test_unsupported_changes_name_the_column_and_the_allowed_widenings(
    spark, tmp_path, column, target, hint
):
    path = str(tmp_path / "t")
    _create(spark, path, "v BIGINT, m DECIMAL(5,2), i INT, f FLOAT, d DATE")
    message = _refused(spark, path, column, target)
    assert f"column {column} " in message and hint in message


def test_changes_refused_for_unknown_and_dependent_columns(spark, tmp_path):
    path = str(tmp_path / "t")
    _create(spark, path, "id INT, qty INT")
    spark.sql(f"ALTER TABLE delta.`{path}` ADD CONSTRAINT qty_pos CHECK (qty > 0)")
    with pytest.raises(SqlError, match="DELTA_COLUMN_NOT_FOUND.*nope"):
        spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN nope TYPE BIGINT")
    with pytest.raises(SqlError, match="CHECK constraint qty_pos"):
        spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN qty TYPE BIGINT")
    spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN ID TYPE BIGINT")  # case-insensitive
    assert _field(path, "id")["type"] == "long"


def test_dml_on_mixed_physical_types_keeps_every_row(spark, tmp_path):
    path = str(tmp_path / "t")
    _create(spark, path, "id INT, m DECIMAL(5,2), d DATE")
    spark.sql(
        f"INSERT INTO delta.`{path}` VALUES (1, 1.25, DATE'2024-01-01'), "
        "(2, 2.50, DATE'2024-01-02'), (3, 3.75, DATE'2024-01-03')"
    )
    spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN id TYPE BIGINT")
    spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN m TYPE DECIMAL(9,3)")
    spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN d TYPE TIMESTAMP_NTZ")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES ({BIG}, 123456.125, TIMESTAMP_NTZ'2024-02-01')")
    table = DeltaTable.forPath(spark, path)
    table.update("id = 1", {"m": "m + 10"})
    table.delete("id = 2")
    source = spark.createDataFrame([(3, 9.5), (BIG + 1, 0.5)], "id long, v double")
    (
        table.alias("t")
        .merge(source.alias("s"), "t.id = s.id")
        .whenMatchedUpdate(set={"m": "s.v"})
        .whenNotMatchedInsert(values={"id": "s.id", "m": "s.v"})
        .execute()
    )
    assert _rows(spark, path) == [
        (1, Decimal("11.250"), dt.datetime(2024, 1, 1)),
        (3, Decimal("9.500"), dt.datetime(2024, 1, 3)),
        (BIG, Decimal("123456.125"), dt.datetime(2024, 2, 1)),
        (BIG + 1, Decimal("0.500"), None),
    ]
    # The files the DML rewrote hold the wide types.
    assert RsTable(path).schema().to_json().count("delta.typeChanges") == 3


def test_deletion_vectors_and_the_python_read_path(spark, tmp_path):
    path = str(tmp_path / "t")
    _create(spark, path, "id INT, d DATE", extra=", 'delta.enableDeletionVectors' = 'true'")
    spark.sql(
        f"INSERT INTO delta.`{path}` VALUES (1, DATE'2024-01-01'), (2, DATE'2024-01-02'), "
        "(3, DATE'2024-01-03')"
    )
    spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN id TYPE BIGINT")
    spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN d TYPE TIMESTAMP_NTZ")
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 2")
    expected = [(1, dt.datetime(2024, 1, 1)), (3, dt.datetime(2024, 1, 3))]
    assert _rows(spark, path) == expected
    from headwater.delta.log.delta_log import DeltaLog
    from headwater.delta.read.batch import python_read

    python = python_read(spark, DeltaLog(path).snapshot()).orderBy("id").collect()
    assert [tuple(r) for r in python] == expected


def test_partition_column_widening(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id INT, p SMALLINT) USING DELTA PARTITIONED BY (p) "
        "TBLPROPERTIES ('delta.enableTypeWidening' = 'true')"
    )
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 1), (2, 2)")
    spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN p TYPE BIGINT")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (3, {BIG})")
    assert _rows(spark, path) == [(1, 1), (2, 2), (3, BIG)]
    hits = spark.read.format("delta").load(path).where(f"p = {BIG}").collect()
    assert [r.id for r in hits] == [3]


def test_catalog_table_by_name(spark, tmp_path):
    spark.sql(
        "CREATE TABLE tw_named (id SMALLINT) USING DELTA "
        "TBLPROPERTIES ('delta.enableTypeWidening' = 'true')"
    )
    try:
        spark.sql("INSERT INTO tw_named VALUES (1)")
        assert spark.table("tw_named").schema["id"].dataType == ShortType()
        spark.sql("ALTER TABLE tw_named ALTER COLUMN id TYPE BIGINT")
        spark.sql(f"INSERT INTO tw_named VALUES ({BIG})")
        assert spark.table("tw_named").schema["id"].dataType == LongType()
        assert sorted(r.id for r in spark.sql("SELECT id FROM tw_named").collect()) == [1, BIG]
    finally:
        spark.sql("DROP TABLE IF EXISTS tw_named")


def test_stream_started_after_widening_reads_old_files_wide(spark, widened, tmp_path):
    df = spark.readStream.format("delta").load(widened)
    rows = drain_to_memory(spark, df, "tw_stream_after", tmp_path / "ckpt")
    assert sorted(tuple(r) for r in rows) == EXPECTED


def _to_parquet(spark, source: str, out: Path, ckpt: Path):
    """A stream of ``source`` into Parquet files (a sink that resumes from its checkpoint)."""
    return (
        spark.readStream.format("delta")
        .load(source)
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(ckpt))
        .trigger(availableNow=True)
        .start()
    )


def test_stream_restarted_across_a_type_change_reads_every_row_once(spark, tmp_path):
    path, out, ckpt = str(tmp_path / "t"), tmp_path / "out", tmp_path / "ckpt"
    _create(spark, path, "id INT")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1)")
    _to_parquet(spark, path, out, ckpt).awaitTermination(120)
    spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN id TYPE BIGINT")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES ({BIG})")
    _to_parquet(spark, path, out, ckpt).awaitTermination(120)
    rows = spark.read.schema("id long").parquet(str(out)).collect()
    assert sorted(r.id for r in rows) == [1, BIG]


def test_running_stream_stops_at_a_type_change_with_a_named_error(spark, tmp_path):
    path = str(tmp_path / "t")
    _create(spark, path, "id INT")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1)")
    query = (
        spark.readStream.format("delta")
        .load(path)
        .writeStream.format("memory")
        .queryName("tw_running")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(processingTime="1 second")
        .start()
    )
    try:
        query.processAllAvailable()
        spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN id TYPE BIGINT")
        spark.sql(f"INSERT INTO delta.`{path}` VALUES ({BIG})")
        with pytest.raises(StreamingQueryException) as e:
            query.processAllAvailable()
    finally:
        query.stop()
    assert "id from int to bigint" in str(e.value)
    assert "DELTA_STREAMING_CANNOT_CONTINUE_PROCESSING_POST_SCHEMA_EVOLUTION" in str(e.value)
    assert [r.id for r in spark.sql("SELECT id FROM tw_running").collect()] == [1]  # no wrap


def _rewrite_type_changes(path: str, changes: list[dict], feature: str) -> None:
    """Make the table look as another writer left it: ``changes`` recorded on ``id`` and
    the protocol naming ``feature``."""
    log = Path(path, "_delta_log", "00000000000000000000.json")
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    for action in actions:
        if "metaData" in action:
            schema = json.loads(action["metaData"]["schemaString"])
            if changes:
                schema["fields"][0]["metadata"]["delta.typeChanges"] = changes
            action["metaData"]["schemaString"] = json.dumps(schema)
        if "protocol" in action:
            action["protocol"] = {
                "minReaderVersion": 3,
                "minWriterVersion": 7,
                "readerFeatures": [feature],
                "writerFeatures": [feature, "appendOnly", "invariants"],
            }
    log.write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def test_preview_feature_tables_are_read_and_widened(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.createDataFrame([(1,)], "id short").write.format("delta").save(path)
    _rewrite_type_changes(path, [], "typeWidening-preview")
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN id TYPE INT")
    protocol = RsTable(path).protocol()
    assert "typeWidening-preview" in protocol.writer_features
    assert "typeWidening" not in protocol.writer_features  # the preview name carries it
    changes = _field(path, "id")["metadata"]["delta.typeChanges"]
    assert changes == [{"tableVersion": 2, "fromType": "short", "toType": "integer"}]
    assert _rows(spark, path) == [(1,)]


def test_unsupported_recorded_change_is_refused_on_read(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.createDataFrame([(1,)], "id long").write.format("delta").save(path)
    _rewrite_type_changes(path, [{"fromType": "string", "toType": "long"}], "typeWidening")
    with pytest.raises(
        UnsupportedFeatureError, match="column id records a type change from string"
    ):
        spark.read.format("delta").load(path).collect()


def test_column_mapped_table_written_by_another_engine(spark, tmp_path):
    """A name-mapped table (files under physical names, read by the Python path)."""
    root = tmp_path / "mapped"
    (root / "_delta_log").mkdir(parents=True)
    pq.write_table(
        pa.table({"col-1": pa.array([1, 2], pa.int32()), "col-2": ["a", "b"]}),
        root / "part-0.parquet",
    )

    def field(name, type_, physical, fid):
        mapping = {"delta.columnMapping.id": fid, "delta.columnMapping.physicalName": physical}
        return {"name": name, "type": type_, "nullable": True, "metadata": mapping}

    schema = {"type": "struct", "fields": [field("id", "integer", "col-1", 1),
                                           field("name", "string", "col-2", 2)]}  # fmt: skip
    commit = [
        {"commitInfo": {"timestamp": 1700000000000, "operation": "WRITE"}},
        {
            "protocol": {
                "minReaderVersion": 3,
                "minWriterVersion": 7,
                "readerFeatures": ["columnMapping"],
                "writerFeatures": ["columnMapping", "appendOnly", "invariants"],
            }
        },
        {
            "metaData": {
                "id": "2b1f6b1e-0000-4000-8000-000000000002",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(schema),
                "partitionColumns": [],
                "configuration": {
                    "delta.columnMapping.mode": "name",
                    "delta.columnMapping.maxColumnId": "2",
                    "delta.enableTypeWidening": "true",
                },
                "createdTime": 1700000000000,
            }
        },
        {
            "add": {
                "path": "part-0.parquet",
                "partitionValues": {},
                "size": (root / "part-0.parquet").stat().st_size,
                "modificationTime": 1700000000000,
                "dataChange": True,
                "stats": json.dumps(
                    {"numRecords": 2, "minValues": {"col-1": 1}, "maxValues": {"col-1": 2}}
                ),  # fmt: skip
            }
        },
    ]
    (root / "_delta_log" / f"{0:020d}.json").write_text(
        "\n".join(json.dumps(a) for a in commit) + "\n"
    )
    path = str(root)
    spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN id TYPE BIGINT")
    meta = _field(path, "id")["metadata"]
    assert meta["delta.columnMapping.physicalName"] == "col-1"  # the mapping is kept
    assert meta["delta.typeChanges"] == [{"fromType": "integer", "toType": "long"}]
    assert "typeWidening" in RsTable(path).protocol().reader_features
    spark.sql(f"INSERT INTO delta.`{path}` VALUES ({BIG}, 'c')")
    assert _rows(spark, path) == [(1, "a"), (2, "b"), (BIG, "c")]
    hits = spark.read.format("delta").load(path).where("id > 1").collect()
    assert sorted(r.id for r in hits) == [2, BIG]


def test_optimize_compacts_files_of_both_types(spark, tmp_path):
    path = str(tmp_path / "t")
    _create(spark, path, "id INT, v FLOAT")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 0.5)")
    spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN id TYPE BIGINT")
    spark.sql(f"ALTER TABLE delta.`{path}` ALTER COLUMN v TYPE DOUBLE")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES ({BIG}, 0.1)")
    metrics = spark.sql(f"OPTIMIZE delta.`{path}`").collect()[0].metrics
    assert (metrics.numFilesRemoved, metrics.numFilesAdded) == (2, 1)
    assert _rows(spark, path) == [(1, 0.5), (BIG, 0.1)]
