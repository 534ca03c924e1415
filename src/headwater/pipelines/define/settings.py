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

from headwater import storage
from headwater.errors import PipelineDefinitionError


class SessionSettings:
    """Settings set on one session for one update; :meth:`restore` once it ends."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self._replaced: dict[str, str | None] = {}
        self._lock = threading.Lock()  # flows set their spark_conf from worker threads

    def set(self, key: str, value: str, origin: str = "configuration") -> None:
        """Set ``key``; a setting already in effect (a static one given when the session
        started, as ``headwater pipelines run`` gives the spec's) is left alone, and one
        Spark refuses to change at runtime is an error naming it and where to give it,
        rather than a failure in some flow."""
        with self._lock:
            previous = self.spark.conf.get(key, None)
            if previous == value or (
                not self.spark.conf.isModifiable(key) and started_with(self.spark, key, value)
            ):
                return
            try:
                self.spark.conf.set(key, value)
            except PySparkException as e:
                raise PipelineDefinitionError(
                    f"[PIPELINE_SPEC_INVALID_CONFIGURATION] Configuration '{key}' cannot be "
                    f"set in a running session ({e.getCondition()}): it applies when the "
                    f"session starts: `headwater pipelines run --conf {key}=...` (or the "
                    "spec's configuration, read before Spark starts), or "
                    f"headwater.session(conf={{'{key}': ...}}) in Python; a session already "
                    "running (--watch, a notebook) keeps the value it started with.",
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


def started_with(spark: SparkSession, key: str, value: str) -> bool:
    """Whether the session started with the static setting ``key`` at ``value``: its
    Spark configuration has it (for a list such as ``spark.jars``, every item of
    ``value``: a session may add its own, as delta-spark's jars)."""
    found = spark.sparkContext.getConf().get(key, None)
    if found is None:
        return False
    wanted = items(value)
    return found == value or (bool(wanted) and set(wanted) <= set(items(found)))


def items(value: str) -> list[str]:
    """A list setting's items, local paths in one spelling (Spark turns ``/a.jar`` into
    ``file:///a.jar``)."""
    found = [v.strip() for v in value.split(",") if v.strip()]
    return [storage.normalize(v) if storage.parse(v).is_local else v for v in found]
