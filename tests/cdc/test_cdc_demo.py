"""The change-data-capture demo (``python -m tests.cdc.demo``) runs end to end: its own
PostgreSQL, Kafka Connect and broker, a random workload, and after each round the SCD1
mirror and the SCD2 history's open versions equal the database."""

from __future__ import annotations

from pathlib import Path

from tests.cdc import demo


def test_the_demo_shows_the_mirror_and_history_catching_up(spark, tmp_path: Path):
    said: list[str] = []
    results = demo.run(spark, tmp_path, rounds=1, say=said.append)
    assert results == [True, True], said
    text = "\n".join(said)
    assert "mirror equals the database: yes" in text and "history of id" in text
    assert text.endswith("stopped PostgreSQL, Kafka Connect and the broker")
