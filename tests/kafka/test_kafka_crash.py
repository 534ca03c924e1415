"""Exactly once from Kafka into Delta across crashes: a writer process streaming a topic
into a headwater Delta table is SIGKILLed mid-stream, again and again, while records keep
arriving; restarted on the same checkpoint, it must leave every record in the table once.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from tests.jars import tier_jars

REPO = Path(__file__).resolve().parents[2]
KILLS = 5
RATE = 200  # records a second, produced the whole time the writer is killed and restarted


class Producing(threading.Thread):
    """Produces ids 0, 1, 2, ... (keyed by id over every partition) until stopped."""

    def __init__(self, broker, topic: str):
        super().__init__(daemon=True)
        self.producer = broker.producer()
        self.topic = topic
        self.sent = 0
        self.failed: list = []
        self.unsent = -1  # records not acknowledged at the end (set when stopped)
        self.halt = threading.Event()

    def run(self) -> None:
        def delivered(err, _msg):
            if err is not None:
                self.failed.append(err)

        while not self.halt.is_set():
            for _ in range(RATE // 20):
                value = json.dumps({"id": self.sent})
                self.producer.produce(
                    self.topic, value=value, key=str(self.sent), on_delivery=delivered
                )
                self.sent += 1
            self.producer.poll(0)
            time.sleep(0.05)
        self.unsent = self.producer.flush(30)

    def stop(self) -> int:
        self.halt.set()
        self.join(60)
        assert not self.failed and self.unsent == 0, (self.failed, self.unsent)
        return self.sent


def commits(path: Path) -> int:
    return len(list((path / "_delta_log").glob("*.json")))


def writer(args: list[str], log: Path, module: str = "tests.kafka.writer") -> subprocess.Popen:
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", module, *args],
            cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip


def wait_for_commit(proc: subprocess.Popen, path: Path, after: int, log: Path) -> int:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the writer exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
        if commits(path) > after:
            return commits(path)
        time.sleep(0.2)
    pytest.fail(f"the writer committed nothing in 180s:\n{log.read_text()[-3000:]}")


@pytest.mark.slow
def test_sigkill_while_producing_leaves_every_record_once(spark, broker, tmp_path):
    topic = broker.create_topic(f"crash_{uuid.uuid4().hex[:8]}", partitions=3)
    path, log = tmp_path / "events", tmp_path / "writer.log"
    args = [broker.bootstrap, topic, str(path), str(tmp_path / "chk")]
    jars = ",".join(tier_jars("kafka"))
    producing = Producing(broker, topic)
    producing.start()
    began, seen = time.monotonic(), 0
    rng = random.Random(30)
    try:
        for _ in range(KILLS):
            proc = writer([*args, "run", jars], log)
            seen = wait_for_commit(proc, path, seen, log)
            time.sleep(rng.uniform(0.0, 1.5))  # land anywhere in a batch
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    finally:
        total = producing.stop()
    drain = writer([*args, "drain", jars], log)
    assert drain.wait(300) == 0, log.read_text()[-3000:]
    print(f"\n[kafka] {KILLS} kills, {total} records, {time.monotonic() - began:.0f}s")

    table = spark.read.format("delta").load(str(path))
    assert table.count() == total
    assert table.select("partition", "offset").distinct().count() == total
    assert sorted(r.id for r in table.select("id").collect()) == list(range(total))
