"""A local file's spellings (``file:/x``, ``file:///x``, URL-encoded) read as one plain path,
in the one place paths are spelt (Spark-free)."""

from __future__ import annotations

import pytest

from headwater.pipelines.define.spec import load_spec
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
