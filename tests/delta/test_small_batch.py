"""A stream's small micro-batches go into Delta from Arrow on the driver, with no Spark write
job (``headwater.delta.write.small_batch``): the rows, their types, the files' statistics,
the commit's name and its transaction id are as the Spark path's. Batches over the size,
partitioned tables and batches whose input cannot be sized go through Spark. Real streams
(Auto Loader, a Delta table), real Delta tables."""

from __future__ import annotations

import json
import re
from pathlib import Path

from deltalake import DeltaTable

from headwater.autoloader.source import FilesPartition
from headwater.delta.files.arrow_read import FilePartition, FileTask
from headwater.delta.options import WriteSpec
from headwater.delta.write import small_batch
from headwater.delta.write.sink import DeltaStreamSink, app_id_for

SCHEMA = (
    "id long, at timestamp, day date, amount decimal(10,2), tags array<string>, "
    "attrs map<string,string>, who struct<name:string,age:int>, ok boolean"
)
# pyarrow's file names (part-<uuid>.c000...), not a Spark task's (part-00000-<uuid>-c000...)
ARROW_FILE = re.compile(
    r"part-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.c000\."
)


def _land(folder: Path, first: int, count: int) -> None:
    for i in range(first, first + count):
        record = {
            "id": i,
            "at": f"2026-12-0{1 + i % 9}T10:{i % 60:02d}:00Z",
            "day": f"2026-11-{10 + i % 20}",
            "amount": f"{i}.25",
            "tags": [f"t{i}", None] if i % 2 else [],
            "attrs": {"k": str(i)},
            "who": {"name": f"n{i}", "age": i} if i % 3 else None,
            "ok": i % 2 == 0,
        }
        (folder / f"{i:04d}.json").write_text(json.dumps(record) + "\n")


def _ingest(spark, land: Path, ck: Path, out: Path, partitioned: bool = False) -> None:
    reader = (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.schemaLocation", str(ck))
        .schema(SCHEMA)
        .load(str(land))
    )
    writer = reader.writeStream.format("delta").option("checkpointLocation", str(ck))
    if partitioned:
        writer = writer.partitionBy("ok")
    writer.trigger(availableNow=True).start(str(out)).awaitTermination()


def _commits(out: Path) -> list[dict]:
    """Each commit's operation, transaction and added file names, oldest first."""
    found = []
    for entry in sorted((out / "_delta_log").glob("*.json")):
        actions = [json.loads(line) for line in entry.read_text().splitlines() if line]
        found.append(
            {
                "op": next(a["commitInfo"]["operation"] for a in actions if "commitInfo" in a),
                "txn": [a["txn"] for a in actions if "txn" in a],
                "adds": [a["add"] for a in actions if "add" in a],
            }
        )
    return found


def test_small_batches_are_appended_from_arrow_with_the_rows_types_and_transaction(spark, tmp_path):
    land, ck, out = tmp_path / "land", tmp_path / "ck", tmp_path / "out"
    land.mkdir()
    _land(land, 0, 3)
    _ingest(spark, land, ck, out)  # the first batch creates the table: through Spark
    for batch in range(1, 4):
        _land(land, batch * 10, 2)
        _ingest(spark, land, ck, out)

    commits = _commits(out)
    assert [c["op"] for c in commits] == ["STREAMING UPDATE"] * 4
    assert not any(ARROW_FILE.match(a["path"]) for a in commits[0]["adds"])
    app = app_id_for(str(ck), json.loads((ck / "metadata").read_text())["id"])
    for batch, commit in enumerate(commits[1:], start=1):
        assert [ARROW_FILE.match(a["path"]) is not None for a in commit["adds"]] == [True]
        assert [(t["appId"], t["version"]) for t in commit["txn"]] == [(app, batch)]
        stats = json.loads(commit["adds"][0]["stats"])
        assert stats["numRecords"] == 2
        assert stats["minValues"]["id"] == batch * 10 and stats["maxValues"]["id"] == batch * 10 + 1

    expected = spark.read.schema(SCHEMA).json(str(land))
    table = spark.read.format("delta").load(str(out))
    assert table.schema.simpleString() == expected.schema.simpleString()
    assert sorted(table.collect()) == sorted(expected.collect())
    # the statistics skip files as the Spark path's do
    assert table.where("id = 31").count() == 1
    assert DeltaTable(str(out)).to_pyarrow_table().num_rows == 9


def test_a_batch_over_the_size_a_partitioned_table_and_a_replayed_batch(
    spark, tmp_path, monkeypatch
):
    land, ck, out = tmp_path / "land", tmp_path / "ck", tmp_path / "out"
    land.mkdir()
    _land(land, 0, 2)
    _ingest(spark, land, ck, out)
    monkeypatch.setattr(small_batch, "SMALL_BATCH_BYTES", 100)  # each file is ~200 bytes
    _land(land, 10, 1)
    _ingest(spark, land, ck, out)
    assert not any(ARROW_FILE.match(a["path"]) for a in _commits(out)[-1]["adds"])
    monkeypatch.undo()

    pland, pck, pout = tmp_path / "pland", tmp_path / "pck", tmp_path / "pout"
    pland.mkdir()
    for first in (0, 10):
        _land(pland, first, 2)
        _ingest(spark, pland, pck, pout, partitioned=True)
    last = _commits(pout)[-1]["adds"]
    assert sorted(a["partitionValues"]["ok"] for a in last) == ["false", "true"]
    assert not any(ARROW_FILE.match(a["path"]) for a in last)

    # The same batch handed to the sink twice (a restart replaying it): committed once.
    rout = tmp_path / "rout"
    sink = DeltaStreamSink(str(rout), str(tmp_path / "rck"), "append")
    results = []

    def twice(df, batch_id):
        results.append(sink.commit(df, batch_id).version)
        results.append(sink.commit(df, batch_id).version)

    rland = tmp_path / "rland"
    rland.mkdir()
    for first in (0, 10):
        _land(rland, first, 2)
        (
            spark.readStream.format("cloudFiles")
            .option("cloudFiles.format", "json")
            .option("cloudFiles.schemaLocation", str(tmp_path / "rsl"))
            .schema(SCHEMA)
            .load(str(rland))
            .writeStream.foreachBatch(twice)
            .option("checkpointLocation", str(tmp_path / "rck2"))
            .trigger(availableNow=True)
            .start()
            .awaitTermination()
        )
    assert results == [0, None, 1, None]
    assert ARROW_FILE.match(_commits(rout)[1]["adds"][0]["path"])
    assert spark.read.format("delta").load(str(rout)).count() == 4


def test_a_delta_streams_small_batches_too(spark, tmp_path):
    src, out, ck = str(tmp_path / "src"), tmp_path / "out", tmp_path / "ck"
    spark.range(0, 5).selectExpr("id", "cast(id as string) s").write.format("delta").save(src)

    def run() -> None:
        (
            spark.readStream.format("delta")
            .load(src)
            .writeStream.format("delta")
            .option("checkpointLocation", str(ck))
            .trigger(availableNow=True)
            .start(str(out))
            .awaitTermination()
        )

    run()
    spark.range(5, 8).selectExpr("id", "cast(id as string) s").write.format("delta").mode(
        "append"
    ).save(src)
    run()
    assert ARROW_FILE.match(_commits(out)[-1]["adds"][0]["path"])
    assert sorted(r.id for r in spark.read.format("delta").load(str(out)).collect()) == list(
        range(8)
    )


def test_partitions_say_their_bytes_and_an_ineligible_write_does_not_touch_the_batch():
    assert FilesPartition([("a", 10, 0), ("b", 32, 0)]).input_bytes() == 42
    assert FilePartition([FileTask("a", 7, ()), FileTask("b", 5, ())]).input_bytes() == 12

    class Untouchable:
        def __getattr__(self, name):
            raise AssertionError(f"the batch was touched: {name}")

    for spec in (
        WriteSpec(mode="overwrite", txn=("a", 1)),
        WriteSpec(mode="append"),  # (no transaction: not a stream's batch)
        WriteSpec(mode="append", txn=("a", 1), partition_by=("p",)),
        WriteSpec(mode="append", txn=("a", 1), compression="lz4"),
        WriteSpec(mode="append", txn=("a", 1), max_records_per_file=10),
    ):
        assert small_batch.append(Untouchable(), None, spec, None) is None  # type: ignore[arg-type]
