"""The streaming ``delta`` sink: each micro-batch written natively and committed once.

Structured Streaming may run a micro-batch again after a crash (the batch was planned and
logged in the checkpoint, but its completion was not). Every batch is committed with the
Delta transaction ``(app_id, batchId)``, ``app_id`` derived from the checkpoint location,
so a batch that already reached the table is skipped: exactly-once, by Delta's own rule.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable

from pyspark.sql import DataFrame

from headwater import storage
from headwater.delta.write import write_dataframe
from headwater.errors import OptionError

log = logging.getLogger(__name__)


def app_id_for(checkpoint_location: str) -> str:
    """A stable transaction id for the query that owns ``checkpoint_location``."""
    digest = hashlib.sha256(storage.normalize(checkpoint_location).encode()).hexdigest()[:24]
    return f"headwater-stream-{digest}"


class DeltaStreamSink:
    """The ``foreachBatch`` function that commits micro-batches to one Delta table."""

    def __init__(
        self,
        path: str,
        checkpoint_location: str | None,
        output_mode: str,
        options: dict[str, str],
        partition_by: list[str] | None = None,
        on_commit: Callable[[object], None] | None = None,
    ) -> None:
        if not checkpoint_location:
            raise OptionError(
                f"Streaming into the delta table at {path} needs a checkpoint: "
                ".option('checkpointLocation', '/path/to/checkpoint'). It records the query's "
                "progress and makes each batch commit exactly once."
            )
        mode = (output_mode or "append").lower()
        if mode not in ("append", "complete"):
            raise OptionError(
                f"Output mode '{output_mode}' is not supported by the delta sink; use 'append', "
                "or 'complete' (the table is replaced by the full result each batch)."
            )
        self.path = path
        self.mode = "overwrite" if mode == "complete" else "append"
        self.options = {
            k: v for k, v in options.items() if k.lower() not in ("checkpointlocation", "path")
        }
        self.partition_by = partition_by
        self.app_id = app_id_for(checkpoint_location)
        self.on_commit = on_commit

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        result = write_dataframe(
            df,
            self.path,
            mode=self.mode,
            options=self.options,
            partition_by=self.partition_by,
            txn=(self.app_id, int(batch_id)),
        )
        if result.version is None:
            log.info("batch %s already committed to %s; skipped", batch_id, self.path)
        elif self.on_commit is not None:
            self.on_commit(result)
