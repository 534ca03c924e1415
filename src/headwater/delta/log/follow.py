"""The latest snapshot of a table one writer commits to batch after batch (a stream's sink).

Loading a table's snapshot replays its log from the newest checkpoint: with checkpoints
every 100 commits, a stream's batch reads up to 99 JSON commits again to learn what the
previous batch already knew, 4 ms after a checkpoint and 35-50 ms just before the next one
(measured on a 500-row-a-batch table). A :class:`FollowedLog` loads the log once and then,
before each batch, applies only the commits made since (its own and other writers'):
about 5 ms whatever the log's length. The snapshot is then the same as a fresh load's, so
the exactly-once check of the batch's transaction id sees every commit.
"""

from __future__ import annotations

from deltalake import DeltaTable

from headwater.delta.log.delta_log import DeltaLog, Snapshot


class FollowedLog:
    """Snapshots of the table at ``log``'s root, each at its latest version.

    A snapshot returned is valid until the next call: the delta-rs table under it is
    advanced in place. Logs headwater replays itself (:class:`ReplayedSnapshot`, or a
    snapshot whose files need the tolerant replay) are loaded afresh every time.
    """

    def __init__(self, log: DeltaLog) -> None:
        self.log = log
        self._table: DeltaTable | None = None
        self.loads = 0  # full loads of the log (the first, and after a lost follow)

    def snapshot(self) -> Snapshot:
        """The table's latest snapshot (``TableNotFoundError`` while there is none)."""
        table = self._table
        if table is not None:
            kept = table.version()
            try:
                # A log replaced under the follower (the table deleted and written anew)
                # may be shorter than what was followed: load it afresh then.
                if self.log.latest_version() >= kept:
                    table.update_incremental()
                    return Snapshot(self.log.root, table.version(), table)
            except Exception:  # (a fresh load says why, by name, if it fails too)
                pass
            self._table = None
        self.loads += 1
        snapshot = self.log.snapshot()
        if type(snapshot) is Snapshot and snapshot.replayed_because is None:
            self._table = snapshot.table
        return snapshot

    def forget(self) -> None:
        """Load the log afresh next time (after a failed commit, for instance)."""
        self._table = None
