"""The ``commitInfo`` of every commit, shaped as delta-spark writes it.

Other engines show a table's history from these fields alone: ``operation`` (``WRITE``,
``MERGE``, ``STREAMING UPDATE``, ...), ``operationParameters`` (string values; lists and
maps as JSON text, as delta-spark encodes them), ``operationMetrics`` (counts as strings),
``readVersion``, ``isolationLevel`` and ``isBlindAppend``. An :class:`Operation` names what
a transaction does; :func:`build` adds what the transaction knows at commit time.

The isolation level a commit is checked at, and records, is the table's
``delta.isolationLevel`` (:func:`table_isolation_level`), lowered to ``SnapshotIsolation``
for commits that change no data (:func:`isolation_level`), as delta-spark does.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import metadata as package_metadata
from typing import Any, Literal

from headwater.delta.log.actions import CommitInfo, now_ms
from headwater.errors import DeltaError

IsolationLevel = Literal["Serializable", "WriteSerializable", "SnapshotIsolation"]
ISOLATION_PROPERTY = "delta.isolationLevel"
DEFAULT_ISOLATION: IsolationLevel = "WriteSerializable"
# What a table may declare (SnapshotIsolation is only ever chosen per commit).
TABLE_ISOLATION_LEVELS: tuple[IsolationLevel, ...] = ("Serializable", "WriteSerializable")
# Operations that change the table's rows (delta-spark's ``Operation.changesData``): under
# WriteSerializable, one of these stays at that level even when it commits no data change.
CHANGES_DATA = frozenset(
    {
        "WRITE",
        "STREAMING UPDATE",
        "DELETE",
        "TRUNCATE",
        "CONVERT",
        "MERGE",
        "UPDATE",
        "CREATE TABLE AS SELECT",
        "CREATE OR REPLACE TABLE",
        "CREATE OR REPLACE TABLE AS SELECT",
        "REPLACE TABLE",
        "REPLACE TABLE AS SELECT",
        "RESTORE",
        "CLONE",
    }
)
_SAVE_MODES = {
    "append": "Append",
    "overwrite": "Overwrite",
    "error": "ErrorIfExists",
    "errorifexists": "ErrorIfExists",
    "ignore": "Ignore",
}


@dataclass(frozen=True)
class Operation:
    """What a commit does, for its history entry."""

    name: str
    parameters: Mapping[str, Any] = field(default_factory=dict)

    @property
    def changes_data(self) -> bool:
        return self.name in CHANGES_DATA

    # -- the operations headwater commits, with delta-spark's parameter names ---------------

    @classmethod
    def write(
        cls, mode: str, partition_by: Sequence[str] = (), predicate: str | None = None
    ) -> Operation:
        params: dict[str, Any] = {"mode": _SAVE_MODES[mode], "partitionBy": list(partition_by)}
        if predicate is not None:
            params["predicate"] = [predicate]
        return cls("WRITE", params)

    @classmethod
    def streaming_update(cls, output_mode: str, query_id: str, epoch_id: int) -> Operation:
        mode = "Overwrite" if output_mode.lower() == "complete" else "Append"
        return cls(
            "STREAMING UPDATE",
            {
                "outputMode": output_mode.capitalize(),
                "queryId": query_id,
                "epochId": str(epoch_id),
                "mode": mode,  # how the batch met the table (complete mode replaces it)
            },
        )

    @classmethod
    def create_table(
        cls,
        partition_by: Sequence[str],
        properties: Mapping[str, str],
        description: str | None,
        as_select: bool = False,
        replace: bool = False,
        or_create: bool = True,
    ) -> Operation:
        """``replace`` without ``or_create`` is ``REPLACE TABLE`` (the table must exist)."""
        if replace:
            name = "CREATE OR REPLACE TABLE" if or_create else "REPLACE TABLE"
        else:
            name = "CREATE TABLE"
        name += " AS SELECT" if as_select else ""
        return cls(
            name,
            {
                "partitionBy": list(partition_by),
                "description": description,
                "properties": dict(properties),
                "clusterBy": [],  # the clustering columns, where a create stages them
                "isManaged": "false",
            },
        )

    @classmethod
    def predicate(cls, name: str, condition: str | None) -> Operation:
        """DELETE / UPDATE: the predicate as delta-spark lists it."""
        return cls(name, {"predicate": [condition if condition is not None else "true"]})

    @classmethod
    def merge(cls, condition: str, clauses: Sequence[tuple[str, str, str | None]]) -> Operation:
        """``clauses``: (kind, action, condition) with kind matched / not_matched /
        not_matched_by_source and action update / delete / insert."""

        def listed(kind: str) -> list[dict[str, str]]:
            out = []
            for k, action, cond in clauses:
                if k == kind:
                    out.append({"actionType": action, **({"predicate": cond} if cond else {})})
            return out

        return cls(
            "MERGE",
            {
                "predicate": [condition],
                "matchedPredicates": listed("matched"),
                "notMatchedPredicates": listed("not_matched"),
                "notMatchedBySourcePredicates": listed("not_matched_by_source"),
            },
        )

    @classmethod
    def optimize(cls, predicate: str | None, z_order_by: Sequence[str] = ()) -> Operation:
        return cls(
            "OPTIMIZE",
            {"predicate": [predicate] if predicate else [], "zOrderBy": list(z_order_by)},
        )

    @classmethod
    def restore(cls, version: int, timestamp: str | None) -> Operation:
        return cls("RESTORE", {"version": version, "timestamp": timestamp})


def table_isolation_level(configuration: Mapping[str, str]) -> IsolationLevel:
    """The table's ``delta.isolationLevel`` (any case, as delta-spark reads it), by default
    ``WriteSerializable``."""
    value = configuration.get(ISOLATION_PROPERTY)
    if value is None:
        return DEFAULT_ISOLATION
    for level in TABLE_ISOLATION_LEVELS:
        if level.lower() == str(value).strip().lower():
            return level
    raise DeltaError(
        f"[DELTA_INVALID_ISOLATION_LEVEL] Invalid isolation level '{value}' in "
        f"{ISOLATION_PROPERTY}: set it to Serializable or WriteSerializable."
    )


def isolation_level(
    table_level: IsolationLevel,
    operation: Operation,
    *,
    data_changed: bool,
    file_actions_only: bool,
) -> IsolationLevel:
    """The level a commit is checked at (delta-spark's ``getIsolationLevelToUse``). A commit
    of file actions that change no data (OPTIMIZE's rewrite, an empty DML) is lowered to
    ``SnapshotIsolation``: files appended meanwhile cannot change its result, so they do not
    fail it. Under ``WriteSerializable`` only when the operation is not one that changes
    data; any other action (metadata, protocol, application versions, domains) keeps the
    table's level."""
    if not file_actions_only or data_changed:
        return table_level
    if table_level == "WriteSerializable" and operation.changes_data:
        return table_level
    return "SnapshotIsolation"


def encode_parameters(parameters: Mapping[str, Any]) -> dict[str, str | None]:
    """String values stay; lists, maps and numbers become JSON text; booleans true/false."""
    out: dict[str, str | None] = {}
    for key, value in parameters.items():
        if value is None or isinstance(value, str):
            out[key] = value
        elif isinstance(value, bool):
            out[key] = "true" if value else "false"
        else:
            out[key] = json.dumps(value, separators=(",", ":"))
    return out


@lru_cache(maxsize=1)
def engine_info() -> str:
    def version(name: str) -> str:
        try:
            return package_metadata.version(name)
        except package_metadata.PackageNotFoundError:
            return "unknown"

    return f"headwater/{version('headwater')} Apache-Spark/{version('pyspark')}"


def build(
    operation: Operation,
    *,
    read_version: int | None,
    isolation_level: IsolationLevel,
    is_blind_append: bool,
    metrics: Mapping[str, int | str] | None = None,
    user_metadata: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> CommitInfo:
    info: dict[str, Any] = {
        "timestamp": now_ms(),
        "operation": operation.name,
        "operationParameters": encode_parameters(operation.parameters),
    }
    if read_version is not None and read_version >= 0:
        info["readVersion"] = read_version
    info["isolationLevel"] = isolation_level
    info["isBlindAppend"] = is_blind_append
    if metrics:
        info["operationMetrics"] = {k: str(v) for k, v in metrics.items()}
    if user_metadata is not None:
        info["userMetadata"] = user_metadata
    info["engineInfo"] = engine_info()
    info["txnId"] = str(uuid.uuid4())
    info.update(extra or {})
    return CommitInfo(info)
