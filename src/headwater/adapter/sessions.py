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
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from pyspark import SparkContext
from pyspark.sql import SparkSession

Joiner = Callable[[SparkSession], None]
Method = Callable[..., Any]

# One callback per installed context; a stopped context (and its callback) goes away.
_JOINERS: weakref.WeakKeyDictionary[SparkContext, Joiner] = weakref.WeakKeyDictionary()


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
