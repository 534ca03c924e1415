"""Starting a stream whose batches a function commits (``foreachBatch``), the same way on
either engine: through PySpark's own methods, since the hooked ones would route a
``delta`` stream back into headwater."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pyspark.sql import DataFrame
from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

from headwater.originals import original
from headwater.storage.checkpoints import clear_unwritten_first_batch


def start_batches(
    df: DataFrame,
    function: Callable[[DataFrame, int], object],
    checkpoint: str,
    output_mode: str | None = None,
    trigger: Mapping[str, str | bool] | None = None,
    query_name: str | None = None,
) -> StreamingQuery:
    """Stream ``df`` into ``function`` with ``checkpoint``; ``trigger`` as
    ``DataStreamWriter.trigger`` takes it (``{"availableNow": True}``). A first batch killed
    before its offsets were written leaves nothing Spark would start on: cleared first."""
    clear_unwritten_first_batch(checkpoint)
    writer = df.writeStream
    if output_mode:
        writer = original(DataStreamWriter, "outputMode")(writer, output_mode)
    writer = writer.foreachBatch(function)  # type: ignore[arg-type]
    writer = original(DataStreamWriter, "option")(writer, "checkpointLocation", checkpoint)
    if trigger:
        writer = original(DataStreamWriter, "trigger")(writer, **trigger)
    if query_name:
        writer = original(DataStreamWriter, "queryName")(writer, query_name)
    return original(DataStreamWriter, "start")(writer)
