"""The stream most Auto Loader tests run: cloudFiles -> delta sink, with a checkpoint."""

from __future__ import annotations

import textwrap


def start_ingest(
    spark, land, ckpt, out, fmt="json", schema=None, trigger=None, merge_schema=False, **options
):
    """Start ``cloudFiles`` over ``land`` into the delta table ``out``.

    Option names use ``__`` for dots (``cloudFiles__maxFilesPerTrigger``); the trigger
    defaults to ``availableNow``. ``fmt=None`` leaves ``cloudFiles.format`` to ``options``.
    """
    reader = spark.readStream.format("cloudFiles").option("cloudFiles.schemaLocation", ckpt)
    if fmt is not None:
        reader = reader.option("cloudFiles.format", fmt)
    for key, value in options.items():
        reader = reader.option(key.replace("__", "."), value)
    if schema is not None:
        reader = reader.schema(schema)
    writer = reader.load(land).writeStream.format("delta").option("checkpointLocation", ckpt)
    if merge_schema:
        writer = writer.option("mergeSchema", "true")
    return writer.trigger(**(trigger or {"availableNow": True})).start(out)


# A child process that ingests ``land`` into ``out`` (3 files a trigger) until killed, or
# once with ``availableNow``; argv: land, checkpoint, out, trigger[, Spark conf as JSON[,
# schema location (default: the checkpoint)]].
INGEST = textwrap.dedent(
    """
    import sys, json, headwater
    land, ck, out, trigger = sys.argv[1:5]
    conf = json.loads(sys.argv[5]) if len(sys.argv) > 5 else {}
    schema_location = sys.argv[6] if len(sys.argv) > 6 else ck
    spark = headwater.session(master="local[2]", warehouse=ck + "_wh", conf=conf)
    df = (spark.readStream.format("cloudFiles").option("cloudFiles.format", "json")
          .option("cloudFiles.schemaLocation", schema_location)
          .option("cloudFiles.maxFilesPerTrigger", 3)
          .schema("file int, line int").load(land))
    w = df.writeStream.format("delta").option("checkpointLocation", ck)
    w = w.trigger(availableNow=True) if trigger == "availableNow" else w.trigger(processingTime="100 milliseconds")
    q = w.start(out)
    print("STARTED", flush=True)
    q.awaitTermination()
    """
)
