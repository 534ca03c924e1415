"""Spellings of a location, in the one place paths are spelt (Spark-free): a local file's
(``file:/x``, ``file:///x``, URL-encoded) read as one plain path, the URIs Hadoop and Spark
give files, logged URIs decoded and placed under a table's root, the table's log folder."""

from __future__ import annotations

import pytest

from headwater.pipelines.define.spec import load_spec
from headwater.storage import paths
from headwater.storage.paths import local_path


def test_file_uris_become_plain_paths_and_other_paths_stay():
    assert local_path("file:/data/t/part-0.parquet") == "/data/t/part-0.parquet"
    assert local_path("file:///data/t/a%20b.parquet") == "/data/t/a b.parquet"
    assert local_path("file://localhost/data/t") == "/data/t"
    assert local_path("/data/t") == "/data/t"
    assert local_path("relative/t") == "relative/t"
    assert local_path("s3a://bucket/t/a%20b") == "s3a://bucket/t/a%20b"


@pytest.mark.parametrize("prefix", ["file:", "file://", ""])
def test_a_pipeline_storage_given_as_a_file_uri_is_that_folder(tmp_path, prefix):
    store = tmp_path / "store"
    (tmp_path / "spark-pipeline.yml").write_text(f"name: x\nstorage: {prefix}{store}\n")
    assert load_spec(tmp_path).storage_path == str(store)


def test_hadoop_uris_name_local_files_by_file_colon_and_leave_other_stores_alone():
    assert paths.hadoop_uri("/data/t/p=a b/f.parquet") == "file:/data/t/p=a b/f.parquet"
    assert paths.hadoop_uri("file:///data/t/f.parquet") == "file:/data/t/f.parquet"
    assert paths.hadoop_uri("s3a://bucket/t/f.parquet") == "s3a://bucket/t/f.parquet"


def test_spark_spells_a_local_file_uri_two_ways_and_any_other_one_way():
    both = ["file:///data/f.parquet", "file:/data/f.parquet"]
    assert paths.file_uri_spellings(both[0]) == both
    assert paths.file_uri_spellings(both[1]) == both[::-1]
    assert paths.file_uri_spellings("s3://b/f.parquet") == ["s3://b/f.parquet"]
    assert paths.file_uri_spellings("file://host/f.parquet") == ["file://host/f.parquet"]


def test_logged_uris_decode_to_one_spelling_and_to_a_place_under_the_root(tmp_path):
    assert paths.decoded_uri("file:/data/t%20x/p=a%2520b/f") == "/data/t x/p=a%20b/f"
    assert paths.decoded_uri("file:///data/t/f") == "/data/t/f"
    assert paths.decoded_uri("s3n://b/t/a%20b") == "s3://b/t/a b"
    assert paths.relative_under("/data/t x/p/f", "file:///data/t x/") == "p/f"
    assert paths.relative_under("s3://b/t/p=1/f", "s3a://b/t") == "p=1/f"
    assert paths.relative_under("s3://b/other/f", "s3://b/t") is None
    assert paths.relative_under("/data/tt/f", "/data/t") is None
    real = tmp_path / "real"
    (real / "p").mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    assert paths.relative_under(str(real / "p" / "f"), str(tmp_path / "link")) == "p/f"


def test_a_table_log_folder_is_named_in_one_place():
    assert paths.delta_log_dir("s3://b/t/") == "s3://b/t/_delta_log"
    assert paths.delta_log_dir("/data/t") == f"/data/t/{paths.DELTA_LOG_DIR}"
