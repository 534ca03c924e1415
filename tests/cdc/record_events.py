"""Record real Debezium change events, produced by the chain of ``tests/cdc/chain.py``
(PostgreSQL 15, Debezium's PostgreSQL connector on Kafka Connect, the KRaft broker), into
``tests/debezium/events/`` for the main suite's decoding tests, which run without the
chain. Both JSON converter modes (with and without a schema in each message) over one
workload covering the logical types, a TOASTed column left out of an update, a
primary-key update, a delete, a column added mid-stream and a truncate.

    PYTHONPATH=$PWD/src .venv-kafka/bin/python -m tests.cdc.record_events
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.cdc.chain import connector_config, kafka_connect, postgres_server
from tests.jars import tier_jars
from tests.kafka.broker import kafka_broker

OUT = Path(__file__).resolve().parents[1] / "debezium" / "events"
TABLE = """CREATE TABLE types (
    id INT PRIMARY KEY, name TEXT, price NUMERIC(10,2), ratio NUMERIC, big NUMERIC(30,4),
    born DATE, at TIMESTAMP, at_ms TIMESTAMP(3), at_tz TIMESTAMPTZ, clock TIME,
    doc JSONB, uid UUID, payload BYTEA, flag BOOLEAN, small SMALLINT, real_v REAL,
    tags TEXT[], note TEXT)"""
# ~16 KB of text that does not compress below TOAST's threshold: stored out of line.
LONG = "(SELECT string_agg(md5(i::text), '') FROM generate_series(1, 500) i)"
ROWS = [
    f"""INSERT INTO types VALUES (1, 'one', 10.25, 3.14159, -12345678901234567890.1234,
    '2024-01-02', '2024-01-02 03:04:05.123456', '1999-12-31 23:59:59.999',
    '2024-01-02 03:04:05+02', '12:34:56.789012', '{{"a": [1, 2]}}',
    'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '\\xdeadbeef', true, -7, 1.5,
    ARRAY['x', 'y'], {LONG})""",
    """INSERT INTO types (id, name, price, ratio, at) VALUES
    (2, 'two', -0.01, -1E-10, '0001-01-01 00:00:00'),
    (3, 'three', 99999999.99, 123456789012345678, '9999-12-31 23:59:59.999999')""",
]
STREAM = [
    ["UPDATE types SET name = 'uno' WHERE id = 1"],  # note (TOASTed) left out
    ["INSERT INTO types (id, name, price) VALUES (4, 'four', 4.44)",
     "UPDATE types SET price = 5.55 WHERE id = 4"],  # one transaction
    ["UPDATE types SET id = 5 WHERE id = 2"],  # a primary-key update
    ["DELETE FROM types WHERE id = 3"],
    ["ALTER TABLE types ADD COLUMN added NUMERIC(6,3) DEFAULT 1.5",
     "UPDATE types SET added = 2.25 WHERE id = 4"],
    ["TRUNCATE types"],
]  # fmt: skip


def record() -> None:
    with kafka_broker(":".join(tier_jars("kafka-broker"))) as broker, postgres_server() as pg:
        pg.execute(TABLE, *ROWS)
        configs = {
            "withschema": connector_config("withschema", pg, ["public.types"]),
            "noschema": connector_config("noschema", pg, ["public.types"], schemas=False),
        }
        with kafka_connect(":".join(tier_jars("cdc")), broker.bootstrap, configs):
            wait_for(broker, "withschema.public.types", 3)
            for transaction in STREAM:
                pg.execute(*transaction)
            for name in configs:
                events = wait_for(broker, f"{name}.public.types", 3 + 10)
                OUT.mkdir(parents=True, exist_ok=True)
                with (OUT / f"{name}.jsonl").open("w") as out:
                    out.writelines(json.dumps(event) + "\n" for event in events)


def wait_for(broker, topic: str, count: int, timeout: float = 60) -> list[dict]:
    """Every message of the topic (key and value as text, None for a tombstone's value)
    once it holds at least ``count``."""
    from confluent_kafka import Consumer

    consumer = Consumer(broker.client_conf(**{"group.id": f"rec-{time.time()}",
                                              "auto.offset.reset": "earliest"}))  # fmt: skip
    consumer.subscribe([topic])
    got: list[dict] = []
    deadline = time.monotonic() + timeout
    quiet = 0
    while time.monotonic() < deadline and (len(got) < count or quiet < 4):
        message = consumer.poll(0.5)
        if message is None or message.error():
            quiet += 1
            continue
        quiet = 0
        value = message.value()
        got.append({"key": message.key().decode() if message.key() else None,
                    "value": value.decode() if value is not None else None})  # fmt: skip
    consumer.close()
    if len(got) < count:
        raise RuntimeError(f"{topic}: {len(got)} messages after {timeout}s, wanted {count}")
    return got


if __name__ == "__main__":
    record()
