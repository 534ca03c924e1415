"""AUTO CDC execution: each micro-batch of change events becomes one MERGE into the target.

Events apply per key in ``sequence_by`` order, whatever order they arrive in, because
what a batch writes is computed from everything known about its keys, not from the batch
alone. The batch becomes events (:mod:`.events`); SCD type 1 keeps each key's newest
row (:mod:`.scd1`), SCD type 2 re-decides the history of the keys the batch touches
(:mod:`.scd2`); both keep what they need beside the target in a state table
(:mod:`.state`). The target and the state commit under the flow's Delta transaction
id with the batch id as version: after a crash between them, Spark replays the batch and
neither is applied twice nor lost.

What a batch costs beside the target's MERGE (which reads and rewrites the target as a
user's own MERGE would): SCD2 reads the touched keys' versions and logged events with one
scan of the target and of the state (the batch's keys broadcast when few, so neither is
shuffled) and rebuilds their history with one shuffle, the same that sorts the events,
the versions and the target rows to compare, key by key.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from headwater import api
from headwater.pipelines.cdc.events import batch_events
from headwater.pipelines.cdc.scd1 import apply_scd1
from headwater.pipelines.cdc.scd2 import apply_scd2
from headwater.pipelines.cdc.state import CdcResult, CdcState
from headwater.pipelines.define.auto_cdc import CdcPlan

__all__ = ["CdcApplier", "CdcResult"]


class CdcApplier:
    """Applies the batches of one AUTO CDC flow to ``target``; ``state`` is the path of
    its state table; ``app_id`` names the flow's transactions."""

    def __init__(
        self,
        spark: SparkSession,
        plan: CdcPlan,
        target: api.TableDoor,
        state: str,
        app_id: str,
        tombstone_seconds: int,
    ) -> None:
        self.spark = spark
        self.plan = plan
        self.target = target
        self.state = CdcState(spark, plan, state, tombstone_seconds)
        self.app_id = app_id

    def prepare(self) -> None:
        """Create the state table; forget tombstones older than the retention (SCD1); add
        to the target the columns the source gained."""
        self.state.prepare()
        self.evolve_target()

    def evolve_target(self) -> None:
        """The source's new columns (a database's ``ALTER TABLE ... ADD COLUMN`` reaching
        the stream) added to the target, NULL in its rows, before any event carries them:
        the batches' MERGEs name every column of the plan. (The state's log gains them
        when first appended to.)"""
        if not self.target.exists():
            return
        have = {f.name.lower() for f in self.target.read().schema.fields}
        new = [f for f in self.plan.schema.fields if f.name.lower() not in have]
        if new:
            self.target.add_columns(new)

    def events(self, batch: DataFrame) -> DataFrame:
        return batch_events(self.plan, self.state, batch)

    def apply(self, batch: DataFrame, batch_id: int) -> CdcResult:
        events = self.events(batch)
        if not self.plan.scd2:  # read once, into the changes (which are kept)
            return apply_scd1(self.plan, self.state, self.target, self.app_id, events, batch_id)
        events = events.persist()  # read for the keys, the history and the state
        try:
            return apply_scd2(self.plan, self.state, self.target, self.app_id, events, batch_id)
        finally:
            events.unpersist()
