"""Kill -9 against the real chain while the database takes writes: Kafka Connect (Debezium)
SIGKILLed and restarted 5 times, and a continuous pipeline (a driver of its own applying
AUTO CDC SCD1 and SCD2 from the Debezium topic) SIGKILLed 5 times, at random (seeded)
moments, while a writer commits inserts, updates, deletes, multi-row transactions and
primary-key updates. Connect re-sends what it had not recorded as sent; the pipeline
restarts from its checkpoints. Afterwards one more update run to the end leaves the SCD1
target equal to the table row for row and the SCD2 target holding each key's whole
history: re-sent and re-read events change nothing."""

from __future__ import annotations

import datetime as dt
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import pytest

from tests.cdc.chain import connector_config, kafka_connect
from tests.cdc.history import History, assert_targets_match
from tests.cdc.test_cdc_chain import PIPELINE, project, wait_for_messages
from tests.conftest import REPO

KILLS = 5
SEED = 45
COLUMNS = "id, owner, balance, opened"
TABLE = "CREATE TABLE accounts (id INT PRIMARY KEY, owner TEXT, balance NUMERIC(12,2), opened TIMESTAMP)"
SENTINEL = 999_999  # the last write: once its event is on the topic, every write is
# A restarted driver's first commit: 10-40 s on 2 cores; on a loaded CI machine more.
COMMIT_TIMEOUT = 180.0

CHILD = textwrap.dedent(
    """
    import sys, headwater
    from headwater import pipelines
    from tests.jars import tier_jars
    root, warehouse = sys.argv[1:3]
    spark = headwater.session(master="local[1]", warehouse=warehouse, conf={
        "spark.jars": ",".join(tier_jars("kafka")), "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "2"})
    print("STARTED", flush=True)

    def show(event):
        if event.error is not None:
            print("FLOW FAILED", event.flow_name, event.error, file=sys.stderr, flush=True)

    pipelines.run(root, spark, continuous=True, trigger_interval="300 milliseconds", listeners=[show])
    """
)


class Writer(threading.Thread):
    """Commits random (seeded) changes to ``accounts`` until stopped, each recorded in
    ``history``: single-row inserts, updates and deletes, a multi-row transaction that
    also changes one row twice, and primary-key updates. Values never repeat, so every
    update is a change SCD2 must keep as a version."""

    def __init__(self, postgres, history: History, seed: int) -> None:
        super().__init__(name="writer", daemon=True)
        self.postgres, self.history = postgres, history
        self.rng = random.Random(seed)
        self.stop = threading.Event()
        self.next_id = 100
        self.counter = 0
        self.error: BaseException | None = None
        self.transactions = 0

    def value(self) -> str:
        self.counter += 1
        return f"{Decimal(self.counter) + Decimal('0.01') * self.rng.randint(1, 99)}"

    def insert(self) -> str:
        self.next_id += 1
        opened = dt.datetime(2024, 1, 1) + dt.timedelta(microseconds=self.rng.randint(0, 10**12))
        return (f"INSERT INTO accounts VALUES ({self.next_id}, 'o{self.next_id}', "
                f"{self.value()}, '{opened.isoformat()}')")  # fmt: skip

    def update(self, key: int) -> str:
        if self.rng.random() < 0.3:
            self.counter += 1
            return f"UPDATE accounts SET owner = 'w{self.counter}' WHERE id = {key}"
        return f"UPDATE accounts SET balance = {self.value()} WHERE id = {key}"

    def transaction(self) -> list[str]:
        keys = sorted(self.history.current)
        kind = self.rng.random()
        if len(keys) < 4 or kind < 0.3:
            return [self.insert()]
        key = self.rng.choice(keys)
        if kind < 0.6:
            return [self.update(key)]
        if kind < 0.7:
            return [f"DELETE FROM accounts WHERE id = {key}"]
        if kind < 0.8:
            self.next_id += 1
            return [f"UPDATE accounts SET id = {self.next_id} WHERE id = {key}"]
        other = self.rng.choice([k for k in keys if k != key])
        return [self.insert(), self.update(key), self.update(key), self.update(other),
                f"DELETE FROM accounts WHERE id = {other}"]  # fmt: skip

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                self.history.execute(self.postgres, *self.transaction())
                self.transactions += 1
                self.stop.wait(self.rng.uniform(0.02, 0.2))
            self.history.execute(
                self.postgres, f"INSERT INTO accounts VALUES ({SENTINEL}, 'end', 0, now())"
            )
        except BaseException as error:  # reported by the test's thread
            self.error = error


class ConnectKiller(threading.Thread):
    """SIGKILLs Kafka Connect ``KILLS`` times at random moments, restarting it each time
    (its offsets file kept, as a deployment keeps it)."""

    def __init__(self, connect, seed: int) -> None:
        super().__init__(name="connect-killer", daemon=True)
        self.connect = connect
        self.rng = random.Random(seed)
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            for _ in range(KILLS):
                time.sleep(self.rng.uniform(1.0, 6.0))
                self.connect.stop(kill=True)
                self.connect.start()
        except BaseException as error:
            self.error = error


def batches(root: Path) -> int:
    """The micro-batches the SCD2 flow has committed (its stream's checkpoint: a file per
    batch, read from its folder while the drivers write it)."""
    commits = root / "storage" / "checkpoints" / "accounts_history" / "commits"
    return sum(1 for p in commits.iterdir() if p.name.isdigit()) if commits.is_dir() else 0


def run_and_kill(
    root: Path,
    warehouse: str,
    streaming: bool,
    seconds: float,
    log: Path,
    threads: list,
    chain: Callable[[], str],
) -> None:
    """A continuous update in a driver of its own, SIGKILLed ``seconds`` after its session
    is up, or (``streaming``) after its SCD2 flow has committed a batch; a driver that
    ended by itself before: its log. While it waits for a commit, a failure of the writer's
    or the Connect killer's thread (``threads``: a Connect that did not come back sends no
    more events) is raised as the cause, and a wait that runs out shows the driver's log and
    ``chain()`` (the connector's state and Connect's log)."""
    with log.open("ab") as err:
        proc = subprocess.Popen([sys.executable, "-c", CHILD, str(root), warehouse],
                                cwd=str(REPO), stdout=subprocess.PIPE, stderr=err,
                                start_new_session=True)  # fmt: skip
    try:
        assert proc.stdout is not None
        started = b"STARTED" in proc.stdout.readline()
        before = batches(root)
        deadline = time.monotonic() + COMMIT_TIMEOUT
        while started and streaming and batches(root) <= before:
            for thread in threads:
                if thread.error is not None:
                    raise thread.error
            if time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-3000:]
                raise AssertionError(f"no commit to the target in {COMMIT_TIMEOUT:.0f} s "
                                     f"(after {before}); the driver's log:\n{tail}\n"
                                     f"{chain()}")  # fmt: skip
            assert proc.poll() is None, "the driver ended"
            time.sleep(0.1)
        time.sleep(seconds)
        ended = proc.poll()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    if ended is not None or not started:
        tail = log.read_text(errors="replace")[-3000:]
        raise AssertionError(f"the pipeline's driver ended before its kill ({ended}):\n{tail}")


def describe(connect, name: str) -> str:
    """The connector's state and the end of Connect's log, for a wait that ran out."""
    try:
        state = connect.status(name)
    except (OSError, ValueError) as error:
        state = f"no status ({error})"
    return f"the connector: {state}\nConnect's log:\n{connect.log_tail(30)}"


def wait_for_key(broker, topic: str, key: int, timeout: float = 60) -> None:
    """Until a message of ``key`` is on the topic (read from its start)."""
    from confluent_kafka import Consumer

    consumer = Consumer(broker.client_conf(**{"group.id": f"k{uuid.uuid4().hex}",
                                              "auto.offset.reset": "earliest"}))  # fmt: skip
    consumer.subscribe([topic])
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            found = message is not None and not message.error() and message.key()
            if found and f'"id":{key}}}' in found.decode():
                return
    finally:
        consumer.close()
    raise AssertionError(f"no event of id {key} on {topic} after {timeout}s")


@pytest.mark.slow
def test_connect_and_pipeline_killed_while_the_database_takes_writes(
    spark, broker, postgres, connect_classpath, tmp_path: Path
):
    from headwater import pipelines
    from headwater.session import WAREHOUSE_CONF

    spark.conf.set("spark.sql.session.timeZone", "UTC")
    rng = random.Random(SEED)
    name = f"k{uuid.uuid4().hex[:8]}"
    history = History("accounts", COLUMNS)
    history.execute(postgres, TABLE, "INSERT INTO accounts SELECT i, 'o' || i, i * 1.5, "
                    "'2024-01-01'::timestamp + i * interval '1 hour' FROM generate_series(1, 8) i")  # fmt: skip
    topic = f"{name}.public.accounts"
    root = project(tmp_path, name, broker.bootstrap, topic, PIPELINE)
    warehouse = spark.conf.get(WAREHOUSE_CONF)
    config = connector_config(name, postgres, ["public.accounts"])
    writer = Writer(postgres, history, SEED)
    driver_log = tmp_path / "driver.log"
    try:
        with kafka_connect(connect_classpath, broker.bootstrap, {name: config}) as connect:
            wait_for_messages(broker, topic, 8)  # the snapshot: kills come after it
            killer = ConnectKiller(connect, SEED + 1)
            writer.start()
            killer.start()
            for round_ in range(KILLS):  # one kill in the update's start, the others streaming
                streaming = round_ != 2
                seconds = rng.uniform(0.0, 1.5) if streaming else rng.uniform(0.5, 4.0)
                run_and_kill(root, warehouse, streaming, seconds, driver_log, [writer, killer],
                             lambda: describe(connect, name))  # fmt: skip
            failures = [line for line in driver_log.read_text(errors="replace").splitlines()
                        if line.startswith("FLOW FAILED")]  # fmt: skip
            assert not failures, failures[:3]
            killer.join()
            writer.stop.set()
            writer.join()
            for thread in (writer, killer):
                if thread.error is not None:
                    raise thread.error
            wait_for_key(broker, topic, SENTINEL)
        # The killed drivers did apply changes (the kills hit running streams, not only
        # start-ups): the final update finishes their work.
        applied = batches(root)
        assert applied >= KILLS - 1, "the killed drivers applied too little"
        result = pipelines.run(root, spark)
        assert result.ok, [(f.name, f.error) for f in result.failed()]
        print(f"\n[cdc] {writer.transactions} transactions over {len(history.versions)} keys; "
              f"{applied} SCD2 batches committed by the killed drivers")  # fmt: skip
        assert_targets_match(spark, postgres, f"{name}.accounts", f"{name}.accounts_history",
                             history)  # fmt: skip
    finally:
        writer.stop.set()
        postgres.execute("DROP TABLE IF EXISTS accounts")
