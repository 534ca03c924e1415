"""Hadoop's S3 connector for tests only: the ``s3a`` tier of ``jars/pom.xml`` (hadoop-aws
3.5.0, the Hadoop of pyspark 4.3's own client jars, and the AWS SDK v2 bundle it was built
against), fetched and verified by ``scripts/fetch-jars.sh``. The package never needs them;
users' clusters ship their own connector."""

from __future__ import annotations

from tests.jars import tier_jars


def s3a_conf(endpoint: str) -> dict[str, str]:
    """The connector on Spark's classpath. Nothing else: hadoop-aws of Spark's own Hadoop
    reads the usual ``fs.s3a`` keys (the store's, from ``S3Server.spark_conf``) as given,
    the default credentials chain included. ``endpoint`` is the store's, kept so callers
    need not change when a store needs more."""
    del endpoint
    return {"spark.jars": ",".join(tier_jars("s3a"))}
