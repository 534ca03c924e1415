"""The rows a range of commits really changed, on tables with row tracking, derived
without the change data feed: what a copy-on-write rewrite removed and added, less the
rows it only copied.

Without the feed, a commit's change is read from its actions: every row of a file it
removed is taken back, every row of a file it added is added (:mod:`.change_feed`). A
rewrite (UPDATE, DELETE, MERGE) copies most of those rows unchanged. On a table with row
tracking each row keeps its id through the copy (:mod:`headwater.delta.log.row_tracking`),
so a removed row and an added row with the same id and the same values are one row left
as it was: both are dropped, and what remains is what the change data feed would hold
(an updated row's old image as a delete, its new image as an insert). The ids are read
with the rows (:func:`with_row_ids` tells each file's task its ``baseRowId``); the pairs
are cancelled by counting each distinct (id, values) row, added +1 and removed -1 (a
multiset difference: two equal rows cancel at most two).
"""

from __future__ import annotations

import dataclasses
from urllib.parse import unquote

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, MapType, StructType

from headwater import storage
from headwater.delta.files.arrow_read import FileTask
from headwater.delta.log import replay, row_tracking
from headwater.delta.log.delta_log import DeltaLog, Snapshot

CHANGE_TYPE = "_change_type"
REMOVED = ("delete", "update_preimage")
ADDED = ("insert", "update_postimage")
_NET = "__hw_net"


def row_id_column(snapshot: Snapshot) -> str | None:
    """The column a derivation reads the rows' ids into (the table's hidden row id
    column), when ids can pair removed and added rows: the table has row tracking on, no
    column mapping, and no column EXCEPT ALL cannot compare (a map)."""
    names = row_tracking.materialized(snapshot.configuration)
    if names is None or snapshot.physical_schema is not None:
        return None
    if any(_has_map(f.dataType) for f in snapshot.schema):
        return None
    return names[0]


def _has_map(kind: DataType) -> bool:
    if isinstance(kind, MapType):
        return True
    if isinstance(kind, ArrayType):
        return _has_map(kind.elementType)
    if isinstance(kind, StructType):
        return any(_has_map(f.dataType) for f in kind)
    return False


def with_row_ids(
    dlog: DeltaLog, version: int, actions: list[dict], tasks: list[FileTask], column: str
) -> list[FileTask]:
    """``tasks`` (commit ``version``'s changes, from ``actions``) told their files'
    ``baseRowId``: the add's, and for a removed file the remove's or, where the remove
    does not repeat it, the add that made the file live before the commit. A file without
    one (written before row tracking) reads its rows with no id."""
    bases: dict[str, int] = {}
    missing: set[str] = set()
    for action in actions:
        for kind in ("add", "remove"):
            found = action.get(kind)
            if found is None:
                continue
            path = unquote(found["path"])
            base = found.get(row_tracking.BASE_ROW_ID)
            if base is not None:
                bases.setdefault(storage.join(dlog.root, path), int(base))
            elif kind == "remove":
                missing.add(path)
    if missing and version > 0:
        for path, add in replay.live_adds(dlog, version - 1, missing).items():
            base = add.extra.get(row_tracking.BASE_ROW_ID)
            if base is not None:
                bases.setdefault(storage.join(dlog.root, path), int(base))
    return [
        dataclasses.replace(t, row_ids=(column, bases[t.path]))
        if t.path in bases and t.change is not None and t.change[0] is not None
        else t
        for t in tasks
    ]


def net(changes: DataFrame, column: str) -> DataFrame:
    """``changes`` (derived, with the rows' ids in ``column``) less every removed row that
    an added row with the same id and values restores; without the id column. What is
    left is typed ``delete`` or ``insert`` and keeps no commit version or time (a take-back
    reads neither). One pass over the files: each distinct row (id and values) is counted,
    added rows +1 and removed ones -1, and repeated as often as its count says."""
    cdf = {CHANGE_TYPE, "_commit_version", "_commit_timestamp"}
    data = [c for c in changes.columns if c not in cdf]
    added = F.when(F.col(CHANGE_TYPE).isin(*ADDED), F.lit(1)).otherwise(F.lit(-1))
    counted = (
        changes.select(*[F.col(f"`{c}`") for c in data], added.alias(_NET))
        .groupBy(*[F.col(f"`{c}`") for c in data])
        .agg(F.sum(_NET).cast("int").alias(_NET))
        .where(F.col(_NET) != 0)
    )
    repeated = counted.withColumn(_NET, F.explode(F.array_repeat(F.col(_NET), F.abs(_NET))))
    kind = F.when(F.col(_NET) > 0, F.lit("insert")).otherwise(F.lit("delete"))
    fields = {f.name: f.dataType for f in changes.schema}
    return repeated.select(
        *[
            F.col(f"`{c}`")
            if c in data
            else (kind.alias(c) if c == CHANGE_TYPE else F.lit(None).cast(fields[c]).alias(c))
            for c in changes.columns
            if c != column
        ]
    )
