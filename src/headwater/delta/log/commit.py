"""The one place a Delta commit is made: a transaction opened at a read version.

Every writer (batch writes, the stream sink, DELETE/UPDATE/MERGE, OPTIMIZE, RESTORE, ALTER,
constraints, COPY INTO) opens a :class:`Transaction` on the snapshot it read, stages typed
actions (:mod:`.actions`) and states what its result depends on: the files it read, the
partitions it would read new files from, the application versions it checked, and any
further :class:`Requirement`. :meth:`Transaction.commit` then writes exactly one version:
schema and protocol changes land in the same version as the data.

Commit and conflicts work as delta-spark's optimistic transactions. The commit file for
``read version + 1`` is written with a put-if-absent (:mod:`.store`). If another writer
took that version, its actions are checked against what this transaction depends on:

* a protocol or metadata change fails it (:class:`ProtocolChangedException`,
  :class:`MetadataChangedException`);
* files added that it would have read (in the partitions it read) fail it
  (:class:`ConcurrentAppendException`), as the commit's isolation level says: under the
  table's ``delta.isolationLevel``, ``WriteSerializable`` by default, blind appends do not
  count (unless this commit changes the metadata); under ``Serializable`` they do; a commit
  that changes no data (OPTIMIZE's rewrite) is lowered to ``SnapshotIsolation`` and no
  added file counts. The level is recorded in the commit's ``isolationLevel``;
* a file it read, or also removes, being removed fails it
  (:class:`ConcurrentDeleteReadException`, :class:`ConcurrentDeleteDeleteException`);
* progress recorded by an application whose version it checked fails it
  (:class:`ConcurrentTransactionException`);

otherwise the same actions are tried at the next version. So blind appends always go
through, and an UPDATE of one partition commits beside an UPDATE of another.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from deltalake import DeltaTable as RsTable

from headwater import storage
from headwater.delta.log import operations as commit_info
from headwater.delta.log import protocol, row_tracking
from headwater.delta.log.actions import (
    Action,
    AddCDCFile,
    AddFile,
    Commit,
    DomainMetadata,
    Metadata,
    RemoveFile,
    SetTransaction,
    now_ms,
    to_json_lines,
)
from headwater.delta.log.actions import Protocol as ProtocolAction
from headwater.delta.log.delta_log import DeltaLog, Snapshot
from headwater.delta.log.operations import (
    IsolationLevel,
    Operation,
    isolation_level,
    table_isolation_level,
)
from headwater.errors import (
    ConcurrentAppendException,
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    ConcurrentTransactionException,
    ConcurrentWriteException,
    DeltaError,
    MetadataChangedException,
    ProtocolChangedException,
)

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 1000  # versions tried past the read version before giving up
CHECKPOINT_INTERVAL = 100  # commits between checkpoints (delta.checkpointInterval), as delta-rs

# Which partitions a transaction read, for the check of files added concurrently: given the
# partition values of files (as logged), which of them it would have read.
PartitionFilter = Callable[[Sequence[Mapping[str, "str | None"]]], Sequence[bool]]


class Requirement(Protocol):
    """A condition on commits that land between the read version and this commit; raises a
    :class:`~headwater.errors.ConcurrentModificationException` when one breaks it."""

    def check(self, winner: Commit) -> None: ...


class Transaction:
    """Actions staged on one read version, committed as exactly one new version."""

    def __init__(
        self,
        log_: DeltaLog,
        snapshot: Snapshot | None,
        operation: Operation,
    ) -> None:
        self.log = log_
        self.snapshot = snapshot
        self.operation = operation
        self.read_version = snapshot.version if snapshot is not None else -1
        self.metrics: dict[str, int | str] = {}
        self.user_metadata: str | None = None
        self.commit_info_extra: dict[str, Any] = {}
        self._metadata: Metadata | None = None
        self._protocol: ProtocolAction | None = None
        self._adds: list[AddFile] = []
        self._removes: list[RemoveFile] = []
        self._cdc: list[AddCDCFile] = []
        self._txns: list[SetTransaction] = []
        self._domains: list[DomainMetadata] = []
        self._read_files: set[str] = set()
        self._read_anything = False  # a predicate or files were read
        self._partition_filters: list[PartitionFilter | None] = []
        self._read_whole_table = False
        self._read_apps: set[str] = set()
        self._requirements: list[Requirement] = []
        self._row_mark: int | None = None  # row ids handed out before this commit's version

    # -- the table as this transaction sees it ----------------------------------------------

    @property
    def metadata(self) -> Metadata:
        if self._metadata is not None:
            return self._metadata
        if self.snapshot is None:
            raise DeltaError(f"No table at {self.log.root} yet: create it in this transaction.")
        return self.snapshot.metadata

    @property
    def protocol(self) -> ProtocolAction:
        if self._protocol is not None:
            return self._protocol
        if self.snapshot is not None:
            return self.snapshot.protocol
        return protocol.required(self.metadata)

    # -- what the result depends on ----------------------------------------------------------

    def read_files(self, paths: Iterable[str], partitions: PartitionFilter | None = None) -> None:
        """The transaction read these files (paths relative to the table root, decoded), and
        would have read files added in the partitions ``partitions`` selects (None: in any
        partition)."""
        self._read_files.update(paths)
        self._read_anything = True
        self._partition_filters.append(partitions)

    def read_whole_table(self) -> None:
        """The result depends on every row: any file added or removed concurrently breaks it."""
        self._read_whole_table = True
        self._read_anything = True

    def app_version(self, app_id: str) -> int | None:
        """The last version ``app_id`` recorded in the read snapshot (None: never); a
        concurrent commit recording a version for it then fails this transaction."""
        self._read_apps.add(app_id)
        if self.snapshot is None:
            return None
        return self.snapshot.table.transaction_version(app_id)

    def require(self, requirement: Requirement) -> None:
        self._requirements.append(requirement)

    # -- what it writes ------------------------------------------------------------------------

    def update_metadata(self, metadata: Metadata) -> None:
        """New schema, partitioning, properties or description; the protocol is upgraded in
        the same commit when the new metadata needs more."""
        old = self.snapshot.metadata if self.snapshot is not None else None
        metadata = row_tracking.named_columns(metadata, old)
        self._metadata = metadata
        current = self.snapshot.protocol if self.snapshot is not None else None
        if self._protocol is not None:
            current = self._protocol
        needed = protocol.required(metadata, current)
        if needed != (self.snapshot.protocol if self.snapshot is not None else None):
            self._protocol = needed

    def update_protocol(self, new: ProtocolAction) -> None:
        self._protocol = new

    def add_files(self, adds: Iterable[AddFile]) -> None:
        self._adds.extend(adds)

    def remove_files(self, removes: Iterable[RemoveFile]) -> None:
        self._removes.extend(removes)

    def add_cdc_files(self, files: Iterable[AddCDCFile]) -> None:
        self._cdc.extend(files)

    def set_app_version(self, app_id: str, version: int) -> None:
        """Record that ``app_id`` reached ``version`` (with this commit's data)."""
        self._txns.append(SetTransaction(app_id, version, now_ms()))

    def set_domain(self, domain: DomainMetadata) -> None:
        self._domains.append(domain)

    @property
    def is_blind_append(self) -> bool:
        """Only new data, written without reading the table (never conflicts with data).
        As delta-spark decides it, metadata and protocol changes do not count: the commit
        creating a table, CREATE TABLE and SET TBLPROPERTIES are blind appends (a
        concurrent metadata change is a conflict of its own, checked first)."""
        return (
            not self._read_anything and not self._removes and all(a.data_change for a in self._adds)
        )

    @property
    def isolation_level(self) -> IsolationLevel:
        """The level this commit is checked at and records: the table's
        ``delta.isolationLevel`` (as this commit leaves it), ``SnapshotIsolation`` when it
        only rearranges files (:func:`~.operations.isolation_level`)."""
        files_only = (
            self._metadata is None
            and self._protocol is None
            and not self._txns
            and not self._domains
        )
        changed = any(a.data_change for a in self._adds) or any(
            r.data_change for r in self._removes
        )
        return isolation_level(
            table_isolation_level(self.metadata.configuration),
            self.operation,
            data_changed=changed,
            file_actions_only=files_only,
        )

    @property
    def changes_schema(self) -> bool:
        """The commit creates the table or changes its schema or partitioning (what a
        catalog mirroring the table must learn)."""
        if self._metadata is None:
            return False
        if self.snapshot is None:
            return True
        old = self.snapshot.metadata
        return (self._metadata.schema_string, tuple(self._metadata.partition_columns)) != (
            old.schema_string,
            tuple(old.partition_columns),
        )

    @property
    def is_empty(self) -> bool:
        return not (
            self._adds
            or self._removes
            or self._cdc
            or self._txns
            or self._domains
            or self._metadata is not None
            or self._protocol is not None
        )

    # -- the commit ----------------------------------------------------------------------------

    def commit(self) -> int:
        """Write the staged actions as one new version; returns it."""
        if self.snapshot is None and self._metadata is None:
            raise DeltaError(f"Creating the table at {self.log.root} needs its metadata.")
        final_protocol = self.protocol
        if self.snapshot is None and self._protocol is None:
            self._protocol = final_protocol
        protocol.check_writable(
            final_protocol,
            self.metadata,
            self.log.root,
            removes=any(r.data_change for r in self._removes),
            adds=bool(self._adds),
        )
        level = self.isolation_level
        store, log_dir = self.log.store()
        version = self.read_version + 1
        if row_tracking.supported(final_protocol):
            self._check_row_ids()
            self._row_mark = row_tracking.high_water_mark(self.log, self.read_version)
        for _ in range(MAX_ATTEMPTS):
            payload = to_json_lines(self._actions(level, version))
            if store.put_if_absent(storage.join(log_dir, f"{version:020d}.json"), payload):
                self._after_commit(version)
                return version
            self._check(self.log.read_commit(version), level)
            log.info("%s: version %d taken by a concurrent commit; trying %d", self.log.root,
                     version, version + 1)  # fmt: skip
            version += 1
        raise ConcurrentWriteException(
            f"Could not commit to {self.log.root}: concurrent commits kept taking the next "
            f"version ({MAX_ATTEMPTS} versions after {self.read_version}). Nothing was "
            "committed; run the operation again."
        )

    def _check_row_ids(self) -> None:
        """Refuse a commit turning row tracking on for rows that stay in the table without
        ids (a backfill, which this writer does not do; a replace removing them is fine)."""
        if self.snapshot is None or row_tracking.supported(self.snapshot.protocol):
            return
        removed = {r.relative_path for r in self._removes}
        if any(f.path not in removed for f in self.snapshot.files):
            row_tracking.refuse_backfill(self.log.root)

    def _actions(self, level: IsolationLevel, version: int) -> list[Action]:
        info = commit_info.build(
            self.operation,
            read_version=self.read_version,
            isolation_level=level,
            is_blind_append=self.is_blind_append,
            metrics=self.metrics,
            user_metadata=self.user_metadata,
            extra=self.commit_info_extra,
        )
        actions: list[Action] = [info]
        if self._protocol is not None:
            actions.append(self._protocol)
        if self._metadata is not None:
            actions.append(self._metadata)
        adds, domains = self._adds, self._domains
        if self._row_mark is not None:  # new files numbered at the version they land on
            adds, moved = row_tracking.assign(adds, self._row_mark, version, self.log.root)
            domains = [*domains, moved] if moved is not None else domains
        return [*actions, *self._txns, *domains, *self._removes, *adds, *self._cdc]

    def _check(self, winner: Commit, level: IsolationLevel) -> None:
        """Fail when the commit that took a version this transaction wanted conflicts with
        what it read or writes (delta-spark's checks, in delta-spark's order)."""
        root = self.log.root
        again = "Nothing was committed; run the operation again on the new version."
        if winner.protocol is not None:
            what = (
                "created the table first"
                if self.snapshot is None
                else "changed the table's protocol"
            )
            raise ProtocolChangedException(
                f"[DELTA_PROTOCOL_CHANGED] A concurrent commit (version {winner.version}) "
                f"{what} at {root}. {again}"
            )
        if winner.metadata is not None:
            raise MetadataChangedException(
                f"[DELTA_METADATA_CHANGED] A concurrent commit (version {winner.version}) "
                f"changed the metadata (schema or properties) of {root}. {again}"
            )
        for txn in winner.transactions:
            if txn.app_id in self._read_apps:
                raise ConcurrentTransactionException(
                    f"[DELTA_CONCURRENT_TRANSACTION] A concurrent commit (version "
                    f"{winner.version}) recorded progress of application {txn.app_id} "
                    f"(version {txn.version}) on {root}, which this operation also records: "
                    f"two writers share one transaction id or checkpoint. {again}"
                )
        self._check_added(winner, level, again)
        removed = {r.relative_path for r in winner.removes}
        read = removed & self._read_files
        if read or (self._read_whole_table and removed):
            path = sorted(read or removed)[0]
            raise ConcurrentDeleteReadException(
                f"[DELTA_CONCURRENT_DELETE_READ] A concurrent commit (version "
                f"{winner.version}) removed {path} from {root}, which this operation read. "
                f"{again}"
            )
        both = removed & {r.relative_path for r in self._removes}
        if both:
            raise ConcurrentDeleteDeleteException(
                f"[DELTA_CONCURRENT_DELETE_DELETE] A concurrent commit (version "
                f"{winner.version}) removed {sorted(both)[0]} from {root}, which this "
                f"operation removes too. {again}"
            )
        ours = {d.domain for d in self._domains}
        clash = sorted(ours & {d.domain for d in winner.domains})
        if clash:
            raise ConcurrentTransactionException(
                f"[DELTA_CONCURRENT_TRANSACTION] A concurrent commit (version "
                f"{winner.version}) changed metadata domain {clash[0]} of {root}, which this "
                f"operation changes too. {again}"
            )
        for requirement in self._requirements:
            requirement.check(winner)
        mark = row_tracking.mark_in(winner)
        if mark is not None and self._row_mark is not None:
            self._row_mark = max(self._row_mark, mark)  # our new files are numbered after

    def _check_added(self, winner: Commit, level: IsolationLevel, again: str) -> None:
        """delta-spark's ``checkForAddedFilesThatShouldHaveBeenReadByCurrentTxn``: which of
        the winner's added files count depends on ``level``."""
        if not self._read_anything or level == "SnapshotIsolation":
            return
        blind_count = level == "Serializable" or self._metadata is not None
        if winner.is_blind_append and not blind_count:
            return
        added = [a for a in winner.adds if a.data_change]
        if not added:
            return
        if self._read_whole_table or any(f is None for f in self._partition_filters):
            hit = added[0]
        else:
            values = [a.partition_values for a in added]
            found = None
            for partition_filter in self._partition_filters:
                assert partition_filter is not None
                matches = list(partition_filter(values))
                if any(matches):
                    found = added[matches.index(True)]
                    break
            if found is None:
                return
            hit = found
        where = f" (partition {dict(hit.partition_values)})" if hit.partition_values else ""
        what = winner.info.operation if winner.info is not None else None
        by = f", {what}" if what else ""
        why = ""
        if winner.is_blind_append and level == "Serializable":
            why = (
                " The table's delta.isolationLevel is Serializable, so appends conflict too: "
                "set it to WriteSerializable to let them through."
            )
        raise ConcurrentAppendException(
            f"[DELTA_CONCURRENT_APPEND] A concurrent commit (version {winner.version}{by}) "
            f"added {hit.relative_path}{where} to {self.log.root}, which this operation would "
            f"have read. {again}{why}"
        )

    def _after_commit(self, version: int) -> None:
        """A checkpoint after every ``delta.checkpointInterval`` commits (versions 99, 199,
        ... by default, where delta-rs puts them) keeps snapshots cheap to load; the commit
        has landed either way, so a failed checkpoint is only logged."""
        try:
            interval = int(self.metadata.configuration.get("delta.checkpointInterval", 0))
        except ValueError:
            interval = 0
        interval = interval if interval > 0 else CHECKPOINT_INTERVAL
        if (version + 1) % interval:
            return
        try:
            table = RsTable(self.log.root, storage_options=self.log.storage_options)
            table.create_checkpoint()
            table.cleanup_metadata()
        except Exception as e:  # the commit stands; readers replay the JSON commits instead
            log.warning("checkpoint of %s at version %d failed: %s", self.log.root, version, e)
