"""Delta log actions as typed values: what one line of a commit file holds.

Every commit headwater writes is built from these and serialized by :func:`to_json_lines`;
commits other writers made are parsed back by :func:`parse` (conflict checks, the actions
of a version). An action read from the log keeps the fields this module does not model
in ``extra``, so a file re-added with a new deletion vector repeats what the log had
(``baseRowId``, ``clusteringProvider``, ...).

Paths are kept as the log spells them: URL-encoded, relative to the table root (or an
absolute URI). :func:`encode_path` turns a relative path on disk into that form, as
delta-rs and delta-spark encode it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import quote, unquote

DeletionVectorDescriptor = Mapping[str, Any]  # storageType, pathOrInlineDv, offset, ...


def now_ms() -> int:
    return int(time.time() * 1000)


def encode_path(relative: str) -> str:
    """The log's spelling of a file's path relative to the table root."""
    return quote(relative, safe="/=")


def decode_path(logged: str) -> str:
    """The path on disk (relative to the table root) of a path as the log spells it."""
    return unquote(logged)


def _without_nulls(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


@dataclass(frozen=True)
class AddFile:
    """A data file that becomes part of the table."""

    path: str  # as logged (see encode_path)
    partition_values: Mapping[str, str | None]
    size: int
    modification_time: int
    data_change: bool = True
    stats: str | None = None
    tags: Mapping[str, str] | None = None
    deletion_vector: DeletionVectorDescriptor | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def relative_path(self) -> str:
        return decode_path(self.path)

    @property
    def num_records(self) -> int | None:
        """Rows in the file by its stats (before its deletion vector), None when unknown."""
        if not self.stats:
            return None
        n = json.loads(self.stats).get("numRecords")
        return None if n is None else int(n)

    def remove(self, data_change: bool = True, timestamp: int | None = None) -> RemoveFile:
        """The action that takes this file out of the table (naming its deletion vector, as
        readers pair adds and removes by path and vector)."""
        return RemoveFile(
            path=self.path,
            deletion_timestamp=now_ms() if timestamp is None else timestamp,
            data_change=data_change,
            partition_values=self.partition_values,
            size=self.size,
            tags=self.tags,
            deletion_vector=self.deletion_vector,
        )

    def with_vector(self, descriptor: DeletionVectorDescriptor) -> AddFile:
        """The same file re-added with a new deletion vector; its stats no longer bound the
        live rows tightly (a deleted row may hold the min or max)."""
        stats = self.stats
        if stats:
            values = json.loads(stats)
            values["tightBounds"] = False
            stats = json.dumps(values, separators=(",", ":"))
        return replace(self, deletion_vector=descriptor, stats=stats, data_change=True)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            **self.extra,
            "path": self.path,
            "partitionValues": dict(self.partition_values),
            "size": self.size,
            "modificationTime": self.modification_time,
            "dataChange": self.data_change,
        }
        if self.stats is not None:
            out["stats"] = self.stats
        if self.tags:
            out["tags"] = dict(self.tags)
        if self.deletion_vector is not None:
            out["deletionVector"] = _without_nulls(self.deletion_vector)
        return {"add": out}

    @classmethod
    def from_json(cls, add: Mapping[str, Any]) -> AddFile:
        known = {"path", "partitionValues", "size", "modificationTime", "dataChange"}
        known |= {"stats", "tags", "deletionVector"}
        return cls(
            path=add["path"],
            partition_values=dict(add.get("partitionValues") or {}),
            size=int(add.get("size") or 0),
            modification_time=int(add.get("modificationTime") or 0),
            data_change=bool(add.get("dataChange", True)),
            stats=add.get("stats"),
            tags=add.get("tags") or None,
            deletion_vector=_without_nulls(add["deletionVector"])
            if add.get("deletionVector")
            else None,
            extra=_without_nulls({k: v for k, v in add.items() if k not in known}),
        )


@dataclass(frozen=True)
class RemoveFile:
    """A data file taken out of the table (its data stays until VACUUM)."""

    path: str  # as logged
    deletion_timestamp: int
    data_change: bool = True
    partition_values: Mapping[str, str | None] | None = None
    size: int | None = None
    tags: Mapping[str, str] | None = None
    deletion_vector: DeletionVectorDescriptor | None = None

    @property
    def relative_path(self) -> str:
        return decode_path(self.path)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "deletionTimestamp": self.deletion_timestamp,
            "dataChange": self.data_change,
            "extendedFileMetadata": self.partition_values is not None,
        }
        if self.partition_values is not None:
            out["partitionValues"] = dict(self.partition_values)
        if self.size is not None:
            out["size"] = self.size
        if self.tags:
            out["tags"] = dict(self.tags)
        if self.deletion_vector is not None:
            out["deletionVector"] = _without_nulls(self.deletion_vector)
        return {"remove": out}

    @classmethod
    def from_json(cls, remove: Mapping[str, Any]) -> RemoveFile:
        return cls(
            path=remove["path"],
            deletion_timestamp=int(remove.get("deletionTimestamp") or 0),
            data_change=bool(remove.get("dataChange", True)),
            partition_values=remove.get("partitionValues"),
            size=remove.get("size"),
            tags=remove.get("tags") or None,
            deletion_vector=_without_nulls(remove["deletionVector"])
            if remove.get("deletionVector")
            else None,
        )


@dataclass(frozen=True)
class AddCDCFile:
    """A file of the change data feed: the rows a commit changed, with ``_change_type``."""

    path: str  # as logged
    partition_values: Mapping[str, str | None]
    size: int
    tags: Mapping[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "partitionValues": dict(self.partition_values),
            "size": self.size,
            "dataChange": False,
        }
        if self.tags:
            out["tags"] = dict(self.tags)
        return {"cdc": out}


@dataclass(frozen=True)
class Metadata:
    """The table's identity, schema, partitioning and properties."""

    id: str
    schema_string: str
    partition_columns: Sequence[str] = ()
    configuration: Mapping[str, str] = field(default_factory=dict)
    name: str | None = None
    description: str | None = None
    created_time: int | None = None
    format_provider: str = "parquet"
    format_options: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "metaData": {
                "id": self.id,
                "name": self.name,
                "description": self.description,
                "format": {"provider": self.format_provider, "options": dict(self.format_options)},
                "schemaString": self.schema_string,
                "partitionColumns": list(self.partition_columns),
                "configuration": dict(self.configuration),
                "createdTime": self.created_time,
            }
        }

    @classmethod
    def from_json(cls, meta: Mapping[str, Any]) -> Metadata:
        fmt = meta.get("format") or {}
        return cls(
            id=str(meta["id"]),
            schema_string=meta["schemaString"],
            partition_columns=tuple(meta.get("partitionColumns") or ()),
            configuration=dict(meta.get("configuration") or {}),
            name=meta.get("name"),
            description=meta.get("description"),
            created_time=meta.get("createdTime"),
            format_provider=fmt.get("provider") or "parquet",
            format_options=dict(fmt.get("options") or {}),
        )


@dataclass(frozen=True)
class Protocol:
    """What a reader and a writer must support to use the table."""

    min_reader_version: int
    min_writer_version: int
    reader_features: frozenset[str] | None = None  # None below reader version 3
    writer_features: frozenset[str] | None = None  # None below writer version 7

    @property
    def all_writer_features(self) -> frozenset[str]:
        return self.writer_features or frozenset()

    @property
    def all_reader_features(self) -> frozenset[str]:
        return self.reader_features or frozenset()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "minReaderVersion": self.min_reader_version,
            "minWriterVersion": self.min_writer_version,
        }
        if self.reader_features is not None:
            out["readerFeatures"] = sorted(self.reader_features)
        if self.writer_features is not None:
            out["writerFeatures"] = sorted(self.writer_features)
        return {"protocol": out}

    @classmethod
    def from_json(cls, protocol: Mapping[str, Any]) -> Protocol:
        readers, writers = protocol.get("readerFeatures"), protocol.get("writerFeatures")
        return cls(
            min_reader_version=int(protocol["minReaderVersion"]),
            min_writer_version=int(protocol["minWriterVersion"]),
            reader_features=None if readers is None else frozenset(readers),
            writer_features=None if writers is None else frozenset(writers),
        )


@dataclass(frozen=True)
class SetTransaction:
    """An application's progress (``appId`` reached ``version``): what makes a replayed
    streaming batch or ``txnAppId``/``txnVersion`` write a no-op."""

    app_id: str
    version: int
    last_updated: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"appId": self.app_id, "version": self.version}
        if self.last_updated is not None:
            out["lastUpdated"] = self.last_updated
        return {"txn": out}


@dataclass(frozen=True)
class DomainMetadata:
    """Configuration of a named metadata domain (clustering, a writer's own state)."""

    domain: str
    configuration: str
    removed: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "domainMetadata": {
                "domain": self.domain,
                "configuration": self.configuration,
                "removed": self.removed,
            }
        }


@dataclass(frozen=True)
class CommitInfo:
    """Provenance of a commit: the operation, its parameters and metrics (see
    :mod:`headwater.delta.log.operations`, which builds it)."""

    values: Mapping[str, Any]

    @property
    def operation(self) -> str | None:
        return self.values.get("operation")

    @property
    def is_blind_append(self) -> bool:
        return bool(self.values.get("isBlindAppend", False))

    def to_json(self) -> dict[str, Any]:
        return {"commitInfo": dict(self.values)}


Action = (
    AddFile
    | RemoveFile
    | AddCDCFile
    | Metadata
    | Protocol
    | SetTransaction
    | DomainMetadata
    | CommitInfo
)


def to_json_lines(actions: Iterable[Action]) -> bytes:
    """A commit file's contents: one JSON object per action, commitInfo first."""
    ordered = sorted(actions, key=lambda a: not isinstance(a, CommitInfo))
    return (
        "\n".join(json.dumps(a.to_json(), separators=(",", ":")) for a in ordered) + "\n"
    ).encode()


@dataclass
class Commit:
    """The actions of one logged commit, by kind (what conflict checks look at)."""

    version: int
    adds: list[AddFile] = field(default_factory=list)
    removes: list[RemoveFile] = field(default_factory=list)
    metadata: Metadata | None = None
    protocol: Protocol | None = None
    transactions: list[SetTransaction] = field(default_factory=list)
    domains: list[DomainMetadata] = field(default_factory=list)
    info: CommitInfo | None = None

    @property
    def is_blind_append(self) -> bool:
        return self.info is not None and self.info.is_blind_append


def parse(version: int, lines: Iterable[Mapping[str, Any]]) -> Commit:
    """The typed actions of one commit (its JSON lines, already decoded)."""
    commit = Commit(version)
    for line in lines:
        if "add" in line:
            commit.adds.append(AddFile.from_json(line["add"]))
        elif "remove" in line:
            commit.removes.append(RemoveFile.from_json(line["remove"]))
        elif "metaData" in line:
            commit.metadata = Metadata.from_json(line["metaData"])
        elif "protocol" in line:
            commit.protocol = Protocol.from_json(line["protocol"])
        elif "txn" in line:
            txn = line["txn"]
            commit.transactions.append(
                SetTransaction(txn["appId"], int(txn["version"]), txn.get("lastUpdated"))
            )
        elif "domainMetadata" in line:
            d = line["domainMetadata"]
            commit.domains.append(
                DomainMetadata(d["domain"], d.get("configuration", ""), bool(d.get("removed")))
            )
        elif "commitInfo" in line:
            commit.info = CommitInfo(line["commitInfo"])
    return commit
