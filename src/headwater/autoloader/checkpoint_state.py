"""Where a ``cloudFiles`` stream without ``cloudFiles.schemaLocation`` keeps its file state:
under the checkpoint of the query that reads it, as on the known platform (a schema given
with ``.schema(...)``, or binaryFile's fixed one, needs no schema location).

Why it is bound when the query starts: Spark gives each streaming source a folder of the
checkpoint, ``<checkpoint>/sources/<n>``, but its scan of a Python data source drops it
(``PythonScan.toMicroBatchStream`` ignores the path), and the Python source is made at
``load()``, before ``writeStream...option("checkpointLocation", ...)`` is known. Both are
known at ``DataStreamWriter.start``/``toTable``, which headwater wraps: :func:`bind` then
reads each such ``cloudFiles`` read again with ``headwater.stateLocation`` set to
``<checkpoint>/sources/<n>``, numbered as Spark numbers a query's sources (depth first,
equal relations once), and gives the writer that plan. A restart of the query (the same
checkpoint) finds the same state, so each file is read exactly once; queries with
different checkpoints have states of their own. The DataFrame the user holds keeps no
location, so starting it again elsewhere binds it anew.

Spark-classic internals (the writer's JVM object) stay in this module.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql.streaming.readwriter import DataStreamWriter

from headwater import storage
from headwater.autoloader.metadata_plan import frame, items, read_again, scala_seq
from headwater.autoloader.options import STATE_LOCATION_OPTION
from headwater.errors import OptionError

_SOURCES = ("StreamingRelation", "StreamingRelationV2")
_OWN_LOCATIONS = ("cloudfiles.schemalocation", STATE_LOCATION_OPTION.lower())


def unbound(df: DataFrame) -> bool:
    """Whether the streaming query of ``df`` reads ``cloudFiles`` with no place yet for its
    file state (no ``cloudFiles.schemaLocation``)."""
    plan = df._jdf.queryExecution().analyzed()
    if not plan.isStreaming() or "cloudfiles" not in plan.toString().lower():
        return False
    return any(_needs_state(leaf) for leaf in items(plan.collectLeaves()))


def bind(writer: DataStreamWriter, checkpoint: str) -> None:
    """Give ``writer`` its query with each unbound ``cloudFiles`` read keeping its file state
    in ``<checkpoint>/sources/<n>``."""
    df = writer._df
    spark = df.sparkSession
    sources = storage.join(checkpoint, "sources")
    plan = _bound(spark, df._jdf.queryExecution().analyzed(), sources, [], {})
    if plan is None:
        return
    bound = frame(spark, plan)
    jwriter = writer._jwrite
    try:
        field = jwriter.getClass().getDeclaredField("ds")  # the Dataset the writer starts
        field.setAccessible(True)
        field.set(jwriter, bound._jdf)
    except Exception as e:
        raise OptionError(
            "cloudFiles without cloudFiles.schemaLocation: this Spark's stream writer does not "
            f"take the query that keeps the file state in the checkpoint ({e}); set "
            "cloudFiles.schemaLocation."
        ) from e
    writer._df = bound


def _needs_state(node: Any) -> bool:
    if node.getClass().getSimpleName() != "StreamingRelationV2":
        return False
    if str(node.sourceName()).lower() != "cloudfiles":
        return False
    options = dict(node.extraOptions().asCaseSensitiveMap())
    return not any(k.lower() in _OWN_LOCATIONS for k in options)


def _bound(
    spark: Any, node: Any, sources: str, seen: list[Any], done: dict[int, Any]
) -> Any | None:
    """``node`` with its unbound ``cloudFiles`` reads bound (None: it has none). ``seen``:
    the sources met so far, numbered as Spark numbers them; ``done``: the read made for
    each number, so equal relations stay one source."""
    kind = node.getClass().getSimpleName()
    if kind in _SOURCES:
        number = next((i for i, s in enumerate(seen) if s.equals(node)), len(seen))
        if number == len(seen):
            seen.append(node)
        if number not in done and _needs_state(node):
            options = dict(node.extraOptions().asCaseSensitiveMap())
            options[STATE_LOCATION_OPTION] = storage.join(sources, str(number))
            fresh = read_again(spark, node, items(node.output()), options)
            if fresh is None:
                raise OptionError(
                    f"The cloudFiles read of {options.get('path')} changed its columns between "
                    "load() and start(); load it again, or set cloudFiles.schemaLocation."
                )
            done[number] = fresh
        return done.get(number)
    children = items(node.children())
    new = [_bound(spark, c, sources, seen, done) for c in children]
    if all(n is None for n in new):
        return None
    merged = [n if n is not None else c for n, c in zip(new, children, strict=True)]
    return node.withNewChildren(scala_seq(spark, merged))
