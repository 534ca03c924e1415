"""Bad COPY INTO statements fail with an error naming the problem, and write nothing."""

from __future__ import annotations

import os

import pytest

from headwater.copyinto import CopyIntoError, copy_into
from headwater.errors import NotADeltaTableError, TableNotFoundError
from tests.copyinto.helpers import land, rows, table, versions


@pytest.fixture
def setup(spark, tmp_path):
    src, path = tmp_path / "src", tmp_path / "t"
    land(src, 2)
    target = table(spark, path)
    yield src, path, target
    assert rows(path) == [] and versions(path) == 0  # nothing written, nothing committed


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"file_format": "XML"}, r"Unknown FILEFORMAT 'XML'.*CSV, JSON, PARQUET"),
        ({"file_format": "jsn"}, r"Did you mean JSON"),
        ({"files": ["a"], "pattern": "*"}, r"FILES and PATTERN cannot be used together"),
        ({"files": [f"f{i}" for i in range(1001)]}, r"1001 files; at most 1000"),
        ({"files": []}, r"lists no file"),
        ({"format_options": {"hedaer": "true"}}, r"Unknown option 'hedaer'.*Did you mean 'header'"),
        ({"format_options": {"multline": "true"}}, r"Did you mean 'multiLine'"),
        ({"copy_options": {"forse": "true"}}, r"Unknown option 'forse'.*Did you mean 'force'"),
        ({"copy_options": {"mergeSchema": "maybe"}}, r"'mergeSchema' must be true or false"),
        ({"format_options": {"samplingRatio": "0.5"}}, r"'samplingRatio' is not supported"),
        ({"format_options": {"dateFormat": "EEE yyyy"}}, r"'dateFormat' = 'EEE yyyy' uses 'EEE'"),
        ({"file_format": "JSON", "format_options": {"header": "true"}}, r"does not apply"),
        ({"format_options": {"mode": "LOOSE"}}, r"FAILFAST, PERMISSIVE or DROPMALFORMED"),
        ({"validate": "some"}, r"VALIDATE takes ALL or a positive number"),
        ({"validate": 0}, r"VALIDATE takes ALL"),
        ({"by_position": True, "file_format": "JSON"}, r"BY POSITION applies to headerless CSV"),
        ({"by_position": True, "columns": ["id"]}, r"either BY POSITION or a column list"),
        ({"select": ["_c0"], "columns": ["id"]}, r"cannot be combined"),
        ({"columns": ["id", "ID"]}, r"more than once"),
        ({"files": ["nope.csv"]}, r"FILES names 1 file\(s\) that do not exist.*nope\.csv"),
        ({"columns": ["id", "zzz"]}, r"zzz, which the table does not have"),
        ({"pattern": "f[0"}, r"unclosed"),
    ],
)
def test_bad_statement_is_refused_by_name(spark, setup, kwargs, match):
    src, _, target = setup
    args = {"file_format": "CSV", **kwargs}
    fmt = args.pop("file_format")
    with pytest.raises(CopyIntoError, match=match):
        copy_into(spark, target, str(src), fmt, **args)


def test_missing_source_path(spark, setup, tmp_path):
    _, _, target = setup
    with pytest.raises(CopyIntoError, match=r"source path .*nowhere does not exist"):
        copy_into(spark, target, str(tmp_path / "nowhere"), "JSON")


def test_unknown_table_and_non_delta_target(spark, setup, tmp_path):
    src, _, _ = setup
    with pytest.raises(TableNotFoundError, match=r"'copyinto_bad.missing' not found.*CREATE TABLE"):
        copy_into(spark, "copyinto_bad.missing", str(src), "JSON")
    empty = tmp_path / "empty"
    os.makedirs(empty)
    with pytest.raises(TableNotFoundError, match=r"is not a Delta table"):
        copy_into(spark, f"delta.`{empty}`", str(src), "JSON")
    with pytest.raises(NotADeltaTableError, match=r"no _delta_log"):
        copy_into(spark, f"delta.`{src}`", str(src), "JSON")


def test_rescue_column_not_in_table_needs_merge_schema(spark, setup):
    src, _, target = setup
    with pytest.raises(Exception, match=r"_rescued_data.*COPY_OPTIONS\('mergeSchema'='true'\)"):
        copy_into(
            spark, target, str(src), "JSON", format_options={"rescuedDataColumn": "_rescued_data"}
        )
