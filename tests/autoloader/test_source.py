"""The ``cloudFiles`` source end to end: real files, real streams, Delta sinks."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
import time

import pytest
from pyspark.errors import StreamingQueryException

from headwater.autoloader import cloud_files_state, run_with_schema_evolution
from headwater.errors import OptionError
from tests.autoloader.helpers import start_ingest


def _jsonl(path, rows, mtime=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        for r in rows:
            f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
    if mtime is not None:
        os.utime(path, (mtime, mtime))


@pytest.fixture
def dirs(tmp_path):
    return {k: str(tmp_path / k) for k in ("land", "ckpt", "out")}


def _ingest(spark, d, fmt="json", trigger=None, schema=None, **options):
    return start_ingest(
        spark, d["land"], d["ckpt"], d["out"], fmt, schema, trigger, merge_schema=True, **options
    )


def _rows(spark, d, order="id"):
    return [r.asDict() for r in spark.read.format("delta").load(d["out"]).orderBy(order).collect()]


def test_json_ingest_infers_strings_then_types_and_picks_up_only_new_files(spark, dirs):
    _jsonl(os.path.join(dirs["land"], "a.json"), [{"id": 1, "name": "x"}, {"id": 2, "name": "y"}])
    _ingest(spark, dirs).awaitTermination()
    rows = _rows(spark, dirs)
    assert [(r["id"], r["name"], r["_rescued_data"]) for r in rows] == [
        ("1", "x", None),
        ("2", "y", None),
    ]
    _jsonl(os.path.join(dirs["land"], "b.json"), [{"id": 3, "name": "z"}])
    q = _ingest(spark, dirs)
    q.awaitTermination()
    assert [r["id"] for r in _rows(spark, dirs)] == ["1", "2", "3"]
    assert sum(p["numInputRows"] for p in q.recentProgress) == 1
    assert sorted(os.listdir(os.path.join(dirs["ckpt"], "_schemas"))) == ["0"]


def test_infer_column_types_and_hints_on_nested_fields(spark, dirs):
    _jsonl(
        os.path.join(dirs["land"], "a.json"),
        [
            {
                "id": 1,
                "amount": 2.5,
                "ts": "2024-01-01T00:00:00Z",
                "s": {"a": 1, "b": "x"},
                "arr": [1, 2],
            }
        ],
    )
    q = _ingest(
        spark,
        dirs,
        cloudFiles__inferColumnTypes="true",
        cloudFiles__schemaHints="ts timestamp, s.a string, arr.element double",
    )
    q.awaitTermination()
    df = spark.read.format("delta").load(dirs["out"])
    types = dict((f.name, f.dataType.simpleString()) for f in df.schema)
    assert types["id"] == "bigint" and types["amount"] == "double" and types["ts"] == "timestamp"
    assert types["s"] == "struct<a:string,b:string>" and types["arr"] == "array<double>"
    row = df.first()
    assert row.s.a == "1" and row.arr == [1.0, 2.0]


def test_type_mismatch_and_case_clash_are_rescued_not_dropped(spark, dirs):
    _jsonl(os.path.join(dirs["land"], "a.json"), [{"id": 1, "v": 10}])
    _ingest(spark, dirs, cloudFiles__inferColumnTypes="true").awaitTermination()
    _jsonl(os.path.join(dirs["land"], "b.json"), [{"id": 2, "v": "abc"}, {"id": 3, "V": 7, "v": 8}])
    _ingest(spark, dirs, cloudFiles__inferColumnTypes="true").awaitTermination()
    rows = {r["id"]: r for r in _rows(spark, dirs)}
    assert rows[1]["_rescued_data"] is None
    rescued = json.loads(rows[2]["_rescued_data"])
    assert (
        rows[2]["v"] is None and rescued["v"] == "abc" and rescued["_file_path"].endswith("b.json")
    )
    assert rows[3]["v"] == 8 and json.loads(rows[3]["_rescued_data"])["V"] == 7


def test_add_new_columns_stops_once_then_continues_with_them(spark, dirs):
    _jsonl(os.path.join(dirs["land"], "a.json"), [{"id": 1}])
    _ingest(spark, dirs).awaitTermination()
    _jsonl(os.path.join(dirs["land"], "b.json"), [{"id": 2, "extra": "e"}])
    q = _ingest(spark, dirs)
    with pytest.raises(StreamingQueryException, match=r"UNKNOWN_FIELD_EXCEPTION.*extra.*b\.json"):
        q.awaitTermination()
    assert sorted(os.listdir(os.path.join(dirs["ckpt"], "_schemas"))) == ["0", "1"]
    _ingest(spark, dirs).awaitTermination()
    rows = _rows(spark, dirs)
    assert [(r["id"], r.get("extra")) for r in rows] == [("1", None), ("2", "e")]


def test_run_with_schema_evolution_restarts_automatically(spark, dirs):
    _jsonl(os.path.join(dirs["land"], "a.json"), [{"id": 1}])
    _jsonl(os.path.join(dirs["land"], "b.json"), [{"id": 2, "x": "1"}], mtime=time.time() + 5)
    run_with_schema_evolution(lambda: _ingest(spark, dirs))
    _jsonl(os.path.join(dirs["land"], "c.json"), [{"id": 3, "y": "2"}])
    run_with_schema_evolution(lambda: _ingest(spark, dirs))
    rows = _rows(spark, dirs)
    assert [(r["id"], r.get("x"), r.get("y")) for r in rows] == [
        ("1", None, None),
        ("2", "1", None),
        ("3", None, "2"),
    ]


@pytest.mark.parametrize("mode", ["rescue", "none", "failOnNewColumns"])
def test_other_evolution_modes(spark, dirs, mode):
    _jsonl(os.path.join(dirs["land"], "a.json"), [{"id": 1}])
    _ingest(spark, dirs, cloudFiles__schemaEvolutionMode=mode).awaitTermination()
    _jsonl(os.path.join(dirs["land"], "b.json"), [{"id": 2, "extra": "e"}])
    q = _ingest(spark, dirs, cloudFiles__schemaEvolutionMode=mode)
    if mode == "failOnNewColumns":
        with pytest.raises(StreamingQueryException, match="extra"):
            q.awaitTermination()
        assert sorted(os.listdir(os.path.join(dirs["ckpt"], "_schemas"))) == ["0"]
        return
    q.awaitTermination()
    rows = _rows(spark, dirs)
    assert [r["id"] for r in rows] == ["1", "2"] and "extra" not in rows[1]
    rescued = rows[1]["_rescued_data"]
    # Inferred streams always carry the rescue column, so "none" rescues too (as documented).
    assert json.loads(rescued)["extra"] == "e"


def test_explicit_schema_csv_with_partition_columns(spark, dirs):
    for day, rows in (("2024-01-01", "1,a\n2,b\n"), ("2024-01-02", "3,c\n")):
        p = os.path.join(dirs["land"], f"day={day}")
        os.makedirs(p)
        with open(os.path.join(p, "f.csv"), "w") as f:
            f.write("id,name\n" + rows)
    _ingest(
        spark,
        dirs,
        fmt="csv",
        schema="id int, name string, day date",
        cloudFiles__partitionColumns="day",
        header="true",  # with a given schema, a header is not assumed (Spark's default)
    ).awaitTermination()
    rows = _rows(spark, dirs)
    days = [dt.date(2024, 1, 1), dt.date(2024, 1, 1), dt.date(2024, 1, 2)]
    assert [(r["id"], r["name"], r["day"]) for r in rows] == list(
        zip([1, 2, 3], "abc", days, strict=True)
    )


@pytest.mark.parametrize("schema", [None, "id int, name string, day date"])
def test_file_metadata_column_names_each_rows_file_with_or_without_a_schema(spark, dirs, schema):
    for day, rows in (("2024-01-01", "1,a\n2,b\n"), ("2024-01-02", "3,c\n")):
        os.makedirs(os.path.join(dirs["land"], f"day={day}"))
        with open(os.path.join(dirs["land"], f"day={day}", "f.csv"), "w") as f:
            f.write("id,name\n" + rows)
        os.utime(f.name, (1_700_000_000, 1_700_000_000))
    _ingest(
        spark, dirs, fmt="csv", schema=schema, header="true", headwater__fileMetadataColumn="_meta"
    ).awaitTermination()
    rows = _rows(spark, dirs)
    assert list(rows[0])[-1] == "_meta"
    first = os.path.join(dirs["land"], "day=2024-01-01", "f.csv")
    assert [(str(r["id"]), r["_meta"]["file_path"], r["_meta"]["file_name"]) for r in rows] == [
        ("1", first, "f.csv"),
        ("2", first, "f.csv"),
        ("3", first.replace("01-01", "01-02"), "f.csv"),
    ]
    assert rows[0]["_meta"]["file_size"] == os.path.getsize(first)
    modified = rows[0]["_meta"]["file_modification_time"]
    assert modified.replace(tzinfo=modified.tzinfo or dt.timezone.utc).timestamp() == 1_700_000_000


def test_partition_columns_are_inferred_from_paths(spark, dirs):
    _jsonl(os.path.join(dirs["land"], "region=eu", "a.json"), [{"id": 1}])
    _jsonl(os.path.join(dirs["land"], "region=us", "b.json.gz.tmp"), [])  # not .json: still listed
    os.remove(os.path.join(dirs["land"], "region=us", "b.json.gz.tmp"))
    with gzip.open(os.path.join(dirs["land"], "region=us", "b.json.gz"), "wt") as f:
        f.write(json.dumps({"id": 2}) + "\n")
    _ingest(spark, dirs).awaitTermination()
    assert [(r["id"], r["region"]) for r in _rows(spark, dirs)] == [("1", "eu"), ("2", "us")]


def test_include_existing_files_false_and_glob_filter(spark, dirs):
    _jsonl(os.path.join(dirs["land"], "old.json"), [{"id": 1}])
    _ingest(
        spark, dirs, cloudFiles__includeExistingFiles="false", schema="id string"
    ).awaitTermination()
    _jsonl(os.path.join(dirs["land"], "new.json"), [{"id": 2}])
    _jsonl(os.path.join(dirs["land"], "skip.txt"), [{"id": 3}])
    _ingest(
        spark,
        dirs,
        cloudFiles__includeExistingFiles="false",
        schema="id string",
        pathGlobFilter="*.json",
    ).awaitTermination()
    assert [r["id"] for r in _rows(spark, dirs)] == ["2"]


def test_max_files_per_trigger_and_state_inspection(spark, dirs):
    for i in range(5):
        _jsonl(os.path.join(dirs["land"], f"f{i}.json"), [{"id": i}])
    q = _ingest(spark, dirs, cloudFiles__maxFilesPerTrigger="2")
    q.awaitTermination()
    batches = [p for p in q.recentProgress if p["numInputRows"] > 0]
    assert [p["numInputRows"] for p in batches] == [2, 2, 1]
    assert json.loads(batches[0]["sources"][0]["latestOffset"])["numFilesOutstanding"] >= 3
    state = cloud_files_state(dirs["ckpt"], spark)
    assert state.columns == [
        "path",
        "size",
        "modification_time",
        "discovery_time",
        "commit_time",
        "archive_time",
    ]
    rows = state.collect()
    assert len(rows) == 5 and all(r.commit_time is not None for r in rows)


def test_clean_source_delete_and_move(spark, dirs, tmp_path):
    _jsonl(os.path.join(dirs["land"], "a.json"), [{"id": 1}])
    _ingest(
        spark,
        dirs,
        cloudFiles__cleanSource="DELETE",
        cloudFiles__cleanSource__retentionDuration="0 ms",
    ).awaitTermination()
    _jsonl(os.path.join(dirs["land"], "b.json"), [{"id": 2}])
    _ingest(
        spark,
        dirs,
        cloudFiles__cleanSource="DELETE",
        cloudFiles__cleanSource__retentionDuration="0 ms",
    ).awaitTermination()
    assert not os.path.exists(os.path.join(dirs["land"], "a.json"))
    archive = str(tmp_path / "archive")
    d2 = {
        "land": str(tmp_path / "land2"),
        "ckpt": str(tmp_path / "ck2"),
        "out": str(tmp_path / "out2"),
    }
    _jsonl(os.path.join(d2["land"], "m.json"), [{"id": 1}])
    opts = {"cloudFiles__cleanSource": "MOVE", "cloudFiles__cleanSource__moveDestination": archive,
            "cloudFiles__cleanSource__retentionDuration": "0 ms"}  # fmt: skip
    _ingest(spark, d2, **opts).awaitTermination()
    _jsonl(os.path.join(d2["land"], "n.json"), [{"id": 2}])
    _ingest(spark, d2, **opts).awaitTermination()
    assert os.path.exists(os.path.join(archive, "m.json"))
    assert [
        r.archive_time is not None
        for r in cloud_files_state(d2["ckpt"], spark).orderBy("path").collect()
    ][0]


def test_validate_options_rejects_a_misspelled_option_by_name(spark, dirs):
    _jsonl(os.path.join(dirs["land"], "a.json"), [{"id": 1}])
    with pytest.raises(
        Exception, match=r"(?i)unknown option 'cloudfiles.maxfilespertriger'.*did you mean"
    ):
        _ingest(spark, dirs, cloudFiles__maxFilesPerTriger="1").awaitTermination()
    with pytest.raises(Exception, match="schemaLocation"):
        spark.readStream.format("cloudFiles").option("cloudFiles.format", "json").load(dirs["land"])
    with pytest.raises(OptionError, match="'header' does not apply to cloudFiles.format 'json'"):
        from headwater.autoloader.options import CloudFilesOptions

        CloudFilesOptions.parse(
            {"cloudFiles.format": "json", "cloudFiles.schemaLocation": "/x", "header": "true"},
            False,
        )


def test_empty_directory_without_schema_says_what_to_do(spark, dirs):
    os.makedirs(dirs["land"])
    with pytest.raises(Exception, match="No files in .* to infer a schema"):
        _ingest(spark, dirs).awaitTermination()


def test_malformed_lines_are_rescued_and_the_rest_of_the_file_kept(spark, dirs):
    _jsonl(os.path.join(dirs["land"], "a.json"), [{"id": 1}])
    _ingest(spark, dirs).awaitTermination()
    _jsonl(os.path.join(dirs["land"], "b.json"), ['{"id": 2}', '{"id": 3', '{"id": 4}'])
    _ingest(spark, dirs).awaitTermination()
    rows = _rows(spark, dirs, order="_rescued_data")
    ids = sorted(r["id"] for r in rows if r["id"] is not None)
    assert ids == ["1", "2", "4"]
    corrupt = [json.loads(r["_rescued_data"]) for r in rows if r["id"] is None]
    assert corrupt[0]["_corrupt_record"] == '{"id": 3'


def test_a_given_schema_keeps_the_file_state_in_the_checkpoint(spark, tmp_path):
    """With ``.schema(...)`` and no ``cloudFiles.schemaLocation`` (as on the known platform)
    the file state lives under the query's checkpoint: a restart on the same checkpoint
    reads only the file that landed in between; a query with another checkpoint reads all."""
    land = str(tmp_path / "land")
    _jsonl(os.path.join(land, "a.json"), [{"id": 1}, {"id": 2}])

    def run(checkpoint: str, out: str) -> list[int]:
        df = (
            spark.readStream.format("cloudFiles")
            .option("cloudFiles.format", "json")
            .schema("id int")
            .load(land)
        )
        writer = df.writeStream.format("delta").option("checkpointLocation", checkpoint)
        writer.trigger(availableNow=True).start(out).awaitTermination()
        return sorted(r.id for r in spark.read.format("delta").load(out).collect())

    first, other = str(tmp_path / "ckpt"), str(tmp_path / "ckpt_other")
    assert run(first, str(tmp_path / "out")) == [1, 2]
    _jsonl(os.path.join(land, "b.json"), [{"id": 3}])
    assert run(first, str(tmp_path / "out")) == [1, 2, 3]
    assert os.path.isdir(os.path.join(first, "sources", "0", "_headwater_file_state"))
    assert cloud_files_state(first, spark).count() == 2  # by the checkpoint, as on the platform
    assert run(other, str(tmp_path / "out_other")) == [1, 2, 3]
