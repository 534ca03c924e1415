"""AUTO CDC from snapshots: each new full snapshot of a source becomes change events.

``create_auto_cdc_from_snapshot_flow`` takes a table (read whole at each update) or a
function ``next_snapshot_and_version(latest_version) -> (DataFrame, version) | None``
that the runner calls until it returns None. A snapshot is compared with what the target
holds now (SCD1: its rows; SCD2: its open versions): a new or changed row is an upsert, a
key absent from the snapshot is a delete, an unchanged row is nothing; all at the
snapshot's version. Those events go through the same applier as a change feed
(:mod:`.apply`), so SCD2 history, state and exactly-once commits work alike; the
snapshots applied so far are recorded in the pipeline's state after each one.

A snapshot is read once (:func:`read_once`): the comparison scans it twice, and a source
that is not files, such as a database table read with Spark's JDBC source, answers each
scan with the database as it is then, which may have changed in between.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from headwater import api
from headwater.errors import PipelineDefinitionError
from headwater.pipelines.cdc.apply import CdcApplier, CdcResult
from headwater.pipelines.define.auto_cdc import (
    DEFAULT_TOMBSTONE_SECONDS,
    END_AT,
    START_AT,
    CdcPlan,
    resolve,
)
from headwater.pipelines.define.elements import AutoCdc, Origin
from headwater.pipelines.layout.folders import Layout

VERSION = "__hw_snapshot_version"
GONE = "__hw_snapshot_deleted"
SnapshotFunction = Callable[[Any], "tuple[DataFrame, Any] | None"]


def event_spec(spec: AutoCdc) -> AutoCdc:
    """The change-feed spec of a snapshot flow: its events carry the version and a
    delete flag, which the target does not keep."""
    return replace(
        spec,
        sequence_by=VERSION,
        apply_as_deletes=GONE,
        column_list=None,
        except_column_list=(VERSION, GONE),
        columns={},
    )


def events(snapshot: DataFrame, current: DataFrame, keys: list[str], version: Column) -> DataFrame:
    """The events turning ``current`` (the target's live rows) into ``snapshot``, at
    ``version``."""
    columns = snapshot.columns
    now = current.select(*[F.col(f"`{c}`") for c in columns])
    changed = snapshot.exceptAll(now)
    gone = now.join(snapshot.select(*keys), keys, "left_anti")
    return changed.select(*columns, version.alias(VERSION), F.lit(False).alias(GONE)).unionByName(
        gone.select(*columns, version.alias(VERSION), F.lit(True).alias(GONE))
    )


def snapshot_schema(spark: SparkSession, spec: AutoCdc, example: DataFrame, origin: Origin):
    """The target's columns of a snapshot flow whose snapshots look like ``example``."""
    return resolve(spark, event_spec(spec), with_event_columns(example).schema, origin).schema


def read_once(snapshot: DataFrame) -> DataFrame:
    """``snapshot`` as one read: a source without files (JDBC, any DataSource that queries
    a live system) is materialized now, so every scan of the comparison sees the same rows.
    Files (a Delta table's version, Parquet) read the same rows each time, and are left
    as they are."""
    if snapshot.inputFiles():
        return snapshot
    return snapshot.localCheckpoint(eager=True)


def with_event_columns(snapshot: DataFrame) -> DataFrame:
    return snapshot.select("*", F.lit(0).cast("long").alias(VERSION), F.lit(False).alias(GONE))


class SnapshotApplier:
    """Applies the snapshots of one flow, in version order, each once."""

    def __init__(
        self,
        spark: SparkSession,
        spec: AutoCdc,
        schema_source: DataFrame,
        target: api.TableDoor,
        layout: Layout,
        flow: str,
        app_id: str,
        origin: Origin,
    ) -> None:
        self.spark, self.spec, self.layout, self.flow = spark, spec, layout, flow
        example = with_event_columns(schema_source)
        self.plan: CdcPlan = resolve(spark, event_spec(spec), example.schema, origin)
        self.applier = CdcApplier(
            spark, self.plan, target, layout.cdc_state(flow), app_id, DEFAULT_TOMBSTONE_SECONDS
        )
        self.applier.prepare()
        self.target = target

    def _progress(self) -> dict[str, Any]:
        return dict(self.layout.read_state("snapshots").get(self.flow) or {})

    def _record(self, applied: int, version: Any) -> None:
        record = self.layout.read_state("snapshots")
        record[self.flow] = {"applied": applied, "version": version}
        self.layout.write_state("snapshots", record)

    def current(self) -> DataFrame:
        rows = self.target.read()
        if self.plan.scd2:
            rows = rows.where(F.col(END_AT).isNull()).drop(START_AT, END_AT)
        return rows

    def apply(self, snapshot: DataFrame, version: Any) -> CdcResult:
        progress = self._progress()
        applied = int(progress.get("applied", 0))
        columns = list(self.plan.columns)
        missing = [c for c in columns if c not in snapshot.columns]
        if missing:
            raise PipelineDefinitionError(
                f"[PIPELINE_AUTO_CDC_SNAPSHOT_SCHEMA] Snapshot {version} of flow '{self.flow}' "
                f"lacks column(s) {', '.join(missing)}."
            )
        rows = read_once(snapshot.select(*[F.col(f"`{c}`") for c in columns]))
        stamp = F.lit(version).cast(self.plan.sequence_type)
        changes = events(rows, self.current(), list(self.plan.keys), stamp)
        result = self.applier.apply(changes, applied)
        self._record(applied + 1, version)
        return result

    def run(self, source: DataFrame | SnapshotFunction) -> list[CdcResult]:
        """Apply what is new: the source table's rows now (a DataFrame), or each snapshot
        the function gives after the last version applied."""
        if isinstance(source, DataFrame):
            return [self.apply(source, self._next_version())]
        results: list[CdcResult] = []
        while True:
            latest = self._progress().get("version")
            found = source(latest)
            if found is None:
                return results
            snapshot, version = found
            if latest is not None and not version > latest:
                raise PipelineDefinitionError(
                    f"[PIPELINE_AUTO_CDC_SNAPSHOT_VERSION] The snapshot function of flow "
                    f"'{self.flow}' returned version {version!r} after {latest!r}: versions "
                    "must increase. Return None when there is no newer snapshot."
                )
            results.append(self.apply(snapshot, version))

    def _next_version(self) -> int:
        return int(self._progress().get("version") or 0) + 1
