"""Logs old Delta writers left that delta-rs refuses or misreads: null fields in
``metaData`` and absolute, percent-encoded ``file:`` paths. headwater replays them itself
(never wrong rows) and keeps delta-rs wherever it reads the log correctly."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from urllib.parse import quote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable as RsTable
from deltalake import write_deltalake

from headwater.delta.log import replay
from headwater.delta.log import tolerant_replay as tolerant_log
from headwater.delta.log.delta_log import DeltaLog, ReplayedSnapshot, Snapshot
from headwater.errors import UnsupportedFeatureError, VersionNotFoundError

SCHEMA = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "part", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
)
T0 = 1_600_000_000_000  # commit timestamps: T0 + version minutes


def _data_file(root: Path, part: str, name: str, ids: list[int]) -> str:
    """A Parquet file in the partition directory Spark would use; its path as old Delta
    releases logged it: absolute and percent-encoded."""
    directory = root / f"part={part.replace('%', '%25')}"
    directory.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), directory / name)
    return "file:" + quote(str(directory / name))


def _add(root: Path, logged: str, part: str, ids: list[int]) -> dict:
    local = logged if not logged.startswith("file:") else None
    size = (root / local).stat().st_size if local else 1
    stats = {"numRecords": len(ids), "minValues": {"id": min(ids)}, "maxValues": {"id": max(ids)}}
    stats["nullCount"] = {"id": 0}
    return {
        "add": {
            "path": logged,
            "partitionValues": {"part": part},
            "size": size,
            "modificationTime": T0,
            "dataChange": True,
            "stats": json.dumps(stats),
        }
    }


def _remove(logged: str) -> dict:
    return {"remove": {"path": logged, "deletionTimestamp": T0, "dataChange": True}}


def _commit(root: Path, version: int, actions: list[dict]) -> None:
    log = root / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    info = {"commitInfo": {"timestamp": T0 + version * 60_000, "operation": "WRITE"}}
    lines = [json.dumps(a) for a in [info, *actions]]
    path = log / f"{version:020d}.json"
    path.write_text("\n".join(lines) + "\n")
    # The file written when its commitInfo says (the commit's time is the file's).
    seconds = info["commitInfo"]["timestamp"] / 1000
    os.utime(path, (seconds, seconds))


def _metadata(options: dict | None, configuration: dict | None) -> dict:
    return {
        "metaData": {
            "id": "old-table",
            "format": {"provider": "parquet", "options": options},
            "schemaString": SCHEMA,
            "partitionColumns": ["part"],
            "configuration": configuration,
            "createdTime": T0,
        }
    }


def _old_table(tmp_path: Path, options: dict | None = None, configuration: dict | None = None):
    """Three commits as an old Delta release wrote them, under a root with a space:
    v0 creates (null ``format.options`` / ``configuration``) with two absolute adds, v1
    adds a relative file, v2 removes it by its absolute spelling and adds another."""
    root = tmp_path / "old table"
    a = _data_file(root, "a b", "f0.parquet", [1, 2])
    b = _data_file(root, "50%", "f1.parquet", [3])
    _commit(
        root,
        0,
        [
            {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
            _metadata(options, configuration),
            _add(root, a, "a b", [1, 2]),
            _add(root, b, "50%", [3]),
        ],
    )
    c = _data_file(root, "c", "f2.parquet", [4])
    _commit(root, 1, [_add(root, "part=c/f2.parquet", "c", [4])])
    d = _data_file(root, "c", "f3.parquet", [5, 6])
    _commit(root, 2, [_remove(c), _add(root, d, "c", [5, 6])])
    return root


ROWS_V2 = [(1, "a b"), (2, "a b"), (3, "50%"), (5, "c"), (6, "c")]


def _rows(snapshot: Snapshot) -> list[tuple]:
    out = []
    for f in snapshot.files:
        ids = pq.read_table(f.absolute(snapshot.root)).column("id").to_pylist()
        out += [(i, f.partition_values["part"]) for i in ids]
    return sorted(out)


def _refusal(path: Path) -> str:
    with pytest.raises(Exception) as caught:  # noqa: PT011 - delta-rs's own error type
        RsTable(str(path))
    return str(caught.value)


def test_delta_rs_refuses_null_format_options_and_headwater_replays_the_log(tmp_path):
    root = _old_table(tmp_path, options=None, configuration={})
    assert "unmasked nulls" in _refusal(root) and "options" in _refusal(root)
    snap = DeltaLog(str(root)).snapshot()
    assert isinstance(snap, ReplayedSnapshot)
    assert snap.version == 2
    assert "delta-rs refuses its log" in (snap.replayed_because or "")
    assert _rows(snap) == ROWS_V2
    assert snap.partition_columns == ["part"]
    assert snap.schema.fieldNames() == ["id", "part"]
    assert snap.metadata.format_options == {}


def test_delta_rs_refuses_null_configuration_and_headwater_reads_it_as_empty(tmp_path):
    root = _old_table(tmp_path, options={}, configuration=None)
    assert "configuration" in _refusal(root)
    snap = DeltaLog(str(root)).snapshot()
    assert snap.configuration == {}
    assert snap.check_constraints == {}
    assert _rows(snap) == ROWS_V2


def test_absolute_percent_encoded_paths_become_decoded_paths_under_the_root(tmp_path):
    root = _old_table(tmp_path)
    snap = DeltaLog(str(root)).snapshot()
    by_path = {f.path: f for f in snap.files}
    assert set(by_path) == {"part=a b/f0.parquet", "part=50%25/f1.parquet", "part=c/f3.parquet"}
    assert by_path["part=a b/f0.parquet"].partition_values == {"part": "a b"}
    assert by_path["part=50%25/f1.parquet"].log_path.startswith("file:/")
    assert "%2520" not in by_path["part=a b/f0.parquet"].absolute(snap.root)


def test_a_remove_spelled_absolute_removes_the_file_added_relative(tmp_path):
    root = _old_table(tmp_path)
    snap = DeltaLog(str(root)).snapshot()
    assert "part=c/f2.parquet" not in {f.path for f in snap.files}
    assert set(replay.live_adds(DeltaLog(str(root)), 2)) == {f.path for f in snap.files}


def test_stats_and_partition_values_come_from_the_logged_json(tmp_path):
    root = _old_table(tmp_path)
    actions = DeltaLog(str(root)).snapshot().add_actions
    rows = sorted(actions.to_pylist(), key=lambda r: r["min.id"])
    assert [r["num_records"] for r in rows] == [2, 1, 2]
    assert [(r["min.id"], r["max.id"]) for r in rows] == [(1, 2), (3, 3), (5, 6)]
    assert [r["partition.part"] for r in rows] == ["a b", "50%", "c"]
    assert actions.schema.field("min.id").type == pa.int64()


def test_time_travel_by_version_and_timestamp_replays_earlier_versions(tmp_path):
    root = _old_table(tmp_path)
    dlog = DeltaLog(str(root))
    assert _rows(dlog.snapshot(version=0)) == [(1, "a b"), (2, "a b"), (3, "50%")]
    assert _rows(dlog.snapshot(version=1)) == [(1, "a b"), (2, "a b"), (3, "50%"), (4, "c")]
    at_v1 = "2020-09-13T12:28:00Z"  # between T0 + 1 min and T0 + 2 min
    assert dlog.snapshot(timestamp=at_v1).version == 1
    assert dlog.latest_version() == 2
    with pytest.raises(VersionNotFoundError, match=r"Available versions: \[0, 2\]"):
        dlog.snapshot(version=7)


def _checkpoint(root: Path, version: int, actions: list[dict]) -> None:
    """A classic checkpoint as old Spark wrote it: null options, absolute paths."""
    string_map = pa.map_(pa.string(), pa.string())
    schema = pa.schema(
        [
            (
                "protocol",
                pa.struct([("minReaderVersion", pa.int32()), ("minWriterVersion", pa.int32())]),
            ),
            (
                "metaData",
                pa.struct(
                    [
                        ("id", pa.string()),
                        ("format", pa.struct([("provider", pa.string()), ("options", string_map)])),
                        ("schemaString", pa.string()),
                        ("partitionColumns", pa.list_(pa.string())),
                        ("configuration", string_map),
                        ("createdTime", pa.int64()),
                    ]
                ),
            ),
            (
                "add",
                pa.struct(
                    [
                        ("path", pa.string()),
                        ("partitionValues", string_map),
                        ("size", pa.int64()),
                        ("modificationTime", pa.int64()),
                        ("dataChange", pa.bool_()),
                        ("stats", pa.string()),
                    ]
                ),
            ),
        ]
    )
    rows = []
    for action in actions:
        row = {name: None for name in schema.names}
        kind, body = next(iter(action.items()))
        if kind == "add":
            body = {**body, "partitionValues": list(body["partitionValues"].items())}
        row[kind] = body
        rows.append(row)
    pq.write_table(
        pa.Table.from_pylist(rows, schema),
        root / "_delta_log" / f"{version:020d}.checkpoint.parquet",
    )
    (root / "_delta_log" / "_last_checkpoint").write_text(
        json.dumps({"version": version, "size": len(rows)})
    )


def test_a_checkpoint_then_later_commits_replay_like_the_commits_alone(tmp_path):
    root = _old_table(tmp_path)
    dlog = DeltaLog(str(root))
    before = dlog.snapshot()
    live = [{"add": a} for a in before.log_state.adds.values()]
    _checkpoint(
        root,
        2,
        [
            {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
            _metadata(None, None),
            *live,
        ],
    )
    for v in (0, 1):  # log cleanup removed the commits the checkpoint covers
        (root / "_delta_log" / f"{v:020d}.json").unlink()
    e = _data_file(root, "a b", "f4.parquet", [7])
    _commit(root, 3, [_add(root, e, "a b", [7]), _remove("part=50%2525/f1.parquet")])
    snap = DeltaLog(str(root)).snapshot()
    assert snap.version == 3
    assert _rows(snap) == [(1, "a b"), (2, "a b"), (5, "c"), (6, "c"), (7, "a b")]
    assert snap.configuration == {}


def test_delta_rs_stays_the_reader_of_logs_it_reads(tmp_path):
    path = str(tmp_path / "plain")
    write_deltalake(path, pa.table({"id": [1, 2]}))
    snap = DeltaLog(path).snapshot()
    assert type(snap) is Snapshot
    assert snap.replayed_because is None
    assert snap.table.version() == 0


def test_absolute_paths_delta_rs_opens_are_still_paired_by_headwaters_replay(tmp_path):
    """delta-rs opens this log (no nulls) but keeps a file a remove spelled differently
    from its add removed; headwater's file list drops it as delta-spark does."""
    root = _old_table(tmp_path, options={}, configuration={})
    rs_paths = pa.table(RsTable(str(root)).get_add_actions(flatten=True)).column("path").to_pylist()
    assert any(p.startswith("file:") for p in rs_paths)
    snap = DeltaLog(str(root)).snapshot()
    assert type(snap) is Snapshot and snap.replayed_because is not None
    assert _rows(snap) == ROWS_V2


def test_a_relative_add_removed_by_an_absolute_path_is_gone_though_delta_rs_keeps_it(tmp_path):
    """Every live add delta-rs lists is relative, yet one of them was removed by its
    absolute spelling: delta-rs returns its rows, delta-spark and headwater do not."""
    path = tmp_path / "mixed"
    write_deltalake(str(path), pa.table({"id": [1, 2]}))
    write_deltalake(str(path), pa.table({"id": [3]}), mode="append")
    first = pa.table(RsTable(str(path), version=0).get_add_actions(flatten=True))["path"][0]
    _commit(path, 2, [_remove("file:" + quote(str(path)) + "/" + first.as_py())])
    rs_files = pa.table(RsTable(str(path)).get_add_actions(flatten=True))["path"].to_pylist()
    assert first.as_py() in rs_files  # delta-rs: still live
    snap = DeltaLog(str(path)).snapshot()
    assert "removes name files by absolute paths" in (snap.replayed_because or "")
    assert [f.path for f in snap.files] == [p for p in rs_files if p != first.as_py()]
    assert sorted(pq.read_table(snap.files[0].absolute(snap.root))["id"].to_pylist()) == [3]


def test_writes_and_vacuum_on_a_replayed_table_are_refused_by_name(tmp_path):
    root = _old_table(tmp_path)
    snap = DeltaLog(str(root)).snapshot()
    with pytest.raises(UnsupportedFeatureError, match="Rewrite it as a new table"):
        snap.check_writable()
    with pytest.raises(UnsupportedFeatureError, match="cannot vacuum"):
        _ = snap.table


def test_unknown_reader_features_are_still_refused_on_a_replayed_table(tmp_path):
    root = _old_table(tmp_path)
    (root / "_delta_log" / "00000000000000000003.json").write_text(
        json.dumps(
            {
                "protocol": {
                    "minReaderVersion": 3,
                    "minWriterVersion": 7,
                    "readerFeatures": ["someFutureFeature"],
                    "writerFeatures": ["someFutureFeature"],
                }
            }
        )
        + "\n"
    )
    snap = DeltaLog(str(root)).snapshot()
    with pytest.raises(UnsupportedFeatureError, match="someFutureFeature"):
        snap.check_readable()


def test_files_outside_the_table_are_refused_by_name(tmp_path):
    root = _old_table(tmp_path)
    outside = _data_file(tmp_path / "elsewhere", "z", "f9.parquet", [9])
    _commit(root, 3, [_add(root, outside, "z", [9])])
    snap = DeltaLog(str(root)).snapshot()
    with pytest.raises(UnsupportedFeatureError, match="outside the table"):
        _ = snap.files


def test_file_key_decodes_absolute_and_relative_spellings_alike():
    root = "/data/t x"
    assert (
        tolerant_log.file_key(root, "file:/data/t%20x/p=a%2520b/f.parquet") == "p=a%20b/f.parquet"
    )
    assert tolerant_log.file_key(root, "file:///data/t%20x/f.parquet") == "f.parquet"
    assert tolerant_log.file_key(root, "p=a%2520b/f.parquet") == "p=a%20b/f.parquet"
    assert tolerant_log.file_key(root, "file:/other/f.parquet") == "/other/f.parquet"


# -- through Spark -----------------------------------------------------------------------


def _spark_rows(df) -> list[tuple]:
    return sorted((r["id"], r["part"]) for r in df.collect())


def test_spark_reads_exactly_the_live_rows_of_a_refused_log(spark, tmp_path):
    root = str(_old_table(tmp_path))
    assert _spark_rows(spark.read.format("delta").load(root)) == ROWS_V2
    old = spark.read.format("delta").option("versionAsOf", 1).load(root)
    assert _spark_rows(old) == [(1, "a b"), (2, "a b"), (3, "50%"), (4, "c")]


def test_delta_table_for_path_reads_exactly_the_live_rows_of_a_refused_log(spark, tmp_path):
    from headwater.delta.tables import DeltaTable

    root = str(_old_table(tmp_path, options={}, configuration=None))
    assert _spark_rows(DeltaTable.forPath(spark, root).toDF()) == ROWS_V2
    filtered = spark.read.format("delta").load(root).where("part = 'c' AND id > 5")
    assert _spark_rows(filtered) == [(6, "c")]


def test_spark_reads_exactly_the_live_rows_when_delta_rs_opens_absolute_paths(spark, tmp_path):
    root = str(_old_table(tmp_path, options={}, configuration={}))
    assert _spark_rows(spark.read.format("delta").load(root)) == ROWS_V2


def test_appending_to_a_refused_log_is_refused_by_name(spark, tmp_path):
    root = str(_old_table(tmp_path))
    df = spark.createDataFrame([(9, "c")], "id long, part string")
    with pytest.raises(UnsupportedFeatureError, match="Rewrite it as a new table"):
        df.write.format("delta").mode("append").save(root)
    assert _spark_rows(spark.read.format("delta").load(root)) == ROWS_V2


def test_vacuum_refuses_absolute_path_tables_delta_rs_would_empty(spark, tmp_path):
    """delta-rs lists every live file of such a table as unreferenced; vacuum must not
    get that far."""
    from headwater.delta.tables import DeltaTable

    root = _old_table(tmp_path, options={}, configuration={})
    listed = RsTable(str(root)).vacuum(
        retention_hours=0, dry_run=True, enforce_retention_duration=False, full=True
    )
    assert "part=a b/f0.parquet" in listed  # live, yet delta-rs would delete it
    with pytest.raises(UnsupportedFeatureError, match="cannot vacuum"):
        DeltaTable.forPath(spark, str(root)).vacuum(200)
    assert (root / "part=a b" / "f0.parquet").exists()
    assert _spark_rows(spark.read.format("delta").load(str(root))) == ROWS_V2


# -- the compatibility corpus, spelled as old writers spelled it --------------------------

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "compat" / "delta-tables"
CORPUS_TABLES = (
    sorted(
        p.name
        for p in CORPUS.iterdir()
        if (p / "_delta_log").is_dir() and list((p / "_delta_log").glob("*.json"))
    )
    if CORPUS.is_dir()
    else []
)


def _as_old_writers_spelled_it(source: Path, target: Path) -> None:
    """A copy of ``source`` whose JSON commits have null ``format.options`` and name every
    file by its absolute, percent-encoded ``file:`` URI (checkpoints keep their relative
    spellings, so adds and removes are spelled both ways)."""
    shutil.copytree(source, target)
    prefix = "file:" + quote(str(target))
    for commit in (target / "_delta_log").glob("*.json"):
        lines = []
        for line in commit.read_text().splitlines():
            if not line.strip():
                continue
            action = json.loads(line)
            if action.get("metaData"):
                action["metaData"].setdefault("format", {})["options"] = None
            for kind in ("add", "remove", "cdc"):
                body = action.get(kind)
                if body and not tolerant_log.is_absolute(body["path"]):
                    body["path"] = f"{prefix}/{body['path']}"
            lines.append(json.dumps(action))
        commit.write_text("\n".join(lines) + "\n")


def _json_rows(spark, path: str) -> list[str] | None:
    """The table's rows as JSON, sorted; None when the read fails (a named error, or
    Spark's for a data file the log names but the corpus lacks)."""
    try:
        df = spark.read.format("delta").load(path)
        return sorted(r[0] for r in df.selectExpr("to_json(struct(*))").collect())
    except Exception:  # noqa: BLE001 - compared: both readings must fail alike
        return None


@pytest.mark.skipif(not CORPUS_TABLES, reason="compat corpus not present beside the repository")
@pytest.mark.parametrize("name", CORPUS_TABLES)
def test_corpus_tables_respelled_as_old_writers_read_the_same_rows(spark, tmp_path, name):
    copy = tmp_path / name
    _as_old_writers_spelled_it(CORPUS / name, copy)
    assert _json_rows(spark, str(copy)) == _json_rows(spark, str(CORPUS / name))


def test_file_key_treats_spark_spellings_of_one_location_alike(tmp_path):
    real = tmp_path / "real"
    (real / "p").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real)
    assert tolerant_log.file_key(str(link), f"file:{real}/p/f.parquet") == "p/f.parquet"
    assert tolerant_log.file_key("s3://b/t", "s3a://b/t/p=1/f.parquet") == "p=1/f.parquet"
    assert tolerant_log.file_key("s3://b/t", "s3a://b/other/f.parquet") == "s3://b/other/f.parquet"


def test_history_of_a_refused_log_comes_from_the_commits_newest_first(tmp_path):
    root = _old_table(tmp_path)
    assert "unmasked nulls" in _refusal(root)
    history = DeltaLog(str(root)).history()
    assert [(h["version"], h["timestamp"], h["operation"]) for h in history] == [
        (2, T0 + 120_000, "WRITE"),
        (1, T0 + 60_000, "WRITE"),
        (0, T0, "WRITE"),
    ]
    assert [h["version"] for h in DeltaLog(str(root)).history(1)] == [2]
