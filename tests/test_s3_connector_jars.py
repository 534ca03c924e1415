"""``headwater.session(s3_connector=True)``'s jars, without Spark: the cached ``s3a`` tier of
pyspark's own Hadoop version, else ``hadoop-aws`` of that version from Maven Central, and
nothing added where the caller already names the connector. (A session started with it:
tests/s3/test_s3_connector_session.py.)"""

from __future__ import annotations

from pathlib import Path

import pyspark
import pytest

from headwater.engines import jars


def test_the_version_is_pysparks_hadoop_clients():
    folder = Path(pyspark.__file__).parent / "jars"
    (client,) = folder.glob("hadoop-client-api-*.jar")
    assert client.name == f"hadoop-client-api-{jars.hadoop_version()}.jar"


def test_cached_jars_are_used_when_they_are_of_that_version(tmp_path, monkeypatch):
    version = jars.hadoop_version()
    tier = tmp_path / "s3a"
    tier.mkdir()
    for name in (f"hadoop-aws-{version}.jar", "bundle-2.35.4.jar"):
        (tier / name).write_bytes(b"")
    monkeypatch.setenv(jars.CACHE_ENV, str(tmp_path))
    conf = jars.s3_connector_conf({"spark.jars": "/opt/mine.jar"})
    assert conf == {
        "spark.jars": f"/opt/mine.jar,{tier}/bundle-2.35.4.jar,{tier}/hadoop-aws-{version}.jar"
    }


@pytest.mark.parametrize("cached", ["none", "another version"])
def test_otherwise_maven_central_serves_hadoop_aws_of_that_version(tmp_path, monkeypatch, cached):
    if cached == "another version":
        (tmp_path / "s3a").mkdir()
        (tmp_path / "s3a" / "hadoop-aws-0.0.1.jar").write_bytes(b"")
    monkeypatch.setenv(jars.CACHE_ENV, str(tmp_path))
    conf = jars.s3_connector_conf({"spark.jars.packages": "g:a:1"})
    assert conf == {
        "spark.jars.packages": f"g:a:1,org.apache.hadoop:hadoop-aws:{jars.hadoop_version()}"
    }


def test_a_connector_the_caller_names_is_left_alone():
    assert (
        jars.s3_connector_conf({"spark.jars.packages": "org.apache.hadoop:hadoop-aws:3.4.1"}) == {}
    )


@pytest.mark.parametrize(
    ("asked", "env", "wanted"),
    [
        (None, "", False),
        (None, "1", True),
        (None, "true", True),
        (False, "1", False),
        (True, "", True),
    ],
)
def test_asked_by_argument_else_by_the_environment(monkeypatch, asked, env, wanted):
    monkeypatch.setenv(jars.S3_CONNECTOR_ENV, env)
    assert jars.s3_connector_wanted(asked) is wanted
