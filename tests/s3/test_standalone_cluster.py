"""The README's demo pipeline on a Spark standalone cluster started from the pip install
(a master and two one-core workers), its tables on the local S3 server, the store's keys
given only as Spark configuration."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pyspark
import pytest

from headwater import storage
from tests.conftest import REPO


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def standalone(tmp_path):
    """``spark://127.0.0.1:<port>`` with two workers registered."""
    home = Path(pyspark.__file__).parent
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_LOG_DIR": str(tmp_path / "logs"), "SPARK_WORKER_DIR": str(tmp_path / "work")}  # fmt: skip
    port, ui = _free_port(), _free_port()
    spark_class = str(home / "bin" / "spark-class")
    master = f"spark://127.0.0.1:{port}"
    procs = [
        subprocess.Popen(
            [
                spark_class,
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(ui),
            ],  # fmt: skip
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    ]
    time.sleep(2)
    for _ in range(2):
        procs.append(
            subprocess.Popen(
                [
                    spark_class,
                    "org.apache.spark.deploy.worker.Worker",
                    master,
                    "--cores",
                    "1",
                    "--memory",
                    "1536m",
                    "--host",
                    "127.0.0.1",
                    "--webui-port",
                    "0",
                ],  # fmt: skip
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as r:
                    if json.load(r).get("aliveworkers") == 2:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("the standalone master did not see two workers in 90 s")
            time.sleep(0.5)
        yield master
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()


@pytest.mark.slow
def test_demo_pipeline_on_a_standalone_cluster_with_tables_on_s3(
    standalone, s3_server, s3_root, tmp_path
):
    warehouse = f"{s3_root}/warehouse"
    conf = {
        **s3_server.spark_conf(),
        "spark.driver.host": "127.0.0.1",
        "spark.executor.memory": "1g",
        "spark.executor.cores": "1",
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    args = [sys.executable, "-m", "headwater.cli", "demo", "--output", str(tmp_path / "demo"),
            "--master", standalone, "--warehouse", warehouse]  # fmt: skip
    for key, value in conf.items():
        args += ["--conf", f"{key}={value}"]
    proc = subprocess.run(args, cwd=str(REPO), env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    assert "== gold.hourly_sales:" in proc.stdout
    tables = {f.path.split("/warehouse/", 1)[1].split("/_delta_log/")[0]
              for f in storage.list_files(warehouse) if "/_delta_log/" in f.path}  # fmt: skip
    assert {"silver.db/orders", "gold.db/hourly_sales"} <= tables
