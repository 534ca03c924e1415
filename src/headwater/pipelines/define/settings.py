"""The settings an update puts on the caller's session, put back when it ends.

A pipeline's ``configuration``, its SQL files' ``SET`` statements and a flow's
``spark_conf`` are session settings while the update runs (code reads them with
``spark.conf.get``). The known platform and Spark's own pipelines run an update on a
session of its own, so none of them outlives it; here the update may run on the caller's
session (a notebook, a test suite), so each setting is recorded with the value it replaced
and put back at the end: a later update, or the caller's own queries, never run with
another pipeline's settings.
"""

from __future__ import annotations

import threading

from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from headwater.errors import PipelineDefinitionError


class SessionSettings:
    """Settings set on one session for one update; :meth:`restore` once it ends."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self._replaced: dict[str, str | None] = {}
        self._lock = threading.Lock()  # flows set their spark_conf from worker threads

    def set(self, key: str, value: str, origin: str = "configuration") -> None:
        """Set ``key``; a setting Spark refuses to change at runtime (a static one) is an
        error naming it, rather than a failure in some flow."""
        with self._lock:
            try:
                previous = self.spark.conf.get(key, None)
                self.spark.conf.set(key, value)
            except PySparkException as e:
                raise PipelineDefinitionError(
                    f"[PIPELINE_SPEC_INVALID_CONFIGURATION] Configuration '{key}' cannot be "
                    f"set in a running session ({e.getCondition()}): set it when the "
                    "session starts.",
                    origin,
                ) from None
            self._replaced.setdefault(key, previous)

    def restore(self) -> None:
        """Every setting back to the value it had before the update (unset if it had
        none)."""
        with self._lock:
            for key, previous in self._replaced.items():
                if previous is None:
                    self.spark.conf.unset(key)
                else:
                    self.spark.conf.set(key, previous)
            self._replaced.clear()
