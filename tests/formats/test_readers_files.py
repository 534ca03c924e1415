"""headwater.formats, what every format shares: compression, encodings, empty files,
batch sizes, new columns found; binaryFile, text, and formats or options refused.

Pure pyarrow: these tests never start Spark (the reader runs inside Python workers).
"""

from __future__ import annotations

import bz2
import datetime
import gzip
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql.types import LongType, StringType

from headwater.formats import (
    BINARY_FILE_SCHEMA,
    CorruptFileError,
    NewColumnsFound,
    infer_file,
    read_file,
)
from headwater.formats import FORMATS as SUPPORTED_FORMATS
from tests.formats.helpers import RESCUE, schema, write
from tests.formats.reading import UTC, cloud_opts, fopts, jsonl, read, rescued


def zstd(data: bytes) -> bytes:
    """A zstd frame as the zstd tool writes it."""
    sink = pa.BufferOutputStream()
    with pa.CompressedOutputStream(sink, "zstd") as out:
        out.write(data)
    return sink.getvalue().to_pybytes()


@pytest.mark.parametrize(
    ("suffix", "compress"),
    [(".gz", gzip.compress), (".bz2", bz2.compress), (".zst", zstd), (".zstd", zstd)],
)
def test_compressed_json_is_decompressed_by_extension(tmp_path, suffix, compress):
    path = write(tmp_path, "a.json" + suffix, compress(jsonl({"id": 1}, {"id": 2}).encode()))
    assert read(path, "json", schema(id=LongType())) == [
        {"id": 1, RESCUE: None},
        {"id": 2, RESCUE: None},
    ]


def test_truncated_gzip_raises_corrupt_file_error_naming_the_file(tmp_path):
    data = gzip.compress(jsonl(*[{"id": i} for i in range(5000)]).encode())
    path = write(tmp_path, "cut.json.gz", data[: len(data) // 2])
    with pytest.raises(CorruptFileError, match=r"cut\.json\.gz") as info:
        read(path, "json", schema(id=LongType()))
    assert info.value.path == path


@pytest.mark.parametrize(
    ("name", "fmt", "data"),
    [
        ("a.json", "json", b""),
        ("b.json", "json", b"\n\n"),
        (
            "c.json.gz",
            "json",
            gzip.compress(b"", mtime=0),
        ),  # mtime=0: the same test id in every worker
        ("d.csv", "csv", b""),
        ("e.txt", "text", b""),
    ],
)
def test_empty_file_yields_no_batches(tmp_path, name, fmt, data):
    path = write(tmp_path, name, data)
    sch = schema(value=StringType())
    assert list(read_file(path, sch, fopts(fmt, {}), RESCUE if fmt != "text" else None)) == []


def test_multiline_json_empty_file_yields_no_batches(tmp_path):
    path = write(tmp_path, "a.json", b"  \n")
    assert (
        list(read_file(path, schema(id=LongType()), fopts("json", {"multiline": "true"}), None))
        == []
    )


def test_non_utf8_json_raises_unless_an_encoding_is_given(tmp_path):
    path = write(tmp_path, "latin.json", '{"name": "café"}\n'.encode("latin-1"))
    with pytest.raises(CorruptFileError, match=r"latin\.json.*UTF-8"):
        read(path, "json", schema(name=StringType()))
    rows = read(path, "json", schema(name=StringType()), {"encoding": "latin-1"})
    assert rows == [{"name": "café", RESCUE: None}]


def test_utf16_json_is_transcoded(tmp_path):
    path = write(tmp_path, "a.json", jsonl({"name": "é"}, {"name": "b"}).encode("utf-16"))
    assert read(path, "json", schema(name=StringType()), {"encoding": "UTF-16"}) == [
        {"name": "é", RESCUE: None},
        {"name": "b", RESCUE: None},
    ]


def test_utf8_byte_order_mark_is_dropped(tmp_path):
    path = write(tmp_path, "a.csv", b"\xef\xbb\xbfid,name\n1,a\n")
    assert read(path, "csv", schema(id=LongType(), name=StringType())) == [
        {"id": 1, "name": "a", RESCUE: None}
    ]


def test_batches_hold_at_most_batch_rows(tmp_path):
    path = write(tmp_path, "a.json", jsonl(*[{"id": i} for i in range(1000)]))
    batches = list(read_file(path, schema(id=LongType()), fopts("json", {}), None, batch_rows=300))
    assert [b.num_rows for b in batches] == [300, 300, 300, 100]
    assert pa.Table.from_batches(batches).column("id").to_pylist() == list(range(1000))


# ------------------------------------------------------------------------------ detect_new


def test_detect_new_raises_with_every_new_column_before_yielding_anything(tmp_path):
    path = write(tmp_path, "a.json", jsonl({"id": 1, "ID": 2}, {"id": 2, "b": 1}, {"c": 3}))
    batches = read_file(path, schema(id=LongType()), fopts("json", {}), RESCUE, detect_new=True)
    with pytest.raises(NewColumnsFound) as info:
        next(batches)
    assert info.value.path == path and info.value.columns == ["b", "c"]
    assert "a.json" in str(info.value) and "b, c" in str(info.value)


def test_detect_new_yields_normally_when_no_column_is_new(tmp_path):
    path = write(tmp_path, "a.json", jsonl({"id": 1, "ID": 2}))
    assert read(path, "json", schema(id=LongType()), detect_new=True) == [
        {"id": 1, RESCUE: rescued(path, ID=2)}
    ]


def test_detect_new_on_csv_header_and_parquet_columns(tmp_path):
    csv_path = write(tmp_path, "a.csv", "id,Name,zip\n1,a,b\n")
    with pytest.raises(NewColumnsFound) as info:
        read(csv_path, "csv", schema(id=LongType(), name=StringType()), detect_new=True)
    assert info.value.columns == ["zip"]
    pq_path = str(tmp_path / "a.parquet")
    pq.write_table(pa.table({"id": [1], "new": ["x"]}), pq_path)
    with pytest.raises(NewColumnsFound) as info:
        read(pq_path, "parquet", schema(id=LongType()), detect_new=True)
    assert info.value.columns == ["new"] and info.value.path == pq_path


# ------------------------------------------------------------------------------ binaryFile


def test_binary_file_is_one_row_with_path_time_length_and_content(tmp_path):
    path = write(tmp_path, "img.png", b"\x89PNG\x00\xff")
    os.utime(path, (1_700_000_000.5, 1_700_000_000.5))
    sch = infer_file(path, *cloud_opts("binaryfile"))
    assert sch == BINARY_FILE_SCHEMA
    assert sch.simpleString() == (
        "struct<path:string,modificationTime:timestamp,length:bigint,content:binary>"
    )
    when = datetime.datetime.fromtimestamp(1_700_000_000.5, UTC)
    expected = {"path": path, "modificationTime": when, "length": 6, "content": b"\x89PNG\x00\xff"}
    assert read(path, "binaryfile", sch, rescue=None) == [expected]
    assert read(path, "binaryFile", sch) == [{**expected, RESCUE: None}]  # never rescues
    assert read(path, "binaryfile", schema(length=LongType(), path=StringType()), rescue=None) == [
        {"length": 6, "path": path}
    ]
    empty = write(tmp_path, "empty.bin", b"")
    assert [r["content"] for r in read(empty, "binaryfile", sch, rescue=None)] == [b""]
    with pytest.raises(ValueError, match="value"):
        read(path, "binaryfile", schema(value=StringType()), rescue=None)
    with pytest.raises(FileNotFoundError):
        read(str(tmp_path / "gone.png"), "binaryfile", sch, rescue=None)


# ------------------------------------------------------------------------------ text and misc


def test_text_yields_one_row_per_line_without_line_breaks(tmp_path):
    path = write(tmp_path, "a.txt", "first\r\nsecond\n\n{not json}\nlast")
    assert read(path, "text", schema(value=StringType()), rescue=None) == [
        {"value": "first"},
        {"value": "second"},
        {"value": ""},
        {"value": "{not json}"},
        {"value": "last"},
    ]


def test_text_honours_compression_and_encoding(tmp_path):
    path = write(tmp_path, "a.txt.gz", gzip.compress("café\nb\n".encode("latin-1")))
    sch = schema(value=StringType())
    assert read(path, "text", sch, {"encoding": "latin-1"}, rescue=None) == [
        {"value": "café"},
        {"value": "b"},
    ]
    with pytest.raises(CorruptFileError, match=r"a\.txt\.gz"):
        read(path, "text", sch, rescue=None)


def test_text_rescue_column_is_always_null(tmp_path):
    path = write(tmp_path, "a.txt", "x\n")
    assert read(path, "text", schema(value=StringType())) == [{"value": "x", RESCUE: None}]


def test_unsupported_format_and_bad_options_are_rejected(tmp_path):
    path = write(tmp_path, "a.csv", "a\n1\n")
    assert SUPPORTED_FORMATS == ("json", "csv", "parquet", "text", "avro", "orc", "binaryfile")
    with pytest.raises(ValueError, match="xml"):
        list(read_file(path, schema(a=LongType()), fopts("xml", {}), None))
    with pytest.raises(ValueError, match="sep"):
        list(read_file(path, schema(a=LongType()), fopts("csv", {"sep": "||"}), None))
    with pytest.raises(ValueError, match="klingon"):
        list(read_file(path, schema(a=LongType()), fopts("csv", {"encoding": "klingon"}), None))
    with pytest.raises(ValueError, match=RESCUE):
        list(read_file(path, schema(_rescued_data=StringType()), fopts("csv", {}), RESCUE))


def test_missing_file_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        list(read_file(str(tmp_path / "gone.json"), schema(a=LongType()), fopts("json", {}), None))
