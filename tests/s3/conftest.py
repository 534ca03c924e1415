"""The object-storage tier: the core behaviour again, on a real local S3 server.

One SeaweedFS per test process; the shared SparkSession is pointed at it the way users
configure Spark for S3 (``spark.hadoop.fs.s3a.*``), and each test gets its own prefix.
"""

from __future__ import annotations

import uuid

import pytest

from tests.s3.seaweedfs import S3Server, seaweedfs


@pytest.fixture(scope="session")
def s3_server() -> S3Server:
    with seaweedfs() as server:
        yield server


@pytest.fixture(scope="session")
def s3_spark(spark, s3_server):
    from headwater.session import install

    for key, value in s3_server.spark_conf().items():
        spark.conf.set(key, value)
    return install(spark)


@pytest.fixture
def s3_root(s3_spark, s3_server) -> str:
    """A fresh ``s3://`` prefix for one test."""
    return f"s3://{s3_server.bucket}/{uuid.uuid4().hex[:12]}"
