"""The components of a real change-data-capture chain for tests and benchmarks: a
PostgreSQL server in a temporary data folder (``initdb``, ``wal_level=logical``, a free
port, its unix socket in the folder) and Kafka Connect in standalone mode running
Debezium's PostgreSQL connector from the cached ``cdc`` jars (``jars/pom.xml``) against
the KRaft broker of ``tests/kafka/broker.py``. Each starts in seconds and is stopped (and
its folder removed) with its context.

PostgreSQL refuses to run as root: when the tests run as root (CI's containers), the data
folder is given to the unprivileged ``nobody`` user and the server's programs run as it
(``setpriv``); otherwise as the current user.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import pwd
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tests.kafka.broker import SERVER_JIT, free_port, stop_process_group, tail

READY_TIMEOUT = 90.0
STOP_TIMEOUT = 20.0
CONNECTOR = "io.debezium.connector.postgresql.PostgresConnector"


def postgres_bin() -> Path | None:
    """The folder of PostgreSQL's server programs: ``initdb`` on the PATH, else Debian's
    ``/usr/lib/postgresql/<version>/bin`` (None: not installed)."""
    found = shutil.which("initdb")
    if found:
        return Path(os.path.realpath(found)).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(versions[-1]).parent if versions else None


def as_server_user(argv: list[str]) -> list[str]:
    """``argv`` run as ``nobody`` when this process is root (PostgreSQL refuses root)."""
    if os.geteuid() != 0:
        return argv
    user = pwd.getpwnam("nobody")
    return ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups",
            *argv]  # fmt: skip


@dataclass
class Postgres:
    """One PostgreSQL server: superuser ``postgres`` without a password (trust), database
    ``postgres``, logical decoding on."""

    workdir: Path
    bindir: Path
    port: int = field(default_factory=free_port)

    @property
    def data(self) -> Path:
        return self.workdir / "data"

    @property
    def log(self) -> Path:
        return self.workdir / "postgres.log"

    @property
    def dsn(self) -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres"

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:postgresql://127.0.0.1:{self.port}/postgres"

    def run(self, program: str, *args: str) -> None:
        done = subprocess.run(as_server_user([str(self.bindir / program), *args]),
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"{program} failed:\n{done.stdout}\n{done.stderr}\n"
                               f"{self.log_tail()}")  # fmt: skip

    def init(self) -> None:
        if os.geteuid() == 0:
            user = pwd.getpwnam("nobody")
            os.chown(self.workdir, user.pw_uid, user.pw_gid)
        self.run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust",
                 "-E", "UTF8", "--no-sync", "--locale=C")  # fmt: skip
        settings = {
            "listen_addresses": "'127.0.0.1'",
            "port": str(self.port),
            "unix_socket_directories": f"'{self.workdir}'",
            "wal_level": "logical",
            "max_wal_senders": "10",
            "max_replication_slots": "10",
            "fsync": "off",  # a test server: its data does not outlive the test
            "synchronous_commit": "off",
            "full_page_writes": "off",
        }
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.writelines(f"{key} = {value}\n" for key, value in settings.items())

    def start(self) -> None:
        self.run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        with contextlib.suppress(Exception):
            self.run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def connect(self):
        """A psycopg connection in autocommit mode (``with conn.transaction():`` groups)."""
        import psycopg

        return psycopg.connect(self.dsn, autocommit=True)

    def execute(self, *statements: str) -> None:
        """The statements in one transaction."""
        with self.connect() as conn, conn.transaction():
            for statement in statements:
                conn.execute(statement)

    def rows(self, query: str) -> list[tuple]:
        with self.connect() as conn:
            return conn.execute(query).fetchall()

    def log_tail(self, lines: int = 30) -> str:
        return tail(self.log, lines)


@contextlib.contextmanager
def postgres_server() -> Iterator[Postgres]:
    bindir = postgres_bin()
    if bindir is None:
        raise RuntimeError("PostgreSQL is not installed: scripts/tier.sh cdc installs it")
    server = Postgres(workdir=Path(tempfile.mkdtemp(prefix="headwater-pg-")), bindir=bindir)
    try:
        server.init()
        server.start()
        yield server
    finally:
        server.stop("immediate")
        shutil.rmtree(server.workdir, ignore_errors=True)


def connector_config(
    name: str, postgres: Postgres, tables: list[str], schemas: bool = True, **extra: str
) -> dict[str, str]:
    """Debezium's PostgreSQL connector as docs/cdc.md recommends it: ``pgoutput``, a slot
    and a publication of its own, truncates sent (``skipped.operations=none``), topics
    ``<name>.<schema>.<table>`` of one partition created by Connect, the JSON converter
    with or without a schema in each message."""
    return {
        "name": name,
        "connector.class": CONNECTOR,
        "tasks.max": "1",
        "database.hostname": "127.0.0.1",
        "database.port": str(postgres.port),
        "database.user": "postgres",
        "database.password": "",
        "database.dbname": "postgres",
        "topic.prefix": name,
        "plugin.name": "pgoutput",
        "slot.name": f"slot_{name}",
        "publication.name": f"pub_{name}",
        "publication.autocreate.mode": "filtered",
        "table.include.list": ",".join(tables),
        "skipped.operations": "none",
        "topic.creation.default.replication.factor": "1",
        "topic.creation.default.partitions": "1",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable": str(schemas).lower(),
        "value.converter.schemas.enable": str(schemas).lower(),
        "poll.interval.ms": "100",
        **extra,
    }


@dataclass
class Connect:
    """Kafka Connect standalone: its offsets in a file of the work folder (kept across a
    restart, as a deployment keeps them), connectors given as properties files at start
    (standalone mode keeps no connector configuration of its own)."""

    classpath: str
    bootstrap: str
    workdir: Path
    port: int = field(default_factory=free_port)
    connectors: dict[str, dict[str, str]] = field(default_factory=dict)
    process: subprocess.Popen | None = None
    startup_seconds: float = 0.0

    @property
    def log(self) -> Path:
        return self.workdir / "connect.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def worker_properties(self) -> Path:
        props = {
            "bootstrap.servers": self.bootstrap,
            "key.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "offset.storage.file.filename": str(self.workdir / "offsets.dat"),
            "offset.flush.interval.ms": "500",
            "listeners": f"http://127.0.0.1:{self.port}",
            "plugin.discovery": "only_scan",
        }
        path = self.workdir / "worker.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        return path

    def start(self) -> None:
        began = time.monotonic()
        files = []
        for name, config in self.connectors.items():
            path = self.workdir / f"{name}.properties"
            path.write_text("".join(f"{k}={v}\n" for k, v in config.items()))
            files.append(str(path))
        argv = ["java", "-Xmx512m", "-Dorg.apache.logging.log4j.level=WARN", "-XX:+UseParallelGC", *SERVER_JIT,
                "-cp", self.classpath, "org.apache.kafka.connect.cli.ConnectStandalone",
                str(self.worker_properties()), *files]  # fmt: skip
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                            start_new_session=True)  # fmt: skip
        self.wait_running()
        self.startup_seconds = time.monotonic() - began

    def status(self, name: str) -> Mapping:
        with urllib.request.urlopen(f"{self.url}/connectors/{name}/status", timeout=2) as got:
            return json.load(got)

    def wait_running(self) -> None:
        """Until every connector's task reports RUNNING (a FAILED task: its trace)."""
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"Kafka Connect exited at start:\n{self.log_tail()}")
            with contextlib.suppress(OSError, ValueError):
                states = [self.status(name) for name in self.connectors]
                tasks = [task for state in states for task in state.get("tasks", [])]
                failed = [task for task in tasks if task["state"] == "FAILED"]
                if failed:
                    raise RuntimeError(f"a connector task failed:\n{failed[0].get('trace')}")
                if len(tasks) == len(self.connectors) and all(
                    task["state"] == "RUNNING" for task in tasks
                ):
                    return
            time.sleep(0.2)
        raise RuntimeError(f"Kafka Connect not running in {READY_TIMEOUT:.0f}s:\n"
                           f"{self.log_tail()}")  # fmt: skip

    def stop(self, kill: bool = False) -> None:
        process, self.process = self.process, None
        stop_process_group(process, kill)

    def log_tail(self, lines: int = 40) -> str:
        return tail(self.log, lines)


@contextlib.contextmanager
def kafka_connect(
    classpath: str, bootstrap: str, connectors: Mapping[str, dict[str, str]]
) -> Iterator[Connect]:
    connect = Connect(classpath=classpath, bootstrap=bootstrap,
                      workdir=Path(tempfile.mkdtemp(prefix="headwater-connect-")),
                      connectors=dict(connectors))  # fmt: skip
    try:
        connect.start()
        yield connect
    finally:
        connect.stop()
        shutil.rmtree(connect.workdir, ignore_errors=True)
