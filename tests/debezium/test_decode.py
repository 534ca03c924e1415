"""headwater.debezium.changes over real Debezium events (recorded from PostgreSQL 15 and
Debezium 3.6.1 by tests/cdc/record_events.py, both JSON converter modes): every logical
type decoded, the row image of each operation, the ordering, TOAST values Debezium left
out, tombstones skipped, a column added mid-stream. The chain itself runs in the cdc tier
(tests/cdc)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest

from headwater import debezium
from headwater.errors import OptionError

EVENTS = Path(__file__).resolve().parent / "events"
NOTE = "".join(__import__("hashlib").md5(str(i).encode()).hexdigest() for i in range(1, 501))
DDL = (
    "id INT, name STRING, price DECIMAL(10,2), ratio DECIMAL(38,18), big DECIMAL(30,4), "
    "born DATE, at TIMESTAMP_NTZ, at_ms TIMESTAMP_NTZ, at_tz TIMESTAMP, clock STRING, "
    "doc STRING, uid STRING, payload BINARY, flag BOOLEAN, small SMALLINT, real_v FLOAT, "
    "tags ARRAY<STRING>, note STRING, added DECIMAL(6,3)"
)


def kafka_frame(spark, name: str):
    """The recorded messages as Spark's Kafka source gives them (one partition)."""
    rows = [
        (
            None if e["key"] is None else bytearray(e["key"].encode()),
            None if e["value"] is None else bytearray(e["value"].encode()),
            f"{name}.public.types", 0, offset, dt.datetime(2026, 1, 1), 0,
        )
        for offset, e in enumerate(map(json.loads, (EVENTS / f"{name}.jsonl").open()))
    ]  # fmt: skip
    schema = ("key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT, "
              "timestamp TIMESTAMP, timestampType INT")  # fmt: skip
    return spark.createDataFrame(rows, schema)


@pytest.fixture(scope="module")
def decoded(spark):
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    with_schema = debezium.changes(kafka_frame(spark, "withschema"))
    without = debezium.changes(kafka_frame(spark, "noschema"), schema=DDL, millis_columns=["at_ms"])
    return with_schema, without


def test_both_converter_modes_give_the_same_typed_rows(decoded):
    with_schema, without = decoded
    # Without a schema a time column is its raw count (microseconds here), and each
    # connector's slot starts at its own position.
    assert with_schema.schema.simpleString() == without.schema.simpleString()
    rest = [c for c in with_schema.columns if c not in ("clock", "_sequence")]
    assert with_schema.select(rest).collect() == without.select(rest).collect()
    assert [r.clock for r in without.collect()][:2] == ["45296789012", None]


def test_logical_types_are_decoded(decoded):
    rows = decoded[0].collect()
    first = rows[0].asDict()
    assert first["price"] == Decimal("10.25")
    assert first["ratio"] == Decimal("3.14159")
    assert first["big"] == Decimal("-12345678901234567890.1234")
    assert first["born"] == dt.date(2024, 1, 2)
    assert first["at"] == dt.datetime(2024, 1, 2, 3, 4, 5, 123456)
    assert first["at_ms"] == dt.datetime(1999, 12, 31, 23, 59, 59, 999000)
    assert first["at_tz"] == dt.datetime(2024, 1, 2, 1, 4, 5)  # UTC session
    assert first["clock"] == "12:34:56.789012"
    assert json.loads(first["doc"]) == {"a": [1, 2]}
    assert first["uid"] == "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
    assert bytes(first["payload"]) == bytes.fromhex("deadbeef")
    assert (first["flag"], first["small"], first["real_v"]) == (True, -7, 1.5)
    assert first["tags"] == ["x", "y"] and first["note"] == NOTE
    two, three = rows[1].asDict(), rows[2].asDict()
    assert (two["price"], two["ratio"]) == (Decimal("-0.01"), Decimal("-1E-10"))
    assert two["at"] == dt.datetime(1, 1, 1)
    assert three["price"] == Decimal("99999999.99")
    assert three["ratio"] == Decimal("123456789012345678")
    assert three["at"] == dt.datetime(9999, 12, 31, 23, 59, 59, 999999)


def test_operations_row_images_order_and_unavailable_values(decoded):
    rows = decoded[0].collect()
    ops = [(r.id, r._op) for r in rows]
    # tombstones skipped; a delete's row image is its before (the key alone under
    # REPLICA IDENTITY DEFAULT); the truncate has no row.
    assert ops == [(1, "r"), (2, "r"), (3, "r"), (1, "u"), (4, "c"), (4, "u"), (2, "d"),
                   (5, "c"), (3, "d"), (4, "u"), (None, "t")]  # fmt: skip
    sequences = [(r._sequence.phase, r._sequence.lsn) for r in rows]
    assert sequences == sorted(sequences)  # snapshot first, then the log's order
    toast = rows[3]
    assert toast._unavailable == ["note"] and toast.note is None and toast.name == "uno"
    assert all(r._unavailable == [] for i, r in enumerate(rows) if i != 3)
    assert rows[9].added == Decimal("2.250") and rows[0].added is None
    assert all(r._ts_ms > 1_700_000_000_000 for r in rows)


def test_a_schemaless_topic_needs_a_schema_and_modes_are_checked(spark):
    frame = kafka_frame(spark, "noschema")
    with pytest.raises(OptionError, match="schema="):
        debezium.changes(frame)
    with pytest.raises(OptionError, match="decimal.handling.mode"):
        debezium.changes(frame, schema=DDL, decimal_handling_mode="exact")
