"""Committing written files as one Delta transaction, with the checks delta-rs leaves to us.

A write is planned once (files already written, their add actions built) and committed
here: the table is created if missing, schema changes are applied, streaming transaction
ids make a re-run batch a no-op, and conflicts with concurrent writers are retried when the
write's meaning does not depend on what changed (appends, full overwrites) and reported
otherwise.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError
from deltalake.exceptions import DeltaError as RsDeltaError
from deltalake.transaction import (
    AddAction,
    CommitProperties,
    RemoveAction,
    Transaction,
    create_table_with_add_actions,
)
from pyspark.sql.types import StructType

from headwater.delta import schema as schemas
from headwater.delta.dv_descriptors import removed_vectors
from headwater.delta.log import DeltaLog, Snapshot
from headwater.errors import (
    ConcurrentModificationError,
    SchemaMismatchError,
)

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 10


@dataclass
class CommitRequest:
    """What one write wants to commit.

    ``mode`` is ``append``, ``overwrite`` (every live file removed) or ``replace`` (the files
    chosen by ``select_removes`` removed). ``schema`` is the schema of the added files;
    ``schema_mode`` says whether it may add columns (``merge``) or replace the table schema
    (``overwrite``).
    """

    adds: list[AddAction]
    schema: StructType
    partition_by: list[str]
    mode: str = "append"
    schema_mode: str = "enforce"
    select_removes: Callable[[Snapshot], list[RemoveAction]] | None = None
    read_version: int | None = None
    txn: tuple[str, int] | None = None
    metadata: dict = field(default_factory=dict)
    configuration: dict[str, str] | None = None
    base: DeltaTable | None = None  # the table as the write read it (saves a reload)
    # Called as ``check_intervening(read_version, version)`` before committing on top of
    # ``version`` when commits landed after ``read_version`` (-1: the table did not exist);
    # raise to abort. With it set, delta-rs may not rebase the commit over later versions by
    # itself, so every intervening commit passes this check (COPY INTO's load record).
    check_intervening: Callable[[int, int], None] | None = None


@dataclass
class CommitResult:
    version: int | None  # None when the transaction was already committed (skipped)
    created: bool = False
    schema_changed: bool = False


def commit(log_: DeltaLog, req: CommitRequest) -> CommitResult:
    last_error: Exception | None = None
    for attempt in range(MAX_ATTEMPTS):
        if attempt:
            time.sleep(min(0.05 * 2**attempt, 1.0))
        table = req.base if attempt == 0 and req.base is not None else None
        if table is None and not log_.exists():
            log_.check_log_not_corrupt()
            try:
                return _create(log_, req)
            except (RsDeltaError, OSError) as e:
                if not log_.exists():
                    raise
                last_error = e  # somebody created it first: commit into theirs
                continue
        if table is None:
            table = DeltaTable(log_.root, storage_options=log_.storage_options)
        if req.txn is not None:
            done = table.transaction_version(req.txn[0])
            if done is not None and done >= req.txn[1]:
                log.info("transaction %s already committed at version %s: skipped", req.txn, done)
                return CommitResult(version=None)
        try:
            return _commit_existing(log_, table, req)
        except CommitFailedError as e:
            last_error = e
            if req.mode == "replace":
                raise ConcurrentModificationError(
                    f"A concurrent commit to {log_.root} changed the files this operation (MERGE, "
                    f"UPDATE, DELETE, OPTIMIZE or replaceWhere) read: {e}. Nothing was committed; "
                    "run it again."
                ) from e
            log.info("commit conflict on %s (attempt %d): %s", log_.root, attempt + 1, e)
    raise ConcurrentModificationError(
        f"Could not commit to {log_.root} after {MAX_ATTEMPTS} attempts because of concurrent "
        f"commits ({last_error}). Nothing was committed; run the write again."
    )


def _create(log_: DeltaLog, req: CommitRequest) -> CommitResult:
    schema = schemas.as_nullable(req.schema)
    schemas.check_writable(schema, req.partition_by)
    configuration = req.configuration or {}
    if configuration.get("delta.enableDeletionVectors", "false").lower() == "true":
        from headwater.delta import table_features

        table_features.create_with_features(
            log_,
            schema,
            req.partition_by,
            configuration,
            req.adds,
            _properties(req).custom_metadata,
        )
        return CommitResult(version=0, created=True, schema_changed=True)
    create_table_with_add_actions(
        log_.root,
        schemas.to_delta(schema),
        req.adds,
        mode="error",
        partition_by=req.partition_by,
        configuration=req.configuration,
        storage_options=log_.storage_options,
        commit_properties=_properties(req),
    )
    return CommitResult(version=0, created=True, schema_changed=True)


def _commit_existing(log_: DeltaLog, table: DeltaTable, req: CommitRequest) -> CommitResult:
    snap = Snapshot(log_.root, table.version(), table)
    if req.mode == "replace" and req.read_version is not None and snap.version != req.read_version:
        raise CommitFailedError(
            f"the table moved from version {req.read_version} to {snap.version}"
        )
    current = snap.schema
    schema_changed = False
    if req.schema_mode == "overwrite":
        target = schemas.as_nullable(req.schema)
        schema_changed = target != current or req.partition_by != snap.partition_columns
        if req.mode != "overwrite":
            raise SchemaMismatchError("overwriteSchema=true needs mode('overwrite').")
    else:
        if req.partition_by and [c.lower() for c in req.partition_by] != [
            c.lower() for c in snap.partition_columns
        ]:
            raise SchemaMismatchError(
                f"The table at {log_.root} is partitioned by {snap.partition_columns or 'nothing'}, "
                f"not {req.partition_by}. Omit partitionBy, or overwrite with overwriteSchema=true."
            )
        reconciled = schemas.reconcile(current, req.schema, merge=req.schema_mode == "merge")
        target = reconciled.schema
        if reconciled.added:
            if any("." in name for name in reconciled.added):
                raise SchemaMismatchError(
                    "mergeSchema cannot add fields inside an existing struct column yet ("
                    + ", ".join(n for n in reconciled.added if "." in n)
                    + "); add a top-level column, or overwrite with overwriteSchema=true."
                )
            new_fields = StructType([f for f in target if f.name in reconciled.added])
            table.alter.add_columns(list(schemas.to_delta(new_fields).fields))
            table = DeltaTable(log_.root, storage_options=log_.storage_options)
            schema_changed = True
    if req.schema_mode == "overwrite" and req.partition_by != snap.partition_columns:
        # Only a replace of the table metadata can change partitioning (delta-rs keeps the
        # table id and writes the removes of every live file in the same commit).
        props = _properties(req)
        create_table_with_add_actions(
            log_.root,
            schemas.to_delta(target),
            req.adds,
            mode="overwrite",
            partition_by=req.partition_by,
            configuration=req.configuration or snap.configuration,
            storage_options=log_.storage_options,
            commit_properties=props,
        )
        return CommitResult(version=_committed_version(log_, props), schema_changed=True)
    partition_by = req.partition_by if req.schema_mode == "overwrite" else snap.partition_columns
    actions: list = list(req.adds)
    mode = "append"
    if req.mode == "overwrite":
        mode = "overwrite"
    elif req.mode == "replace" and req.select_removes is not None:
        current_snap = Snapshot(log_.root, table.version(), table)
        removes = req.select_removes(current_snap)
        vectors = removed_vectors(log_, current_snap, removes)
        if vectors:  # delta-rs's RemoveAction cannot name a file's deletion vector
            from headwater.delta import raw_commit

            version = raw_commit.commit_actions(
                log_,
                current_snap,
                adds=req.adds,
                removes=removes,
                cdc=[],
                operation=str(req.metadata.get("headwaterOperation", "WRITE")),
                info=dict(req.metadata),
                txn=req.txn,
                removed_vectors=vectors,
            )
            return CommitResult(version=version, schema_changed=schema_changed)
        actions += removes
    if req.check_intervening is not None:
        read = -1 if req.read_version is None else req.read_version
        if table.version() > read:
            req.check_intervening(read, table.version())
    props = _properties(req)
    table.create_write_transaction(
        actions, mode, schemas.to_delta(target), partition_by=partition_by, commit_properties=props
    )
    return CommitResult(
        version=_committed_version(log_, props, table), schema_changed=schema_changed
    )


def _committed_version(
    log_: DeltaLog, props: CommitProperties, table: DeltaTable | None = None
) -> int | None:
    """The version our commit landed at, found by its commit id (others may follow it)."""
    marker = props.custom_metadata["headwaterCommitId"]
    if table is None:
        table = DeltaTable(log_.root, storage_options=log_.storage_options)
    else:
        table.update_incremental()
    latest = table.version()
    for version in range(latest, max(latest - 50, -1), -1):
        info = next(
            (a["commitInfo"] for a in log_.commit_actions(version) if "commitInfo" in a), {}
        )
        if info.get("headwaterCommitId") == marker:
            return version
    return latest


def _properties(req: CommitRequest) -> CommitProperties:
    txns = [Transaction(req.txn[0], req.txn[1])] if req.txn is not None else None
    metadata = {**req.metadata, "headwaterCommitId": uuid.uuid4().hex}
    retries = 0 if req.check_intervening is not None else None  # a conflict comes back here
    return CommitProperties(
        custom_metadata=metadata, app_transactions=txns, max_commit_retries=retries
    )
