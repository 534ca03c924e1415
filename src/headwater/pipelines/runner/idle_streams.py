"""A triggered update's stream with nothing new to read is not started.

Starting a stream costs about a second on a warm session (the query's planning, its
checkpoint's logs read and written, an ``availableNow`` run that finds no data) and most
updates of a pipeline find no new rows in most of its streams. Spark runs no batch then:
the source reports the offset it was at, and the checkpoint is left as it was. So when the
answer is known from files alone, the flow ends as such a run would (nothing read, nothing
written, the checkpoint untouched) without starting the query.

It is known for a stream whose one source is a Delta source of either engine —
headwater's (the Python data source ``delta`` of :mod:`headwater.delta.read.stream`) or
delta-spark's (``DeltaDataSource``) — whose checkpoint's last batch is committed, that
batch's watermark being the one the next batch would run with (no batch owed to a
stateful operator), and whose position is past the table's latest version: the source's
``latestOffset`` then returns that position unchanged and Spark plans nothing. A caught-up
position is, in headwater's offsets, ``{"version": v, "index": 0}`` outside a snapshot;
in delta-spark's, ``{"reservoirVersion": v, "index": -1, "isStartingVersion": false}``
(delta-spark moves to the next version's base index once a version's last file is read);
either way ``v`` is the version read next. The table's latest version is read from its
log's listing, not from a snapshot. Any other stream — several sources, Auto Loader,
Kafka, a batch planned but not committed (a crash), a position inside a version or a
snapshot, a ``startingVersion=latest`` position not read past — is started as before.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from pyspark.sql import DataFrame

from headwater import storage
from headwater.engines.door import table_log
from headwater.errors import StorageError
from headwater.storage.paths import join, parse

SOURCE = "delta"  # the name headwater's Delta stream source is registered under
PYTHON_TABLE = "org.apache.spark.sql.execution.datasources.v2.python.PythonTable"
DELTA_SPARK_SOURCES = {"delta", "org.apache.spark.sql.delta.sources.DeltaDataSource"}


def nothing_new(df: DataFrame, checkpoint: str, trigger: Mapping[str, object]) -> bool:
    """Whether starting ``df`` with ``trigger`` on ``checkpoint`` would run no batch, known
    without starting it (False whenever in doubt)."""
    if trigger != {"availableNow": True}:
        return False
    location = delta_source(df)
    if location is None:
        return False
    offset = committed_offset(checkpoint)
    version = None if offset is None else next_version(offset)
    if version is None:
        return False
    log = table_log(location)
    return log.exists() and version > log.latest_version()


def delta_source(df: DataFrame) -> str | None:
    """The location the stream ``df`` reads when its only streaming source is a Delta
    source of either engine (a few questions of its logical plan); None otherwise."""
    streaming = [
        leaf
        for leaf in _iterate(df._jdf.queryExecution().analyzed().collectLeaves())
        if leaf.isStreaming()
    ]
    if len(streaming) != 1:
        return None
    leaf = streaming[0]
    if leaf.nodeName() == "StreamingRelation":  # a V1 source: delta-spark's
        return _delta_spark_location(leaf.dataSource())
    if leaf.nodeName() != "StreamingRelationV2" or leaf.sourceName() != SOURCE:
        return None
    if leaf.table().getClass().getName() != PYTHON_TABLE:
        return None
    path = leaf.extraOptions().get("path")
    return str(path) if path else None


def _delta_spark_location(source) -> str | None:  # (source: a Py4J DataSource)
    """Where delta-spark's source reads: its ``path`` option (``load(path)``), else the
    catalog table's location (``readStream.table(name)``)."""
    if str(source.className()) not in DELTA_SPARK_SOURCES:
        return None
    path = source.options().get("path")
    if not path.isEmpty():
        return str(path.get())
    table = source.catalogTable()
    return None if table.isEmpty() else str(table.get().location())


def next_version(offset: Mapping[str, object]) -> int | None:
    """The version a caught-up Delta source offset reads next (either engine's shape: the
    module's docstring), None for a position inside a version or a snapshot."""
    try:
        if "reservoirVersion" in offset:  # delta-spark's DeltaSourceOffset
            if offset.get("index") != -1 or offset.get("isStartingVersion") is not False:
                return None
            return int(offset["reservoirVersion"])  # type: ignore[call-overload]
        if offset.get("snapshot") is not False or offset.get("unread", False):
            return None
        if offset.get("index") != 0:
            return None
        return int(offset["version"])  # type: ignore[call-overload]
    except (KeyError, TypeError, ValueError):
        return None


def committed_offset(checkpoint: str) -> dict | None:
    """The one source offset of the checkpoint's last batch, when that batch is committed
    and owes no batch to a watermark; None when there is no such batch or its files say
    anything else."""
    location = parse(checkpoint)
    if not (location.is_local or location.is_s3):
        return None
    offsets, commits = _batches(checkpoint, "offsets"), _batches(checkpoint, "commits")
    if not offsets or not commits or max(offsets) != max(commits):
        return None
    batch = max(offsets)
    try:
        offset_lines = _read(checkpoint, "offsets", batch).splitlines()
        commit_lines = _read(checkpoint, "commits", batch).splitlines()
        if len(offset_lines) != 3 or len(commit_lines) != 2:
            return None  # (a version line, the batch's metadata, one line per source)
        metadata, source = json.loads(offset_lines[1]), json.loads(offset_lines[2])
        committed = json.loads(commit_lines[1])
        if metadata.get("batchWatermarkMs") != committed.get("nextBatchWatermarkMs"):
            return None
        return source if isinstance(source, dict) else None
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _batches(checkpoint: str, log: str) -> list[int]:
    try:
        files = storage.list_files(join(checkpoint, log), recursive=False)
    except (StorageError, OSError):
        return []
    return [int(f.base_name) for f in files if f.base_name.isdigit()]


def _read(checkpoint: str, log: str, batch: int) -> str:
    return storage.read_bytes(join(checkpoint, log, str(batch))).decode()


def _iterate(seq: object) -> list:
    """The elements of a Scala ``Seq`` handed back through Py4J."""
    found = []
    it = seq.iterator()  # type: ignore[attr-defined]
    while it.hasNext():
        found.append(it.next())
    return found
