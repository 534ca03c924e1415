"""The streaming ``delta`` sink: each micro-batch written natively and committed once.

Structured Streaming may run a micro-batch again after a crash (the batch was planned and
logged in the checkpoint, but its completion was not). Every batch is committed with the
Delta transaction ``(app_id, batchId)``, ``app_id`` derived from the checkpoint location
and the query id kept there, so a batch that already reached the table is skipped: exactly-once, by Delta's own rule.
Commits are ``STREAMING UPDATE`` in the table's history, with the query id and epoch.
A small batch (a few small files) is appended from Arrow on the driver, with no Spark
write job (:mod:`headwater.delta.write.small_batch`), under the same transaction id.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import replace

from pyspark.sql import DataFrame

from headwater import storage
from headwater.delta.log.delta_log import DeltaLog
from headwater.delta.log.follow import FollowedLog
from headwater.delta.log.operations import Operation
from headwater.delta.options import OutputMode, WriteSpec
from headwater.delta.write import small_batch
from headwater.delta.write.batch import WriteResult, write
from headwater.errors import OptionError

log = logging.getLogger(__name__)


def app_id_for(checkpoint_location: str, query_id: str = "") -> str:
    """A stable transaction id for the query that owns ``checkpoint_location``: stable
    across restarts, new when the checkpoint is deleted and the query starts afresh (Spark
    then gives it a new id), as delta-spark's sink keys its transactions on the query id."""
    key = storage.normalize(checkpoint_location) + (f"#{query_id}" if query_id else "")
    digest = hashlib.sha256(key.encode()).hexdigest()[:24]
    return f"headwater-stream-{digest}"


class DeltaStreamSink:
    """The ``foreachBatch`` function that commits micro-batches to one Delta table.

    ``spec`` carries the write options (``mergeSchema``, partitioning, ...); its mode and
    transaction are set per batch.
    """

    def __init__(
        self,
        path: str,
        checkpoint_location: str | None,
        mode: OutputMode,
        spec: WriteSpec | None = None,
        on_commit: Callable[[WriteResult], None] | None = None,
        writer: Callable[[DataFrame, WriteSpec], WriteResult] | None = None,
    ) -> None:
        if not checkpoint_location:
            raise OptionError(
                f"Streaming into the delta table at {path} needs a checkpoint: "
                ".option('checkpointLocation', '/path/to/checkpoint'). It records the query's "
                "progress and makes each batch commit exactly once."
            )
        self.path = path
        self.checkpoint = checkpoint_location
        self.output_mode = mode
        self.spec = replace(
            spec or WriteSpec(), mode="overwrite" if mode == "complete" else "append"
        )
        self.on_commit = on_commit
        # Another Delta engine's batch write (delta-spark's, with the same transaction id);
        # the exactly-once rule here is the engines' common one.
        self.writer = writer
        self._query_id: str | None = None
        # The table's log, loaded by the first batch and then followed commit by commit
        # (see headwater.delta.log.follow): a batch does not replay the log again.
        self.log = FollowedLog(DeltaLog(path))

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        self.commit(df, batch_id)

    def commit(self, df: DataFrame, batch_id: int) -> WriteResult:
        """Write the batch; its result (``version`` None: it was already committed)."""
        spec = replace(self.spec, txn=(self.app_id, int(batch_id)))
        operation = Operation.streaming_update(self.output_mode, self.query_id(), int(batch_id))
        if self.writer is not None:
            result = self.writer(df, spec)
        else:
            # A batch of a few small files: collected in Arrow, no Spark write job.
            small = small_batch.append(df, self.log, spec, operation)
            result = small if small is not None else write(df, self.path, spec, operation, self.log)
        if result.version is None:
            log.info("batch %s already committed to %s; skipped", batch_id, self.path)
        elif self.on_commit is not None:
            self.on_commit(result)
        return result

    @property
    def app_id(self) -> str:
        return app_id_for(self.checkpoint, self.query_id())

    def query_id(self) -> str:
        """The query's id, as Spark keeps it in the checkpoint (stable across restarts)."""
        if self._query_id is None:
            try:
                found = json.loads(storage.read_bytes(storage.join(self.checkpoint, "metadata")))
                self._query_id = str(found.get("id", ""))
            except (OSError, ValueError):
                self._query_id = ""
        return self._query_id
