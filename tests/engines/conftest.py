"""The delta-spark tier: headwater's engine and Delta's own Spark connector on one table.

Runs in its own virtual environment (pyspark 4.2.0, delta-spark 4.4.0, headwater; the
jars from the cache): ``bash scripts/tier.sh delta-spark``. Where delta-spark is not
installed (the default venv, pyspark 4.3) every test here is skipped at collection,
before any Spark starts.

How the two engines meet. They cannot share a SparkSession or even a JVM: delta-spark's
SQL extension and ``spark_catalog`` are static settings of the JVM, and headwater registers
its own ``delta`` source and hooks PySpark's reader and writer for the whole Python
process. So neither runs in the test process: each runs in a child process of its own
(``tests/engines/peer.py``, same venv, one SparkSession each, started side by side once per
test session), and the test process, which starts no Spark itself, sends each a
module-level function of ``spark`` to run and compares what comes back. The same function
(SQL on ``delta.`<path>```, the ``delta`` reader) runs on either engine, so a test is
written once and parametrised over the direction: ``writer`` makes the table, ``reader``
is the other engine. The children share the filesystem, so a table is just a path.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

from tests.engines.peer import ENGINES, Peer, running

HERE = Path(__file__).resolve().parent


def delta_spark_missing() -> bool:
    """By its distribution: under pytest, ``import delta`` could find tests/delta."""
    try:
        importlib.metadata.version("delta-spark")
    except importlib.metadata.PackageNotFoundError:
        return True
    return False


MISSING = delta_spark_missing()


def pytest_collection_modifyitems(config, items):
    if not MISSING:
        return
    skip = pytest.mark.skip(
        reason="delta-spark is not installed in this venv: run scripts/tier.sh delta-spark"
    )
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def engines():
    """Both engines' processes, by name."""
    with running("headwater-engines-") as peers:
        yield peers


@pytest.fixture(params=[ENGINES, ENGINES[::-1]], ids=lambda p: f"{p[0]}-writes")
def pair(request, engines) -> tuple[Peer, Peer]:
    """(writer, reader): the engine that makes the table and the other one."""
    return engines[request.param[0]], engines[request.param[1]]
