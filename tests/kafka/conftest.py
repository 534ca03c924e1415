"""The Kafka tier: Spark's Kafka connector reading a real broker into headwater's Delta
tables.

Runs in its own virtual environment: Spark's connector is published for Spark's exact
version and Maven Central serves Spark artifacts up to 4.2.0, so the tier pins pyspark
4.2.0 (``bash scripts/tier.sh kafka``). The connector's jars (``kafka`` profile of
``jars/pom.xml``) reach Spark through ``spark.jars`` from the shared cache, never through
Ivy; the broker runs from the ``kafka-broker`` jars (``tests/kafka/broker.py``).

Where any of that is missing (the default venv's pyspark, no confluent-kafka, jars not
fetched) every test here is skipped at collection, before a broker or Spark starts.
"""

from __future__ import annotations

import importlib.util
import os
import time
import uuid
from pathlib import Path

import pytest

from tests.jars import tier_jars
from tests.kafka.broker import Broker, kafka_broker

HERE = Path(__file__).resolve().parent
SPARK_VERSION = "4.2."
CACHE = Path(os.environ.get("HEADWATER_JAR_CACHE", Path.home() / ".cache/headwater/jars"))
TIERS = ("kafka", "kafka-broker")


def missing() -> str | None:
    """Why this tier cannot run here (None: it can)."""
    try:
        from importlib.metadata import version

        found = version("pyspark")
    except Exception:
        return "pyspark is not installed"
    if not found.startswith(SPARK_VERSION):
        return f"pyspark is {found}; Spark's Kafka connector here is for {SPARK_VERSION}0"
    if importlib.util.find_spec("confluent_kafka") is None:
        return "confluent-kafka is not installed"
    for tier in TIERS:
        if not any((CACHE / tier).glob("*.jar")):
            return f"the {tier} jars are not in {CACHE}"
    return None


REASON = missing()


def pytest_collection_modifyitems(config, items):
    if REASON is None:
        return
    skip = pytest.mark.skip(reason=f"{REASON}: run scripts/tier.sh kafka")
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def broker() -> Broker:
    """One broker per test session; its start-up time is printed (``pytest -s``)."""
    with kafka_broker(":".join(tier_jars("kafka-broker"))) as started:
        print(f"\n[kafka] broker on {started.bootstrap} ready in {started.startup_seconds:.1f}s")
        yield started


@pytest.fixture(scope="session")
def spark(warehouse):
    """The session as users start it, with the connector's jars from the cache."""
    session = tier_session(warehouse, TIERS[:1])
    yield session
    session.stop()


def tier_session(warehouse, tiers: tuple[str, ...]):
    """A session as users start it, with the jars of ``tiers`` from the cache."""
    import headwater

    began = time.monotonic()
    session = headwater.session(
        "headwater-kafka-tests",
        master="local[2]",
        warehouse=str(warehouse),
        conf={"spark.jars": ",".join(jar for tier in tiers for jar in tier_jars(tier))},
    )
    print(f"\n[kafka] Spark with the {', '.join(tiers)} jars ready in "
          f"{time.monotonic() - began:.1f}s")  # fmt: skip
    return session


@pytest.fixture
def topic(broker) -> str:
    """A fresh topic of 3 partitions."""
    return broker.create_topic(f"t_{uuid.uuid4().hex[:10]}", partitions=3)
