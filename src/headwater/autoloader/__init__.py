"""Auto Loader: the ``cloudFiles`` streaming source, its file state and schema handling."""

from __future__ import annotations

import logging
from collections.abc import Callable
from types import ModuleType

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from headwater import storage
from headwater.errors import HeadwaterError
from headwater.lazy import submodule

log = logging.getLogger(__name__)

__all__ = ["backlog", "cloud_files_state", "run_with_schema_evolution"]


def backlog(location: str) -> tuple[int, int] | None:
    """Files (and bytes) a stream has discovered and not yet committed, from its file state
    at ``location`` (its ``cloudFiles.schemaLocation``); None when there is no state yet.
    What ``backlog_files`` / ``backlog_bytes`` report in a pipeline's flow progress."""
    from headwater.autoloader.state import outstanding_at

    return outstanding_at(location)


def cloud_files_state(location: str, spark: SparkSession | None = None):
    """The files a stream discovered: ``path, size, modification_time, discovery_time,
    commit_time, archive_time`` (times as timestamps; null until it happened).

    ``location`` is the stream's ``cloudFiles.schemaLocation`` (often the checkpoint), or,
    for a stream without one, whose state is in its query's checkpoint, that checkpoint
    (the state of its first ``cloudFiles`` source; ``<checkpoint>/sources/<n>`` names
    another). Returns a Spark DataFrame (on the active session, or ``spark``).
    """
    import datetime as dt

    from headwater.autoloader.state import STATE_DIR, FileState

    def has_state(where: str) -> bool:
        return storage.is_dir(storage.join(storage.normalize(where), STATE_DIR))

    if not has_state(location):
        in_checkpoint = storage.join(storage.normalize(location), "sources", "0")
        if not has_state(in_checkpoint):
            raise FileNotFoundError(
                f"No Auto Loader file state in {location}: pass the stream's "
                "cloudFiles.schemaLocation, or its checkpoint when it has none."
            )
        location = in_checkpoint
    state = FileState(location)
    try:
        rows = state.rows()
    finally:
        state.close()

    def ts(ms):
        return None if ms is None else dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc)

    data = [(p, s, ts(m), ts(d), ts(c), ts(a)) for p, s, m, d, c, a in rows]
    session = spark or SparkSession.getActiveSession()
    if session is None:
        raise HeadwaterError("No active SparkSession: pass spark=, or build one first.")
    schema = (
        "path string, size long, modification_time timestamp, discovery_time timestamp, "
        "commit_time timestamp, archive_time timestamp"
    )
    return session.createDataFrame(data, schema)


def run_with_schema_evolution(
    start: Callable[[], StreamingQuery], max_restarts: int = 10
) -> StreamingQuery:
    """Run ``start()`` to completion, restarting it when Auto Loader stops for new columns.

    ``start`` builds and starts the whole query (so each restart sees the evolved schema);
    with ``trigger(availableNow=True)`` this returns when all files are processed. Any other
    failure is raised at once.
    """
    from pyspark.errors import StreamingQueryException

    for attempt in range(max_restarts + 1):
        query = start()
        try:
            query.awaitTermination()
            return query
        except StreamingQueryException as e:
            if not _new_columns(e) or attempt == max_restarts:
                raise
            log.warning("schema changed; restarting the stream (%d/%d)", attempt + 1, max_restarts)
    raise AssertionError("unreachable")


def _new_columns(error: BaseException) -> bool:
    """Whether Auto Loader stopped the stream for new columns: said by the error, or by
    one it wraps (delta-spark's sink reports it as the cause of a failed task write)."""
    seen: BaseException | None = error
    for _ in range(10):
        if seen is None:
            return False
        text = str(seen) + str(getattr(seen, "_stackTrace", "") or "")
        if "UNKNOWN_FIELD_EXCEPTION" in text:
            return True
        seen = getattr(seen, "_cause", None) or seen.__cause__
    return False


def __getattr__(name: str) -> ModuleType:
    return submodule(__name__, name)  # ``headwater.autoloader.metadata_plan`` on first use
