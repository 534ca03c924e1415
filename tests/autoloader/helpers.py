"""The stream most Auto Loader tests run: cloudFiles -> delta sink, with a checkpoint."""

from __future__ import annotations


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
