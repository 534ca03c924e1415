"""cloudFiles options not covered elsewhere, each asserting the rows that result."""

from __future__ import annotations

import json
import os
import time

import pytest
from deltalake import DeltaTable

from tests.autoloader.helpers import start_ingest


def _write(path, text, mtime=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))


def _run(spark, tmp_path, fmt="json", schema="id string", **options):
    land, ck, out = str(tmp_path / "land"), str(tmp_path / "ck"), str(tmp_path / "out")
    q = start_ingest(spark, land, ck, out, fmt, schema or None, **options)
    q.awaitTermination()
    return q, (DeltaTable(out).to_pyarrow_table().to_pylist() if os.path.exists(out) else [])


def test_allow_overwrites_reprocesses_a_changed_file_whole(spark, tmp_path):
    land = tmp_path / "land"
    _write(str(land / "a.json"), '{"id": "1"}\n', mtime=time.time() - 100)
    _run(spark, tmp_path, cloudFiles__allowOverwrites="true")
    _write(str(land / "a.json"), '{"id": "1"}\n{"id": "2"}\n')
    _, rows = _run(spark, tmp_path, cloudFiles__allowOverwrites="true")
    assert sorted(r["id"] for r in rows) == ["1", "1", "2"]


def test_without_allow_overwrites_a_changed_file_is_not_read_again(spark, tmp_path):
    land = tmp_path / "land"
    _write(str(land / "a.json"), '{"id": "1"}\n', mtime=time.time() - 100)
    _run(spark, tmp_path)
    _write(str(land / "a.json"), '{"id": "1"}\n{"id": "2"}\n')
    _, rows = _run(spark, tmp_path)
    assert [r["id"] for r in rows] == ["1"]


def test_max_bytes_per_trigger_is_a_soft_limit(spark, tmp_path):
    for i in range(4):
        _write(str(tmp_path / "land" / f"f{i}.json"), json.dumps({"id": str(i)}) + "\n")
    q, rows = _run(spark, tmp_path, cloudFiles__maxBytesPerTrigger="1b")
    assert sorted(r["id"] for r in rows) == ["0", "1", "2", "3"]
    assert [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]] == [1, 1, 1, 1]


def test_max_file_age_ignores_old_files(spark, tmp_path):
    _write(str(tmp_path / "land" / "old.json"), '{"id": "old"}\n', mtime=time.time() - 3 * 86400)
    _write(str(tmp_path / "land" / "new.json"), '{"id": "new"}\n')
    _, rows = _run(spark, tmp_path, cloudFiles__maxFileAge="1 day")
    assert [r["id"] for r in rows] == ["new"]


def test_modified_after_and_before(spark, tmp_path):
    _write(str(tmp_path / "land" / "a.json"), '{"id": "2020"}\n', mtime=1577836800)  # 2020-01-01
    _write(
        str(tmp_path / "land" / "b.json"), '{"id": "2022"}\n', mtime=1640995200 + 3600
    )  # 2022-01-01
    _write(str(tmp_path / "land" / "c.json"), '{"id": "now"}\n')
    _, rows = _run(
        spark, tmp_path, modifiedAfter="2021-01-01T00:00:00", modifiedBefore="2023-01-01T00:00:00"
    )
    assert [r["id"] for r in rows] == ["2022"]


def test_text_format_one_row_per_line(spark, tmp_path):
    _write(str(tmp_path / "land" / "log.txt"), "first line\nsecond line\n")
    _, rows = _run(spark, tmp_path, fmt="text", schema=None)
    assert sorted(r["value"] for r in rows) == ["first line", "second line"]


def test_multiline_json_documents(spark, tmp_path):
    _write(str(tmp_path / "land" / "a.json"), json.dumps([{"id": "1"}, {"id": "2"}], indent=2))
    _, rows = _run(spark, tmp_path, multiLine="true")
    assert sorted(r["id"] for r in rows) == ["1", "2"]


def test_partition_columns_empty_string_disables_inference(spark, tmp_path):
    _write(str(tmp_path / "land" / "k=v" / "a.json"), '{"id": "1"}\n')
    _, rows = _run(spark, tmp_path, schema=None, cloudFiles__partitionColumns="")
    assert rows == [{"id": "1", "_rescued_data": None}]


def test_format_options_come_from_the_shared_table_and_validate_options_false_drops_the_rest():
    from headwater.autoloader.options import CloudFilesOptions
    from headwater.formats.options import CsvOptions

    base = {"cloudFiles.format": "csv", "cloudFiles.schemaLocation": "/x"}
    opts = CloudFilesOptions.parse({**base, "sep": ";", "nullValue": "NA"}, user_schema=False)
    assert opts.format_options == CsvOptions(sep=";", null_value="NA")
    lax = {**base, "cloudFiles.validateOptions": "false", "samplingRatio": "0.1", "sep": ";"}
    lax_opts = CloudFilesOptions.parse({**lax, "nonsense": "1"}, user_schema=False)
    assert lax_opts.format_options == CsvOptions(sep=";")


def test_csv_date_format_misfits_are_rescued_in_a_stream(spark, tmp_path):
    _write(str(tmp_path / "land" / "a.csv"), "id,day\n1,08/04/2024\n2,2024-04-09\n")
    _, rows = _run(
        spark, tmp_path, fmt="csv", schema=None, dateFormat="dd/MM/yyyy",
        cloudFiles__schemaHints="id int, day date",
    )  # fmt: skip
    rows = sorted(rows, key=lambda r: r["id"])
    assert [(r["id"], str(r["day"])) for r in rows] == [(1, "2024-04-08"), (2, "None")]
    assert json.loads(rows[1]["_rescued_data"])["day"] == "2024-04-09"


def test_a_given_schema_gains_the_rescue_column_asked_for_or_of_rescue_mode(spark, tmp_path):
    """With ``.schema(...)``, ``rescuedDataColumn`` (or ``schemaEvolutionMode`` rescue)
    adds the column to the stream's rows, as Auto Loader does: a value that does not fit
    the given type, and a header column the schema lacks, are kept there."""
    for mode in (
        {"rescuedDataColumn": "_rescued_data"},
        {"cloudFiles__schemaEvolutionMode": "rescue"},
    ):
        root = tmp_path / next(iter(mode))
        _write(str(root / "land" / "a.csv"), "id,amount,note\n1,10,x\n2,oops,\n")
        _, rows = _run(spark, root, "csv", "id int, amount int", header="true", **mode)
        rows = sorted(rows, key=lambda r: r["id"])
        assert [(r["id"], r["amount"]) for r in rows] == [(1, 10), (2, None)]
        rescued = [json.loads(r["_rescued_data"]) for r in rows]
        assert [{k: v for k, v in r.items() if k != "_file_path"} for r in rescued] == [
            {"note": "x"},
            {"amount": "oops"},
        ]


def test_a_schema_known_without_inference_needs_no_schema_location():
    """A given schema (or binaryFile's) leaves the file state to the query's checkpoint;
    inference still needs the schema location. With a given schema a CSV header is not
    assumed (Spark's default; the platform assumes one only to infer)."""
    from headwater.autoloader.options import CloudFilesOptions
    from headwater.errors import OptionError

    given = CloudFilesOptions.parse({"cloudFiles.format": "csv"}, user_schema=True)
    assert given.schema_location is None and given.format_options.header is False
    with pytest.raises(OptionError, match="checkpoint.*not known here.*checkpointLocation"):
        _ = given.file_state_location
    bound = {"cloudFiles.format": "binaryFile", "headwater.stateLocation": "/ck/sources/0"}
    assert CloudFilesOptions.parse(bound, user_schema=False).file_state_location == (
        "/ck/sources/0"
    )
    with pytest.raises(OptionError, match="schemaLocation' is required to infer the schema"):
        CloudFilesOptions.parse({"cloudFiles.format": "json"}, user_schema=False)
