"""The cdc tier: a real change-data-capture chain (PostgreSQL 15 with logical decoding,
Debezium's PostgreSQL connector on Kafka Connect standalone, the KRaft broker of
tests/kafka) feeding pipelines that read it with headwater.debezium and apply it with
AUTO CDC (``bash scripts/tier.sh cdc``). It shares the Kafka tier's virtual environment
(pyspark 4.2.0, Spark's Kafka connector, confluent-kafka, psycopg); the components are
started once per test session (``tests/cdc/chain.py``) and stopped with it.

Where anything is missing (the Kafka tier's venv, psycopg, PostgreSQL, the cdc jars) every
test here is skipped at collection, before anything starts.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest

from tests.cdc.chain import postgres_bin, postgres_server
from tests.jars import tier_jars
from tests.kafka.conftest import CACHE, broker, tier_session  # noqa: F401
from tests.kafka.conftest import REASON as KAFKA_REASON

HERE = Path(__file__).resolve().parent


def missing() -> str | None:
    """Why this tier cannot run here (None: it can)."""
    if KAFKA_REASON is not None:
        return KAFKA_REASON
    if importlib.util.find_spec("psycopg") is None:
        return "psycopg is not installed"
    if postgres_bin() is None:
        return "PostgreSQL (initdb) is not installed"
    for tier in ("cdc", "jdbc-postgres"):
        if not any((CACHE / tier).glob("*.jar")):
            return f"the {tier} jars are not in {CACHE}"
    return None


REASON = missing()


def pytest_collection_modifyitems(config, items):
    if REASON is None:
        return
    skip = pytest.mark.skip(reason=f"{REASON}: run scripts/tier.sh cdc")
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def spark(warehouse):
    """The Kafka tier's session, with PostgreSQL's JDBC driver too (snapshots read
    straight from the database)."""
    session = tier_session(warehouse, ("kafka", "jdbc-postgres"))
    yield session
    session.stop()


@pytest.fixture(scope="session")
def postgres():
    began = time.monotonic()
    with postgres_server() as server:
        print(f"\n[cdc] PostgreSQL on {server.port} ready in {time.monotonic() - began:.1f}s")
        yield server


@pytest.fixture(scope="session")
def connect_classpath() -> str:
    return ":".join(tier_jars("cdc"))
