"""COPY INTO loads: idempotency, force, FILES, PATTERN, VALIDATE, schemas, transforms,
corrupt files and history."""

from __future__ import annotations

import gzip
import json
import os

import pytest

from headwater import api
from headwater.copyinto import (
    BadDataError,
    copy_into,
    create_schemaless_table,
    loaded_files,
)
from headwater.errors import SchemaMismatchError
from tests.copyinto.helpers import (
    land,
    last_commit,
    result,
    rows,
    table,
    versions,
    write_json,
    write_text,
)
from tests.engine_marks import ON_DELTA_SPARK, headwater_engine_only

SCHEMALESS = "tables without columns are entries of headwater's catalog"
# The commit of a load: headwater's engine names it; delta-spark's writer logs a WRITE (the
# record rides in its userMetadata).
LOAD = "WRITE" if ON_DELTA_SPARK else "COPY INTO"


def test_load_then_rerun_loads_nothing_even_if_a_file_changed(spark, tmp_path):
    src, path = tmp_path / "src", tmp_path / "t"
    land(src, 4)
    target = table(spark, path)
    assert result(copy_into(spark, target, str(src), "JSON")) == (12, 12, 0)
    version = versions(path)
    assert result(copy_into(spark, target, str(src), "json")) == (0, 0, 0)
    assert versions(path) == version  # a rerun commits nothing
    write_json(src, "f000.json", [{"id": 999, "name": "rewritten"}])  # modified since
    land(src, 1, start=10)
    assert result(copy_into(spark, target, str(src), "JSON")) == (3, 3, 0)
    ids = sorted(r["id"] for r in rows(path))
    assert ids == sorted([i * 100 + j for i in [0, 1, 2, 3, 10] for j in range(3)])
    assert len(loaded_files(spark, target)) == 5


def test_force_loads_again(spark, tmp_path):
    src, path = tmp_path / "src", tmp_path / "t"
    land(src, 2)
    target = table(spark, path)
    copy_into(spark, target, str(src), "JSON")
    assert result(copy_into(spark, target, str(src), "JSON", copy_options={"force": "true"})) == (
        6,
        6,
        0,
    )
    assert len(rows(path)) == 12


def test_pattern_and_files_choose_the_files(spark, tmp_path):
    src, path = tmp_path / "src", tmp_path / "t"
    land(src, 5)
    write_json(src, "sub/g1.json", [{"id": 7001, "name": "sub"}])
    write_json(src, "other.txt", [{"id": 7002, "name": "txt"}])
    target = table(spark, path)
    copy_into(spark, target, str(src), "JSON", pattern="f00[0-1].json")
    assert sorted(r["id"] // 100 for r in rows(path)) == [0, 0, 0, 1, 1, 1]
    copy_into(spark, target, str(src), "JSON", pattern="sub/*.json")
    assert 7001 in {r["id"] for r in rows(path)}
    # FILES: names relative to the source; an already loaded one is skipped
    copy_into(spark, target, str(src), "JSON", files=["f000.json", "f004.json", "other.txt"])
    ids = {r["id"] for r in rows(path)}
    assert {400, 7002} <= ids and not ids & {200, 300}
    assert len(rows(path)) == 3 + 3 + 1 + 3 + 1
    # PATTERN with alternatives; f002/f003 only
    assert result(copy_into(spark, target, str(src), "JSON", pattern="{f002,f003}.json")) == (
        6,
        6,
        0,
    )


def test_validate_all_and_rows_write_nothing(spark, tmp_path):
    src, path = tmp_path / "src", tmp_path / "t"
    land(src, 3, rows=4)
    target = table(spark, path)
    version = versions(path)
    summary = copy_into(spark, target, str(src), "JSON", validate="ALL").collect()
    assert [tuple(r) for r in summary] == [(3, 12, 0, "id bigint, name string")]
    preview = copy_into(spark, target, str(src), "JSON", validate=5)
    assert preview.columns == ["id", "name"] and preview.count() == 5
    assert versions(path) == version and rows(path) == []
    write_json(src, "bad.json", [{"id": "not a number", "name": "x"}])
    with pytest.raises(BadDataError, match=r"bad\.json.*not a number"):
        copy_into(spark, target, str(src), "JSON", validate="ALL")
    assert versions(path) == version
    # after a real load, VALIDATE sees only the files not loaded yet
    copy_into(spark, target, str(src), "JSON", pattern="f*.json")
    again = copy_into(spark, target, str(src), "JSON", validate="all", pattern="f*")
    assert tuple(again.collect()[0])[:3] == (0, 0, 0)


@headwater_engine_only(SCHEMALESS)
def test_schemaless_table_takes_the_inferred_schema(spark, tmp_path):
    src = tmp_path / "src"
    write_text(src, "a.csv", "id,amount,when\n1,2.5,2024-01-01\n2,3.5,2024-01-02\n")
    entry = create_schemaless_table(spark, "copyinto_tests.schemaless_csv")
    with pytest.raises(Exception, match="mergeSchema"):
        copy_into(spark, "copyinto_tests.schemaless_csv", str(src), "CSV")
    got = copy_into(
        spark, "copyinto_tests.schemaless_csv", str(src), "CSV",
        format_options={"header": "true", "inferSchema": "true"},
        copy_options={"mergeSchema": "true"},
    )  # fmt: skip
    assert result(got) == (2, 2, 0)
    df = spark.table("copyinto_tests.schemaless_csv")
    assert [(f.name, f.dataType.simpleString()) for f in df.schema] == [
        ("id", "bigint"),
        ("amount", "double"),
        ("when", "date"),
    ]
    assert sorted(r["id"] for r in df.collect()) == [1, 2]
    assert os.path.isdir(os.path.join(entry.location, "_delta_log"))
    # SQL sees the table too (registered in Spark's catalog on its first load)
    assert spark.sql("SELECT sum(amount) FROM copyinto_tests.schemaless_csv").first()[0] == 6.0


def test_merge_schema_adds_new_columns(spark, tmp_path):
    src, path = tmp_path / "src", tmp_path / "t"
    target = table(spark, path)
    write_json(src, "1.json", [{"id": 1, "name": "a"}])
    copy_into(spark, target, str(src), "JSON")
    write_json(src, "2.json", [{"id": 2, "name": "b", "score": 9.5, "tags": ["x"]}])
    with pytest.raises(BadDataError, match=r"2\.json.*score.*mergeSchema"):
        copy_into(spark, target, str(src), "JSON")
    copy_into(spark, target, str(src), "JSON", copy_options={"mergeSchema": "true"})
    schema = api.for_path(spark, str(path)).read().schema
    assert schema.simpleString() == "struct<id:bigint,name:string,score:double,tags:array<string>>"
    assert rows(path) == [
        {"id": 1, "name": "a", "score": None, "tags": None},
        {"id": 2, "name": "b", "score": 9.5, "tags": ["x"]},
    ]
    assert last_commit(spark, path)["operation"] == LOAD


def test_headerless_csv_by_position_and_with_column_list(spark, tmp_path):
    src, path = tmp_path / "src", tmp_path / "t"
    write_text(src, "a.csv", "1,apple,0.5\n2,pear,1.25\n")
    target = table(spark, path, "id int, fruit string, price double")
    with pytest.raises(Exception, match="BY POSITION"):
        copy_into(spark, target, str(src), "CSV")
    copy_into(spark, target, str(src), "CSV", by_position=True)
    assert rows(path) == [
        {"id": 1, "fruit": "apple", "price": 0.5},
        {"id": 2, "fruit": "pear", "price": 1.25},
    ]
    write_text(src, "b.csv", "pineapple,3\n")
    copy_into(spark, target, str(src), "CSV", columns=["fruit", "id"], files=["b.csv"])
    assert {"id": 3, "fruit": "pineapple", "price": None} in rows(path)
    # a value that does not fit its positional column is reported, not dropped
    write_text(src, "c.csv", "x,kiwi,1\n")
    with pytest.raises(BadDataError, match=r"c\.csv"):
        copy_into(spark, target, str(src), "CSV", by_position=True)


def test_select_transforms_and_casts(spark, tmp_path):
    src, path = tmp_path / "src", tmp_path / "t"
    write_text(src, "a.csv", "7,Apple,12.50\n8,pear,0.99\n")
    target = table(spark, path, "id int, fruit string, cents bigint, loaded boolean")
    copy_into(
        spark, target, str(src), "CSV",
        select=["CAST(_c0 AS INT) AS id", "lower(_c1) AS fruit",
                "CAST(CAST(_c2 AS DECIMAL(10,2)) * 100 AS BIGINT) AS cents", "true AS loaded"],
    )  # fmt: skip
    assert rows(path) == [
        {"id": 7, "fruit": "apple", "cents": 1250, "loaded": True},
        {"id": 8, "fruit": "pear", "cents": 99, "loaded": True},
    ]
    # JSON: the select names inferred columns; a wider result is cast to the table's type
    write_json(tmp_path / "j", "1.json", [{"a": 1, "b": {"c": "deep"}}])
    copy_into(spark, target, str(tmp_path / "j"), "JSON", select=["a + 100 AS id", "b.c AS fruit"])
    assert {"id": 101, "fruit": "deep", "cents": None, "loaded": None} in rows(path)
    with pytest.raises(Exception, match="SELECT list"):
        copy_into(
            spark, target, str(tmp_path / "j"), "JSON", select=["nope AS id"],
            copy_options={"force": "true"},
        )  # fmt: skip


def test_corrupt_files_are_skipped_with_ignore_corrupt_files_and_counted(spark, tmp_path):
    src, path = tmp_path / "src", tmp_path / "t"
    land(src, 2)
    raw = gzip.compress(b'{"id": 5, "name": "z"}\n' * 5000)
    with open(src / "broken.json.gz", "wb") as f:
        f.write(raw[: len(raw) // 2])
    with open(src / "latin1.json", "wb") as f:
        f.write(b'{"id": 6, "name": "caf\xe9"}\n')
    target = table(spark, path)
    with pytest.raises(BadDataError, match=r"broken\.json\.gz|latin1\.json"):
        copy_into(spark, target, str(src), "JSON")
    assert rows(path) == []
    got = copy_into(spark, target, str(src), "JSON", format_options={"ignoreCorruptFiles": "true"})
    assert result(got) == (6, 6, 2)
    assert result(copy_into(spark, target, str(src), "JSON")) == (0, 0, 0)  # counted as done
    assert {str(src / "broken.json.gz"), str(src / "latin1.json")} <= set(
        loaded_files(spark, target)
    )
    if not ON_DELTA_SPARK:  # delta-spark's writer logs metrics of its own
        metrics = last_commit(spark, path)["operationMetrics"]
        assert metrics["numSkippedCorruptFiles"] == "2" and metrics["numCopiedFiles"] == "2"


@headwater_engine_only(SCHEMALESS)
def test_corrupt_file_skipped_during_inference_too(spark, tmp_path):
    src = tmp_path / "src"
    land(src, 1)
    write_text(src, "bad.parquet", "this is not parquet")
    path = tmp_path / "t"
    create_schemaless_table(spark, "copyinto_tests.corrupt_parquet", str(path))
    pq_src = tmp_path / "pq"
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(pq_src)
    pq.write_table(pa.table({"id": [1, 2]}), str(pq_src / "good.parquet"))
    write_text(pq_src, "bad.parquet", "this is not parquet")
    got = copy_into(
        spark, "copyinto_tests.corrupt_parquet", str(pq_src), "PARQUET",
        format_options={"ignoreCorruptFiles": "true"}, copy_options={"mergeSchema": "true"},
    )  # fmt: skip
    assert result(got) == (2, 2, 1)
    assert rows(path) == [{"id": 1}, {"id": 2}]


def test_history_records_files_bytes_rows(spark, tmp_path):
    src, path = tmp_path / "src", tmp_path / "t"
    files = land(src, 3, rows=5)
    target = table(spark, path)
    copy_into(spark, target, str(src), "JSON")
    h = last_commit(spark, path)
    assert h["operation"] == LOAD
    m = h["operationMetrics"]
    assert m["numOutputRows"] == "15" and int(m["numOutputBytes"]) > 0
    # the load record is in the same commit: a field of ours, or delta-spark's userMetadata
    log = sorted((path / "_delta_log").glob("*.json"))[-1]
    info = json.loads(log.read_text().splitlines()[0])["commitInfo"]
    if ON_DELTA_SPARK:
        info = json.loads(info["userMetadata"])
        assert h["userMetadata"] == json.dumps(info, separators=(",", ":"), sort_keys=True)
    assert sorted(info["headwaterCopyInto"]["files"]) == ["f000.json", "f001.json", "f002.json"]
    if ON_DELTA_SPARK:
        return
    assert m["numCopiedFiles"] == "3"
    assert m["numCopiedBytes"] == str(sum(os.path.getsize(f) for f in files))
    assert int(m["numAddedFiles"]) >= 1
    params = h["operationParameters"]
    assert params["source"] == str(src) and params["fileFormat"] == "JSON"


def test_rescued_data_column_and_modes(spark, tmp_path):
    src, path = tmp_path / "src", tmp_path / "t"
    write_text(src, "a.json", '{"id": 1, "name": "ok"}\n{"id": "two", "name": "bad"}\n{"id": 3,\n')
    target = table(spark, path)
    with pytest.raises(BadDataError, match="two"):
        copy_into(spark, target, str(src), "JSON")
    copy_into(
        spark, target, str(src), "JSON", format_options={"mode": "DROPMALFORMED"},
        copy_options={"force": "true"},
    )  # fmt: skip
    assert [r["id"] for r in rows(path)] == [1]
    copy_into(
        spark, target, str(src), "JSON", format_options={"mode": "permissive"},
        copy_options={"force": "true"},
    )  # fmt: skip
    assert sorted((r["id"] or 0, r["name"] or "") for r in rows(path)) == [
        (0, ""), (0, "bad"), (1, "ok"), (1, "ok")
    ]  # fmt: skip
    copy_into(
        spark, target, str(src), "JSON", format_options={"rescuedDataColumn": "_rescued"},
        copy_options={"force": "true", "mergeSchema": "true"},
    )  # fmt: skip
    rescued = [json.loads(r["_rescued"]) for r in rows(path) if r.get("_rescued")]
    assert {"id": "two", "_file_path": str(src / "a.json")} in rescued
    assert any(r.get("_corrupt_record", "").startswith('{"id": 3') for r in rescued)


def test_partition_directories_give_columns(spark, tmp_path):
    src = tmp_path / "src"
    write_json(src, "day=2024-01-01/a.json", [{"id": 1}])
    write_json(src, "day=2024-01-02/b.json", [{"id": 2}])
    path = tmp_path / "t"
    target = table(spark, path, "id bigint, day date")
    copy_into(spark, target, str(src), "JSON")
    got = sorted((r["id"], str(r["day"])) for r in rows(path))
    assert got == [(1, "2024-01-01"), (2, "2024-01-02")]


def test_empty_source_and_no_match_load_nothing(spark, tmp_path):
    src, path = tmp_path / "src", tmp_path / "t"
    os.makedirs(src)
    target = table(spark, path)
    assert result(copy_into(spark, target, str(src), "JSON")) == (0, 0, 0)
    land(src, 1)
    assert result(copy_into(spark, target, str(src), "JSON", pattern="*.csv")) == (0, 0, 0)
    write_text(src, "empty.json", "")
    assert result(copy_into(spark, target, str(src), "JSON")) == (3, 3, 0)
    assert str(src / "empty.json") in loaded_files(spark, target)


def test_type_mismatch_with_select_is_an_error_not_a_null(spark, tmp_path):
    src, path = tmp_path / "src", tmp_path / "t"
    write_text(src, "a.csv", "1\nabc\n")
    target = table(spark, path, "id int, name string")
    with pytest.raises(Exception, match="(?i)cast|abc"):
        copy_into(spark, target, str(src), "CSV", select=["_c0 AS id"])
    assert rows(path) == []
    with pytest.raises(SchemaMismatchError, match="COPY_OPTIONS"):
        copy_into(spark, target, str(src), "CSV", select=["_c0 AS extra"])


def test_column_list_by_name_loads_only_those_columns(spark, tmp_path):
    src, path = tmp_path / "src", tmp_path / "t"
    write_json(src, "a.json", [{"id": 1, "name": "a"}])
    write_text(src, "b.csv", "name,id\nb,2\n")
    target = table(spark, path)
    copy_into(spark, target, str(src), "JSON", columns=["id"], pattern="*.json")
    copy_into(spark, target, str(src), "CSV", columns=["name"], format_options={"header": "true"})
    assert rows(path) == [{"id": 1, "name": None}, {"id": None, "name": "b"}]


@headwater_engine_only(SCHEMALESS)
def test_schemaless_table_with_only_empty_files_stays_schemaless(spark, tmp_path):
    src = tmp_path / "src"
    write_text(src, "empty.json", "")
    entry = create_schemaless_table(spark, "copyinto_tests.still_empty", str(tmp_path / "t"))
    got = copy_into(
        spark, "copyinto_tests.still_empty", str(src), "JSON", copy_options={"mergeSchema": "true"}
    )
    assert result(got) == (0, 0, 0)
    assert not os.path.exists(os.path.join(entry.location, "_delta_log"))
    land(src, 1)
    copy_into(
        spark, "copyinto_tests.still_empty", str(src), "JSON", copy_options={"mergeSchema": "true"}
    )
    assert spark.table("copyinto_tests.still_empty").count() == 3


@headwater_engine_only(SCHEMALESS)
def test_inference_sees_a_new_column_in_any_file_and_runs_on_executors(spark, tmp_path):
    from headwater.copyinto import plan

    src = tmp_path / "src"
    files = plan.DRIVER_INFERENCE_FILES + 8  # beyond the driver's share: a Spark job infers
    land(src, files, rows=2)
    write_json(src, "zzz.json", [{"id": 1, "name": "x", "late": True}])
    create_schemaless_table(spark, "copyinto_tests.wide", str(tmp_path / "t"))
    got = copy_into(
        spark, "copyinto_tests.wide", str(src), "JSON", copy_options={"mergeSchema": "true"}
    )
    assert result(got) == (files * 2 + 1, files * 2 + 1, 0)
    df = spark.table("copyinto_tests.wide")
    assert df.schema.simpleString() == "struct<id:bigint,name:string,late:boolean>"
    assert df.where("late").count() == 1
