"""Column-mapped tables (as Databricks and delta-spark write them): files hold physical
names at every nesting level; the log's partition values and stats use them too."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable as RsTable
from deltalake import QueryBuilder

from headwater.errors import UnsupportedFeatureError
from tests.delta.helpers import drain_to_memory


def _field(name, type_, phys, fid, nullable=True):
    return {
        "name": name,
        "type": type_,
        "nullable": nullable,
        "metadata": {"delta.columnMapping.id": fid, "delta.columnMapping.physicalName": phys},
    }


SCHEMA = {
    "type": "struct",
    "fields": [
        _field("id", "long", "col-1", 1),
        _field(
            "person",
            {
                "type": "struct",
                "fields": [
                    _field("first name", "string", "col-2", 2),
                    _field("age", "integer", "col-3", 3),
                ],
            },
            "col-4",
            4,
        ),
        _field(
            "tags",
            {
                "type": "array",
                "elementType": {"type": "struct", "fields": [_field("t", "string", "col-5", 5)]},
                "containsNull": True,
            },
            "col-6",
            6,
        ),
        _field(
            "attrs",
            {
                "type": "map",
                "keyType": "string",
                "valueType": {"type": "struct", "fields": [_field("v", "long", "col-7", 7)]},
                "valueContainsNull": True,
            },
            "col-8",
            8,
        ),
        _field("renamed", "string", "old_name", 9),  # a column renamed after the data was written
        _field("added later", "double", "col-10", 10),
        _field("region", "string", "col-11", 11),
    ],
}


def _file(root: Path, name: str, region: str, rows: list[dict], with_added: bool) -> dict:
    person = pa.struct([("col-2", pa.string()), ("col-3", pa.int32())])
    tag = pa.struct([("col-5", pa.string())])
    value = pa.struct([("col-7", pa.int64())])
    fields = [
        ("col-1", pa.int64()),
        ("col-4", person),
        ("col-6", pa.list_(tag)),
        ("col-8", pa.map_(pa.string(), value)),
        ("old_name", pa.string()),
    ]
    data = {
        "col-1": [r["id"] for r in rows],
        "col-4": [{"col-2": r["first"], "col-3": r["age"]} for r in rows],
        "col-6": [[{"col-5": t} for t in r["tags"]] for r in rows],
        "col-8": [[(k, {"col-7": v}) for k, v in r["attrs"].items()] for r in rows],
        "old_name": [r["renamed"] for r in rows],
    }
    if with_added:
        fields.append(("col-10", pa.float64()))
        data["col-10"] = [r["added"] for r in rows]
    table = pa.table(data, schema=pa.schema(fields))
    rel = f"ab/{name}.parquet"  # random-prefix layout, as Databricks writes mapped tables
    (root / "ab").mkdir(exist_ok=True)
    pq.write_table(table, root / rel)
    ids = [r["id"] for r in rows]
    stats = {
        "numRecords": len(rows),
        "minValues": {"col-1": min(ids), "col-4": {"col-3": min(r["age"] for r in rows)}},
        "maxValues": {"col-1": max(ids), "col-4": {"col-3": max(r["age"] for r in rows)}},
        "nullCount": {"col-1": 0},
    }
    return {
        "add": {
            "path": rel,
            "partitionValues": {"col-11": region},
            "size": (root / rel).stat().st_size,
            "modificationTime": 1700000000000,
            "dataChange": True,
            "stats": json.dumps(stats),
        }
    }


ROWS_A = [
    {"id": 1, "first": "Ann", "age": 30, "tags": ["x", "y"], "attrs": {"k": 1}, "renamed": "a"},
    {"id": 2, "first": "Bob", "age": 40, "tags": [], "attrs": {}, "renamed": "b"},
]
ROWS_B = [
    {
        "id": 10,
        "first": "Cy",
        "age": 50,
        "tags": ["z"],
        "attrs": {"m": 7, "n": 8},
        "renamed": None,
        "added": 1.5,
    },
]


@pytest.fixture(scope="module")
def mapped_table(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("mapped")
    (root / "_delta_log").mkdir()
    adds = [
        _file(root, "part-a", "eu", ROWS_A, with_added=False),
        _file(root, "part-b", "us", ROWS_B, with_added=True),
    ]
    commit0 = [
        {"commitInfo": {"timestamp": 1700000000000, "operation": "WRITE"}},
        {"protocol": {"minReaderVersion": 2, "minWriterVersion": 5}},
        {
            "metaData": {
                "id": "1b1f6b1e-0000-4000-8000-000000000001",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(SCHEMA),
                "partitionColumns": ["region"],
                "configuration": {
                    "delta.columnMapping.mode": "name",
                    "delta.columnMapping.maxColumnId": "11",
                },
                "createdTime": 1700000000000,
            }
        },
        *adds,
    ]
    (root / "_delta_log" / f"{0:020d}.json").write_text(
        "\n".join(json.dumps(a) for a in commit0) + "\n"
    )
    return root


def test_mapped_table_reads_logical_names_at_every_level(spark, mapped_table):
    df = spark.read.format("delta").load(str(mapped_table))
    assert df.columns == ["id", "person", "tags", "attrs", "renamed", "added later", "region"]
    rows = {r["id"]: r.asDict(recursive=True) for r in df.collect()}
    assert rows[1] == {
        "id": 1,
        "person": {"first name": "Ann", "age": 30},
        "tags": [{"t": "x"}, {"t": "y"}],
        "attrs": {"k": {"v": 1}},
        "renamed": "a",
        "added later": None,  # the file predates the column
        "region": "eu",
    }
    assert rows[2]["tags"] == [] and rows[2]["attrs"] == {}
    assert rows[10]["attrs"] == {"m": {"v": 7}, "n": {"v": 8}}
    assert rows[10]["added later"] == 1.5 and rows[10]["region"] == "us"


def test_mapped_table_filters_on_logical_names_use_the_physical_stats(spark, mapped_table):
    df = spark.read.format("delta").load(str(mapped_table))
    assert [r.id for r in df.where("id >= 10").collect()] == [10]
    assert sorted(r.id for r in df.where("region = 'eu'").collect()) == [1, 2]
    assert [r.id for r in df.where("person.age > 45").collect()] == [10]


def test_mapped_table_streams_with_logical_names(spark, mapped_table, tmp_path):
    out = tmp_path / "out"
    stream = (
        spark.readStream.format("delta")
        .load(str(mapped_table))
        .selectExpr("id", "person.`first name` AS first", "region")
    )
    rows = sorted(tuple(r) for r in drain_to_memory(spark, stream, "mapped_stream", out / "cp"))
    assert rows == [(1, "Ann", "eu"), (2, "Bob", "eu"), (10, "Cy", "us")]


def _copy(mapped_table: Path, tmp_path: Path) -> str:
    path = tmp_path / "mapped_copy"
    shutil.copytree(mapped_table, path)
    return str(path)


def _delta_rs_ids(path: str) -> list[int]:
    table = QueryBuilder().register("t", RsTable(path)).execute("select id from t").read_all()
    return sorted(pa.table(table).column("id").to_pylist())


def _new_files(path: str, before: set[str]) -> list[Path]:
    return [p for p in Path(path).rglob("*.parquet") if p.name not in before]


def test_rows_written_to_a_mapped_table_use_physical_names_and_field_ids(
    spark, mapped_table, tmp_path
):
    path = _copy(mapped_table, tmp_path)
    schema = spark.read.format("delta").load(path).schema
    before = {p.name for p in Path(path).rglob("*.parquet")}
    row = (20, ("Dee", 60), [("w",)], {"q": (3,)}, "d", 2.5, "eu")
    spark.createDataFrame([row], schema).write.format("delta").mode("append").save(path)

    df = spark.read.format("delta").load(path)
    assert df.where("id = 20").first().asDict(recursive=True) == {
        "id": 20,
        "person": {"first name": "Dee", "age": 60},
        "tags": [{"t": "w"}],
        "attrs": {"q": {"v": 3}},
        "renamed": "d",
        "added later": 2.5,
        "region": "eu",
    }
    assert _delta_rs_ids(path) == [1, 2, 10, 20]  # another reader agrees
    (written,) = _new_files(path, before)
    assert "col-11=eu" in str(written)  # partition directory under the physical name
    file_schema = pq.read_schema(written)
    assert file_schema.names == ["col-1", "col-4", "col-6", "col-8", "old_name", "col-10"]
    assert file_schema.field("col-1").metadata[b"PARQUET:field_id"] == b"1"
    assert file_schema.field("col-4").type.field("col-3").metadata[b"PARQUET:field_id"] == b"3"
    add = [
        json.loads(line)["add"]
        for line in sorted(Path(path, "_delta_log").glob("*.json"))[-1].read_text().splitlines()
        if '"add"' in line
    ][0]
    assert add["partitionValues"] == {"col-11": "eu"}
    assert json.loads(add["stats"])["minValues"]["col-1"] == 20
    # the log's schema (with its physical names) is unchanged: no metaData action
    assert json.loads(RsTable(path).schema().to_json()) == json.loads(
        RsTable(str(mapped_table)).schema().to_json()
    )
    assert "metaData" not in sorted(Path(path, "_delta_log").glob("*.json"))[-1].read_text()
    assert [r.id for r in df.where("id >= 20").collect()] == [20]  # stats by physical name


def test_update_delete_and_merge_on_a_mapped_table(spark, mapped_table, tmp_path):
    from headwater.delta.tables import DeltaTable

    path = _copy(mapped_table, tmp_path)
    dt = DeltaTable.forPath(spark, path)
    dt.delete("id = 1")
    dt.update("id = 2", {"renamed": "'changed'", "`added later`": "9.5"})
    source = (
        spark.read.format("delta")
        .load(path)
        .where("id = 10")
        .selectExpr(
            "30 AS id", "person", "tags", "attrs", "'m' AS renamed", "`added later`", "region"
        )
    )
    dt.alias("t").merge(source.alias("s"), "t.id = s.id").whenNotMatchedInsertAll().execute()
    rows = {r.id: r for r in spark.read.format("delta").load(path).collect()}
    assert sorted(rows) == [2, 10, 30]
    assert (rows[2].renamed, rows[2]["added later"]) == ("changed", 9.5)
    assert rows[2].person.asDict() == {"first name": "Bob", "age": 40}
    assert rows[30].person["first name"] == "Cy" and rows[30].renamed == "m"
    assert _delta_rs_ids(path) == [2, 10, 30]


def test_changing_a_mapped_tables_schema_is_refused_by_name(spark, mapped_table, tmp_path):
    path = _copy(mapped_table, tmp_path)
    df = spark.createDataFrame([(3, "x")], "id long, extra string")
    with pytest.raises(UnsupportedFeatureError, match="column mapping"):
        df.write.format("delta").mode("append").option("mergeSchema", "true").save(path)
    with pytest.raises(UnsupportedFeatureError, match="column mapping"):
        df.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(path)
    assert spark.read.format("delta").load(path).count() == 3
    assert RsTable(path).version() == 0


def test_optimize_compacts_a_mapped_table_without_losing_values(spark, mapped_table, tmp_path):
    from headwater.delta.tables import DeltaTable

    path = _copy(mapped_table, tmp_path)
    before = sorted(
        tuple(r)
        for r in spark.read.format("delta")
        .load(path)
        .selectExpr("id", "person", "renamed")
        .collect()
    )
    schema = spark.read.format("delta").load(path).schema
    row = (21, ("Eve", 33), [("x",)], {"k": (1,)}, "e", 1.5, "us")
    spark.createDataFrame([row], schema).write.format("delta").mode("append").save(path)
    DeltaTable.forPath(spark, path).optimize().executeCompaction()
    after = spark.read.format("delta").load(path)
    got = sorted(tuple(r) for r in after.selectExpr("id", "person", "renamed").collect())
    assert got == sorted([*before, (21, ("Eve", 33), "e")])  # no value read back as null
    assert _delta_rs_ids(path) == [1, 2, 10, 21]
