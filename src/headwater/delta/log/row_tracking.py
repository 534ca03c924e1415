"""Row tracking (the Delta protocol's "Row Tracking"): every row keeps one id and the
version that last changed it, however often its file is rewritten.

What the log holds. A table supporting the writer feature ``rowTracking`` (with
``domainMetadata``) numbers rows by file: each add action carries ``baseRowId`` (a row's
fresh id is ``baseRowId`` plus its position in the file) and ``defaultRowCommitVersion``
(the version that added the file). The ``delta.rowTracking`` domain records
``rowIdHighWaterMark``, the highest fresh id handed out, so the next file starts past it.
With ``delta.enableRowTracking = true`` ids are also stable: a row copied to a new file
(UPDATE, DELETE or MERGE rewriting a file, OPTIMIZE) carries its id and commit version in
two hidden columns of that file, named by the table's properties
``delta.rowTracking.materializedRowIdColumnName`` and
``delta.rowTracking.materializedRowCommitVersionColumnName``; a null there means the
fresh value. A row an UPDATE or MERGE changes keeps its id and gets a null commit version
(the rewriting commit's version).

Here: the commit side (:func:`assign` numbers the new files of a commit at the version it
lands on, past the high water mark of the version before it, so a commit retried after a
concurrent one numbers its files again rather than conflicting, as delta-spark resolves
it), and the names of the hidden columns (:func:`named_columns`, given when a table turns
row tracking on). The rewrites fill the hidden columns (:mod:`headwater.delta.dml.row_ids`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import replace

from headwater.delta.log import domains
from headwater.delta.log import protocol as protocols
from headwater.delta.log.actions import AddFile, Commit, DomainMetadata, Metadata, Protocol
from headwater.delta.log.delta_log import DeltaLog
from headwater.errors import DeltaError, UnsupportedFeatureError

FEATURE = "rowTracking"
DOMAIN = "delta.rowTracking"
ENABLE = "delta.enableRowTracking"
ROW_ID_COLUMN = "delta.rowTracking.materializedRowIdColumnName"
ROW_VERSION_COLUMN = "delta.rowTracking.materializedRowCommitVersionColumnName"
BASE_ROW_ID = "baseRowId"
DEFAULT_VERSION = "defaultRowCommitVersion"
NO_ROWS = -1  # the high water mark before any id is handed out


def supported(protocol: Protocol) -> bool:
    """The table numbers its rows: every commit must give new files ids."""
    return FEATURE in protocols.writer_features(protocol)


def enabled(configuration: Mapping[str, str]) -> bool:
    return str(configuration.get(ENABLE, "false")).lower() == "true"


def materialized(configuration: Mapping[str, str]) -> tuple[str, str] | None:
    """The hidden columns (row id, row commit version) of a table whose ids are stable;
    None when row tracking is not on."""
    if not enabled(configuration):
        return None
    row_id, version = configuration.get(ROW_ID_COLUMN), configuration.get(ROW_VERSION_COLUMN)
    if not row_id or not version:
        raise DeltaError(
            f"The table turns row tracking on ({ENABLE}) but its properties lack {ROW_ID_COLUMN} "
            f"or {ROW_VERSION_COLUMN}; its log is damaged. Nothing was written."
        )
    return row_id, version


def named_columns(metadata: Metadata, current: Metadata | None) -> Metadata:
    """``metadata`` with the hidden columns' names, when it turns row tracking on (kept from
    ``current`` when it named them already; new names otherwise, as delta-spark makes
    them)."""
    config = dict(metadata.configuration)
    if not enabled(config) or (config.get(ROW_ID_COLUMN) and config.get(ROW_VERSION_COLUMN)):
        return metadata
    old = dict(current.configuration) if current is not None else {}
    config[ROW_ID_COLUMN] = old.get(ROW_ID_COLUMN) or f"_row-id-col-{uuid.uuid4()}"
    config[ROW_VERSION_COLUMN] = (
        old.get(ROW_VERSION_COLUMN) or f"_row-commit-version-col-{uuid.uuid4()}"
    )
    return replace(metadata, configuration=config)


def refuse_backfill(root: str) -> None:
    """Refuse turning row tracking on for a table that already has rows without ids."""
    raise UnsupportedFeatureError(
        f"Cannot turn on row tracking (writer feature rowTracking) for the table at {root}, which "
        "already has rows: their ids would have to be backfilled, which headwater does not do; "
        "nothing was written. Turn it on with delta-spark, or create a table with the property "
        f"set (CREATE TABLE ... TBLPROPERTIES ('{ENABLE}' = 'true')) and copy the rows into it."
    )


def high_water_mark(dlog: DeltaLog, version: int) -> int:
    """The highest row id handed out by ``version`` (:data:`NO_ROWS` before any)."""
    if version < 0:
        return NO_ROWS
    return _mark(domains.latest(dlog, version, DOMAIN))


def mark_in(commit: Commit) -> int | None:
    """The high water mark a (concurrent) commit recorded, None when it recorded none."""
    found = [d for d in commit.domains if d.domain == DOMAIN]
    return _mark(found[-1].to_json()["domainMetadata"]) if found else None


def _mark(domain: Mapping | None) -> int:
    if domain is None or domain.get("removed"):
        return NO_ROWS
    config = json.loads(domain.get("configuration") or "{}")
    return int(config.get("rowIdHighWaterMark", NO_ROWS))


def assign(
    adds: Iterable[AddFile], mark: int, version: int, root: str
) -> tuple[list[AddFile], DomainMetadata | None]:
    """The adds of a commit landing at ``version`` with ids: a new file (no ``baseRowId``)
    starts past ``mark`` and gets ``version`` as its default commit version; a file
    re-added (a new deletion vector) keeps both. Also the domain action moving the high
    water mark (None: no new ids)."""
    out: list[AddFile] = []
    next_id = mark + 1
    for add in adds:
        extra = dict(add.extra)
        if BASE_ROW_ID not in extra:
            rows = add.num_records
            if rows is None:
                raise DeltaError(
                    f"The new file {add.path} of the table at {root} has no row count in its "
                    "statistics, which row tracking needs to number its rows. Nothing was "
                    "committed."
                )
            extra[BASE_ROW_ID] = next_id
            next_id += rows
        extra.setdefault(DEFAULT_VERSION, version)
        out.append(replace(add, extra=extra))
    if next_id == mark + 1:
        return out, None
    config = json.dumps({"rowIdHighWaterMark": next_id - 1}, separators=(",", ":"))
    return out, DomainMetadata(DOMAIN, config)
