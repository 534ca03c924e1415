"""A real single-node Kafka broker (KRaft, broker and controller in one JVM) for tests and
benchmarks, started from the cached ``kafka-broker`` jars (``jars/pom.xml``) with
``java -cp``: no Docker, no download at test time.

Clients are confluent-kafka's (librdkafka inside the wheel): topics are made and records
produced from the test process without a JVM or a Spark job per message, so a test can
produce continuously while a Spark writer in another process is killed and restarted.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

CLIENT_LOG = logging.getLogger("headwater.tests.kafka")
READY_TIMEOUT = 90.0
STOP_TIMEOUT = 20.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cluster_id() -> str:
    """A KRaft cluster id: a UUID in URL-safe base64 without padding (what
    ``kafka-storage random-uuid`` prints); never starting with '-', which the tool would
    read as a flag."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def server_properties(port: int, controller: int, log_dir: Path) -> str:
    """The minimal KRaft settings of one node, plus what makes tests quick: internal topics
    of one replica, no rebalance delay, retention checked every second (a test deleting
    records or shortening ``retention.ms`` sees the effect promptly)."""
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.bootstrap.servers": f"127.0.0.1:{controller}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dir": str(log_dir),
        "num.partitions": "1",
        "auto.create.topics.enable": "false",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        "log.retention.check.interval.ms": "1000",
    }
    return "".join(f"{key}={value}\n" for key, value in props.items())


def stop_process_group(process: subprocess.Popen | None, kill: bool = False) -> None:
    """SIGTERM (a clean shutdown) or SIGKILL to a process started in a session of its
    own, and its children; killed anyway after ``STOP_TIMEOUT``."""
    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGKILL if kill else signal.SIGTERM)
    try:
        process.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=STOP_TIMEOUT)


def tail(path: Path, lines: int = 40) -> str:
    """The last lines of a log file ('' when there is none yet)."""
    text = path.read_text(errors="replace") if path.exists() else ""
    return "\n".join(text.splitlines()[-lines:])


# The test servers' JVMs (this broker, Kafka Connect): C1 only, with the code cache tiered
# compilation has (scripts/test-jvm-opts.sh says why); they move little data, C2 would
# compile for nothing.
SERVER_JIT = ("-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=240m")


@dataclass
class Broker:
    """One broker process; ``stop()`` and ``start()`` again keep its ports and data, so a
    test can restart it under a running stream."""

    classpath: str
    workdir: Path
    port: int = field(default_factory=free_port)
    controller: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None
    startup_seconds: float = 0.0  # the last start, from `java` to answering metadata

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def config(self) -> Path:
        return self.workdir / "server.properties"

    @property
    def log(self) -> Path:
        return self.workdir / "broker.log"

    def java(self, main: str, *args: str) -> list[str]:
        return [
            "java",
            "-Xmx512m",
            "-XX:+UseParallelGC",
            *SERVER_JIT,
            "-cp",
            self.classpath,
            main,
            *args,
        ]

    def format(self) -> None:
        """Write the properties and format the log dir (once, before the first start)."""
        self.config.write_text(server_properties(self.port, self.controller, self.workdir / "data"))
        done = subprocess.run(
            self.java("kafka.tools.StorageTool", "format", "-t", cluster_id(), "-c",
                      str(self.config), "--standalone"),
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"kafka storage format failed:\n{done.stdout}\n{done.stderr}")

    def start(self) -> None:
        began = time.monotonic()
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                self.java("kafka.Kafka", str(self.config)),
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        self.wait_ready()
        self.startup_seconds = time.monotonic() - began

    def wait_ready(self) -> None:
        """Until the broker answers a metadata request listing itself (the listener is
        bound a little before the broker can serve)."""
        admin = None
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"the Kafka broker exited at start:\n{self.log_tail()}")
            # A client is made only once the port accepts connections: librdkafka logs
            # every refused connection on stderr.
            with contextlib.suppress(Exception):
                if admin is None:
                    socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                    admin = self.admin()
                if admin.list_topics(timeout=1).brokers:
                    return
            time.sleep(0.1)
        raise RuntimeError(f"the Kafka broker was not ready in {READY_TIMEOUT:.0f}s:\n"
                           f"{self.log_tail()}")  # fmt: skip

    def stop(self, kill: bool = False) -> None:
        """SIGTERM (a clean shutdown) or SIGKILL; killed anyway after ``STOP_TIMEOUT``."""
        process, self.process = self.process, None
        stop_process_group(process, kill)

    def restart(self, kill: bool = False) -> float:
        """Stop the broker (SIGTERM, or SIGKILL as a crash) and start it again on the same
        ports, properties and log dir, as a supervisor restarting it does; returns the
        seconds it was away (from the stop to answering metadata again)."""
        began = time.monotonic()
        self.stop(kill=kill)
        self.start()
        return time.monotonic() - began

    def log_tail(self, lines: int = 40) -> str:
        return tail(self.log, lines)

    # Clients -----------------------------------------------------------------------------

    def client_conf(self, **extra) -> dict:
        """A client's settings; librdkafka's own log lines (a retry while the broker loads
        its coordinators) go to Python's logging, which pytest captures, not to stderr."""
        return {"bootstrap.servers": self.bootstrap, "logger": CLIENT_LOG, **extra}

    def admin(self):
        from confluent_kafka.admin import AdminClient

        return AdminClient(self.client_conf())

    def create_topic(self, name: str, partitions: int = 3, **config: str) -> str:
        """A new topic (``config``: topic settings such as ``retention.ms``); waits until
        every partition has a leader."""
        from confluent_kafka.admin import NewTopic

        topic = NewTopic(name, num_partitions=partitions, replication_factor=1, config=config)
        admin = self.admin()  # alive until its futures resolve
        admin.create_topics([topic])[name].result(timeout=30)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            found = admin.list_topics(topic=name, timeout=5).topics.get(name)
            if (
                found
                and len(found.partitions) == partitions
                and all(p.leader >= 0 for p in found.partitions.values())
            ):
                return name
            time.sleep(0.1)
        raise RuntimeError(f"topic {name} has no leader after 30s")

    def producer(self):
        """An idempotent producer acknowledging on all replicas (no duplicates from its
        own retries, so a count in a test is the count produced)."""
        from confluent_kafka import Producer

        return Producer(self.client_conf(**{"enable.idempotence": True, "linger.ms": 5}))

    def produce(
        self,
        topic: str,
        values: Iterable[bytes | str],
        key=None,
        partition: int | None = None,
        headers: list[tuple[str, bytes]] | None = None,
        timestamp: Callable[[int], int] | None = None,
    ) -> int:
        """Produce ``values`` and wait until every one is acknowledged; returns how many.
        ``key``: None, one key for all, or a function of the value's index; ``timestamp``:
        a function of the index giving the record's create time in epoch milliseconds
        (default: the time it is produced)."""
        producer = self.producer()
        errors: list = []

        def delivered(err, _msg):
            if err is not None:
                errors.append(err)

        count = 0
        for i, value in enumerate(values):
            extra = {} if partition is None else {"partition": partition}
            if timestamp is not None:
                extra["timestamp"] = timestamp(i)
            producer.produce(
                topic, value=value, key=key(i) if callable(key) else key,
                headers=headers, on_delivery=delivered, **extra,
            )  # fmt: skip
            producer.poll(0)
            count += 1
        if producer.flush(30) != 0 or errors:
            raise RuntimeError(f"produce to {topic} failed: {errors or 'not all delivered'}")
        return count

    def delete_records(self, topic: str, before: dict[int, int]) -> None:
        """Remove every record of each partition below its offset in ``before`` (what
        retention does, on demand)."""
        from confluent_kafka import TopicPartition

        wanted = [TopicPartition(topic, p, offset) for p, offset in before.items()]
        admin = self.admin()
        for future in admin.delete_records(wanted).values():
            future.result(timeout=30)


@contextlib.contextmanager
def kafka_broker(classpath: str) -> Iterator[Broker]:
    """A formatted and started broker in a fresh temporary folder; stopped (killed if it
    does not stop) and the folder removed at the end."""
    workdir = Path(tempfile.mkdtemp(prefix="headwater-kafka-"))
    broker = Broker(classpath=classpath, workdir=workdir)
    try:
        broker.format()
        broker.start()
        yield broker
    finally:
        broker.stop()
        shutil.rmtree(workdir, ignore_errors=True)
