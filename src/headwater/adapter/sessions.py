"""Sessions Spark derives from an installed one get headwater as that one has it.

headwater keeps what a session is on the Python ``SparkSession`` object (its Delta engine,
its catalog of names). Spark hands user code sessions it made itself: ``foreachBatch``
runs each micro-batch on a clone of the query's session (another JVM session in another
Python object, built by PySpark), ``newSession()`` builds one with a state of its own, and
``getActiveSession()`` may wrap the JVM's active session anew. A session born without
headwater's state escaped every hook: ``microBatchOutputDF.sparkSession.sql("MERGE INTO
...")`` reached Spark's parser, which refuses MERGE on the table.

So the adapter wraps ``SparkSession.__init__`` (a row of :data:`headwater.adapter.PATCHES`):
every Python session built on a SparkContext that ``headwater.install`` was given is
joined at birth by the callback install left for that context (:func:`follow`), which
gives it the installed session's engine and catalog. The callback is the session layer's;
this module only carries it (the adapter sits below ``headwater.session``).

Inside a ``foreachBatch`` function, users also write the outer ``spark.sql(...)`` on a view
the batch made (``microBatchOutputDF.createOrReplaceTempView("updates")``), which lives in
the batch's session only. The wrapped ``foreachBatch`` notes, for the thread running the
function, the batch's session (:func:`batch_session`); a statement of another session of
the same context that Spark refuses for a table or view it cannot find is run again on the
batch's session (:mod:`headwater.adapter.sql`). Nothing ran when the first attempt was
refused (it failed at analysis), so nothing runs twice.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from pyspark import SparkContext
from pyspark.sql import SparkSession

Joiner = Callable[[SparkSession], None]
Method = Callable[..., Any]

# One callback per installed context; a stopped context (and its callback) goes away.
_JOINERS: weakref.WeakKeyDictionary[SparkContext, Joiner] = weakref.WeakKeyDictionary()
# The session of the micro-batch whose foreachBatch function this thread is running.
_RUNNING = threading.local()


def follow(context: SparkContext, joiner: Joiner) -> None:
    """Every session built on ``context`` from now on is handed to ``joiner``."""
    _JOINERS[context] = joiner


def session_init(original: Method) -> Method:
    def __init__(self, sparkContext, jsparkSession=None, options={}):  # noqa: B006 (PySpark's)
        original(self, sparkContext, jsparkSession, options)
        joiner = _JOINERS.get(sparkContext)
        if joiner is not None:
            joiner(self)

    return __init__


def foreach_batch(original: Method) -> Method:
    def foreachBatch(self, func):
        def run(batch, batch_id):
            with _running(batch.sparkSession):
                return func(batch, batch_id)

        return original(self, run)

    return foreachBatch


@contextlib.contextmanager
def _running(session: SparkSession) -> Iterator[None]:
    previous = getattr(_RUNNING, "session", None)
    _RUNNING.session = session
    try:
        yield
    finally:
        _RUNNING.session = previous


def batch_session(spark: SparkSession) -> SparkSession | None:
    """The session of the micro-batch this thread's ``foreachBatch`` function is running,
    if it is another session on ``spark``'s context (None otherwise)."""
    batch = getattr(_RUNNING, "session", None)
    if batch is None or batch is spark or batch.sparkContext is not spark.sparkContext:
        return None
    return batch
