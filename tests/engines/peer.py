"""One Delta engine in a Python process of its own, driven by the test process.

headwater's engine and delta-spark cannot share a SparkSession, nor a JVM: delta-spark's
SQL extension and catalog are static settings of the JVM's sessions, and headwater
registers its own ``delta`` data source and hooks PySpark's reader and writer for the whole
process. So each engine runs here, in a child of the test process (same virtual
environment), started once per test session: ``Peer.start("headwater" | "delta-spark")``.

The test process sends a module-level function of a test module (by file and name) and
plain arguments; the child calls it with its SparkSession and sends back the result, rows
turned into tuples, or the error it raised as its class names and first line (for an error
of the JVM's, its Java class name is the last of them and the message is the JVM's). Tests write
each operation once, as a function of ``spark``, and run it on either engine.

Run as a script (``python tests/engines/peer.py <engine> <warehouse> <fd>
[through-headwater]``) it is the child.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection, Pipe
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
ENGINES = ("headwater", "delta-spark")
# delta-spark's classes in Spark's configuration: its SQL (MERGE, DESCRIBE HISTORY, ...)
# and the catalog that makes `delta` tables delta-spark's.
DELTA_SPARK_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}
START_TIMEOUT = 300  # seconds for a child's SparkSession (two JVMs start on two cores)
CALL_TIMEOUT = 600


class PeerError(Exception):
    """An error an engine raised: ``kinds`` are its exception's class names (most
    derived first), ``message`` its first line."""

    def __init__(self, engine: str, kinds: list[str], message: str):
        super().__init__(f"{engine}: {kinds[0]}: {message}")
        self.engine, self.kinds, self.message = engine, kinds, message


class Peer:
    """The test process's handle on one engine's child process."""

    def __init__(self, name: str, proc: subprocess.Popen, conn: Connection, log: Path):
        self.name, self._proc, self._conn, self._log = name, proc, conn, log
        self.version = ""

    @classmethod
    def start(cls, name: str, workdir: Path, through_headwater: bool = False) -> Peer:
        """Start the engine's child; :meth:`wait_ready` waits for its SparkSession (so two
        peers start side by side). ``through_headwater``: delta-spark's session is built by
        ``headwater.session(delta_engine="delta-spark")``, as headwater's users on that
        engine build it (Auto Loader, COPY INTO and pipelines on top), rather than by
        delta-spark alone."""
        assert name in ENGINES, name
        ours, theirs = Pipe()
        log = workdir / f"{name}.log"
        # (a peer's driver reads the tests' JVM options in SPARK_SUBMIT_OPTS, as every
        # test driver does: tests/conftest.py)
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
            # Python workers of this venv on both engines: headwater's cloudFiles source
            # runs in delta-spark's workers too.
            "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
        }
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    __file__,
                    name,
                    str(workdir / f"{name}-warehouse"),
                    str(theirs.fileno()),
                    *(["through-headwater"] if through_headwater else []),
                ],
                pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=REPO,
                env=env,
            )
        theirs.close()
        return cls(name, proc, ours, log)

    def wait_ready(self) -> Peer:
        self.version = self._receive(START_TIMEOUT)
        return self

    def call(self, fn, *args) -> Any:
        """``fn(spark, *args)`` in the engine's process; ``fn`` is a module-level function."""
        self._conn.send((fn.__code__.co_filename, fn.__name__, args))
        return self._receive(CALL_TIMEOUT)

    def sql(self, *statements: str) -> list[tuple]:
        """Run the statements in order; the rows of the last."""
        return self.call(run_sql, list(statements))

    def read(self, path: str, **options: Any) -> tuple[list[tuple], list[tuple]]:
        """The table at ``path`` read through the ``delta`` format with ``options``: its
        schema as (name, type, nullable) and its rows in a fixed order."""
        return self.call(read_table, path, {k: str(v) for k, v in options.items()})

    def _receive(self, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        while not self._conn.poll(1):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                tail = self._log.read_text(errors="replace")[-4000:]
                raise RuntimeError(f"the {self.name} engine's process stopped answering:\n{tail}")
        status, *payload = self._conn.recv()
        if status == "error":
            raise PeerError(self.name, *payload)
        return payload[0]

    def stop(self) -> None:
        if self._proc.poll() is None:
            try:
                self._conn.send(None)
                self._proc.wait(60)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()
        self._conn.close()

    def __repr__(self) -> str:
        return self.name


@contextmanager
def running(prefix: str, through_headwater: bool = False) -> Iterator[dict[str, Peer]]:
    """Both engines' processes, by name, in a working folder of their own (removed after):
    started side by side, stopped at the end."""
    import shutil
    import tempfile

    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    peers = {name: Peer.start(name, workdir, through_headwater) for name in ENGINES}
    try:
        for peer in peers.values():
            peer.wait_ready()
        yield peers
    finally:
        for peer in peers.values():
            peer.stop()
        shutil.rmtree(workdir, ignore_errors=True)


# Operations every test uses, run in the engine's process.


def run_sql(spark, statements: list[str]) -> list[Any]:
    rows: list[Any] = []
    for statement in statements:
        rows = spark.sql(statement).collect()
    return rows


def read_table(spark, path: str, options: dict[str, str]):
    df = spark.read.format("delta").options(**options).load(path)
    schema = [(f.name, f.dataType.simpleString(), f.nullable) for f in df.schema.fields]
    return schema, df.collect()


# The child.


def delta_spark_session(warehouse: str):
    """A delta-spark session whose jars are the cached, checksummed files of the
    ``delta-spark`` tier (``spark.jars``): nothing is resolved through Ivy at test time."""
    from pyspark.sql import SparkSession

    from tests.jars import tier_jars

    builder = (
        SparkSession.builder.appName("engines-delta-spark")
        .master("local[2]")
        .config("spark.jars", ",".join(tier_jars("delta-spark")))
        .config("spark.sql.warehouse.dir", warehouse)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        # As delta-spark's own test base: its cluster-sized defaults (a snapshot in 50
        # tasks, VACUUM's listing in up to 10000) cost seconds per operation on 2 cores.
        .config("spark.databricks.delta.snapshotPartitions", "2")
        .config("spark.sql.sources.parallelPartitionDiscovery.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", "-XX:+UseParallelGC")
    )
    for key, value in DELTA_SPARK_CONF.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def headwater_session(warehouse: str, engine: str = "headwater"):
    import headwater

    return headwater.session(
        f"engines-{engine}", master="local[2]", warehouse=warehouse, delta_engine=engine
    )


def plain(value: Any) -> Any:
    """Rows as tuples, all the way down, so results compare and print as data."""
    from pyspark.sql import Row

    if isinstance(value, Row):
        return tuple(plain(v) for v in value)
    if isinstance(value, (list, tuple)):
        return type(value)(plain(v) for v in value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines() or [type(exc).__name__])[0][:500]


def serve(engine: str, warehouse: str, fd: int, through_headwater: bool = False) -> None:
    conn = Connection(fd)
    spark = (
        delta_spark_session(warehouse)
        if engine == "delta-spark" and not through_headwater
        else headwater_session(warehouse, engine)
    )
    conn.send(("ok", spark.version))
    modules: dict[str, Any] = {}
    while True:
        try:
            request = conn.recv()
        except EOFError:
            break
        if request is None:
            break
        file, name, args = request
        try:
            if file not in modules:
                spec = importlib.util.spec_from_file_location(f"peer_{len(modules)}", file)
                assert spec and spec.loader
                modules[file] = importlib.util.module_from_spec(spec)
                sys.modules[spec.name] = modules[file]  # (dataclasses look their module up)
                spec.loader.exec_module(modules[file])
            conn.send(("ok", plain(getattr(modules[file], name)(spark, *args))))
        except Exception as exc:  # the test process decides what an error means
            kinds = [c.__name__ for c in type(exc).__mro__ if c is not object]
            message = first_line(exc)
            java = getattr(exc, "java_exception", None)
            if java is not None:  # a Py4JJavaError: the JVM's exception says what it was
                kinds.append(java.getClass().getName())
                message = first_line(Exception(java.getMessage() or ""))
            conn.send(("error", kinds, message))
    spark.stop()


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:] == ["through-headwater"])
