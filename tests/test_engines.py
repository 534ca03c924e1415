"""Choosing the Delta engine (Spark-free): the names users give, delta-spark's jars from the
cache or from Maven Central, and a persistent session catalog for a local delta-spark
session. The engine itself runs in the delta-spark tier (tests/engines)."""

from __future__ import annotations

import importlib.metadata

import pytest

from headwater import adapter, engines
from headwater.engines import jars
from headwater.errors import OptionError


@pytest.mark.parametrize(
    "given, engine",
    [(None, "headwater"), ("headwater", "headwater"), ("delta-spark", "delta-spark"),
     ("delta_spark", "delta-spark"), ("DELTA-SPARK", "delta-spark")],
)  # fmt: skip
def test_engine_names(given, engine):
    assert engines.parse(given) == engine


def test_an_unknown_engine_is_refused_naming_both():
    with pytest.raises(OptionError, match="delta_engine='headwater'.*'delta-spark'"):
        engines.parse("iceberg")


def test_delta_routing_names_only_patched_methods():
    keys = {p.key for p in adapter.PATCHES}
    assert keys >= adapter.DELTA_ROUTING
    # what pipelines and cloudFiles need stays hooked on delta-spark
    kept = keys - adapter.DELTA_ROUTING
    assert {"SparkSession.sql", "DataFrameReader.table", "DataStreamReader.load"} <= kept
    assert "DataFrameReader.load" in kept  # (a pipeline's reads by path)


def test_delta_spark_jars_come_from_the_cache_when_it_has_them(tmp_path, monkeypatch):
    monkeypatch.setenv(jars.CACHE_ENV, str(tmp_path))
    folder = tmp_path / "delta-spark"
    folder.mkdir()
    for name in ("delta-spark_2.13-9.9.9.jar", "delta-storage-9.9.9.jar"):
        (folder / name).write_bytes(b"")
    assert [j.rsplit("/", 1)[1] for j in jars.cached_jars("9.9.9")] == [
        "delta-spark_2.13-9.9.9.jar",
        "delta-storage-9.9.9.jar",
    ]
    assert jars.cached_jars("1.0.0") == []  # another version: not these


def test_without_cached_jars_spark_resolves_the_installed_version(tmp_path, monkeypatch):
    monkeypatch.setenv(jars.CACHE_ENV, str(tmp_path))
    try:
        version = importlib.metadata.version("delta-spark")
    except importlib.metadata.PackageNotFoundError:
        with pytest.raises(OptionError, match=r"pip install 'headwater\[delta-spark\]'"):
            jars.session_conf({})
        return
    assert jars.session_conf({"spark.jars.packages": "a:b:1"}) == {
        "spark.jars.packages": f"a:b:1,io.delta:delta-spark_2.13:{version}"
    }
    assert jars.session_conf({"spark.jars": "/x/delta-spark_2.13-4.4.0.jar"}) == {}


def test_a_local_delta_spark_session_keeps_its_names_in_the_warehouse(tmp_path):
    conf = jars.metastore_conf(str(tmp_path), {"spark.driver.extraJavaOptions": "-Xss4m"})
    assert conf["spark.sql.catalogImplementation"] == "hive"
    assert (
        f"databaseName={tmp_path}/metastore_db"
        in conf["spark.hadoop.javax.jdo.option.ConnectionURL"]
    )
    assert conf["spark.driver.extraJavaOptions"].startswith("-Xss4m ")
    # a metastore the user chose, or a remote warehouse: left alone
    assert jars.metastore_conf(str(tmp_path), {"spark.hadoop.hive.metastore.uris": "x"}) == {}
    assert jars.metastore_conf("s3://bucket/w", {}) == {}


def test_a_metastore_whose_creation_a_crash_cut_short_is_set_aside(tmp_path):
    half = tmp_path / "metastore_db"
    (half / "seg0").mkdir(parents=True)  # what Derby leaves when killed while creating
    jars.metastore_conf(str(tmp_path), {})
    assert not half.exists()
    assert [p.name.split("-")[0] for p in tmp_path.iterdir()] == ["metastore_db.unfinished"]
    whole = tmp_path / "metastore_db"
    whole.mkdir()
    (whole / "service.properties").write_text("")  # a created database stays
    jars.metastore_conf(str(tmp_path), {})
    assert whole.exists()
