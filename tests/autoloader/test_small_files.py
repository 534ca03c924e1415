"""A task's small JSON files are parsed together (one parse, not one per file) and give the
rows, per-file columns and errors reading them one by one gives."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest
from pyspark.sql.types import LongType, StringType, StructField, StructType

from headwater.autoloader import file_metadata, small_files
from headwater.autoloader.options import CloudFilesOptions
from headwater.autoloader.source import (
    CloudFilesStreamReader,
    FilesPartition,
    resolve_schema,
)

SCHEMA = StructType(
    [
        StructField("id", LongType()),
        StructField("name", StringType()),
        StructField("day", StringType()),
    ]
)


def _reader(land: str, tmp_path, rescue: bool = False, **options) -> CloudFilesStreamReader:
    opts = CloudFilesOptions.parse(
        {
            "cloudFiles.format": "json",
            "cloudFiles.schemaLocation": str(tmp_path / "ck"),
            "headwater.fileMetadataColumn": "source",
            "cloudFiles.partitionColumns": "day",
            **options,
        },
        user_schema=True,
    )
    rescued = [StructField("_rescued_data", StringType())] if rescue else []
    schema = StructType([*SCHEMA.fields, *rescued, file_metadata.field("_metadata")])
    return CloudFilesStreamReader(land, opts, resolve_schema(land, opts, schema))


def _files(land: str, records: dict[str, list]) -> list[tuple[str, int, int]]:
    files = []
    for name, lines in records.items():
        path = os.path.join(land, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines))
        st = os.stat(path)
        files.append((path, st.st_size, st.st_mtime_ns // 1_000_000))
    return files


def _one_by_one_and_together(reader, files) -> tuple[pa.Table, pa.Table]:
    alone = [b for f in files for b in reader.read(FilesPartition([f]))]
    together = list(reader.read(FilesPartition(files)))
    return pa.Table.from_batches(alone), pa.Table.from_batches(together)


def test_small_files_read_together_equal_the_files_read_one_by_one(tmp_path):
    land = str(tmp_path / "land")
    files = _files(
        land,
        {
            "day=1/a.json": [{"id": 1, "name": "a"}],
            "day=1/b.json": [{"id": 2}, "", {"id": 3, "name": "b"}],  # a blank line
            "day=2/c.json": [],  # empty
            "day=2/d.json": ["\ufeff" + json.dumps({"id": 4, "name": "é"})],  # BOM, UTF-8
        },
    )
    reader = _reader(land, tmp_path)
    assert small_files.applies(reader.opts.format_options, files)
    assert small_files.read_together(
        files, reader.resolved.data, reader.opts.format_options, None, False
    )
    alone, together = _one_by_one_and_together(reader, files)
    assert together.equals(alone)
    assert together.column("id").to_pylist() == [1, 2, 3, 4]
    assert together.column("day").to_pylist() == ["1", "1", "1", "2"]
    names = [s["file_name"] for s in together.column(reader.resolved.hidden).to_pylist()]
    assert names == ["a.json", "b.json", "b.json", "d.json"]
    paths = [s["file_path"] for s in together.column("source").to_pylist()]
    assert paths == [files[0][0], files[1][0], files[1][0], files[3][0]]


@pytest.mark.parametrize(
    "bad",
    [
        {"id": "not a number"},  # rescued: the rescue column names the file
        '{"id": 7',  # malformed
        {"id": 7, "extra": 1},  # a field the schema lacks
    ],
)
def test_a_file_that_needs_care_is_read_one_by_one_naming_its_file(tmp_path, bad):
    land = str(tmp_path / "land")
    files = _files(
        land, {"day=1/a.json": [{"id": 1}], "day=1/b.json": [bad], "day=1/c.json": [{"id": 3}]}
    )
    reader = _reader(land, tmp_path, rescue=True)
    fmt = reader.opts.format_options
    assert (
        small_files.read_together(files, reader.resolved.data, fmt, reader.resolved.rescue, False)
        is None
    )
    alone, together = _one_by_one_and_together(reader, files)
    assert together.equals(alone)
    rescued = [r for r in together.column(reader.resolved.rescue).to_pylist() if r]
    assert len(rescued) == 1 and files[1][0] in rescued[0]
