"""The one interface the rooms above the engines reach a Delta table through.

``api.Table`` (headwater's engine) and ``DeltaSparkTable`` (delta-spark) both have the
methods of :class:`TableDoor` with these meanings; ``api.table``/``api.for_path``/
``api.find`` hand out the session's. Auto Loader, COPY INTO, the SQL front, the adapter and
the pipelines import this module, :mod:`headwater.api` and the ``delta`` package's faces
(``tables``, ``exceptions``, ``options``, ``names``) and nothing else of an engine: an
import contract in ``pyproject.toml`` keeps it so. A change inside an engine stops here.

What the door offers:

* **Reads of the log** (:meth:`TableDoor.log`, :func:`table_log`): versions, each commit's
  actions, a version's live files and statistics, the change data feed's files, read
  through one reader for both engines, since the Delta protocol makes a log the same to
  every reader (:mod:`headwater.engines.table_log`). The values are typed by the
  read-only views below (:class:`SnapshotView`, :class:`CommitView`).
* **Changes**, each engine's own: writes, streams, MERGE/UPDATE/DELETE, DDL, maintenance,
  and the three writes of rows the driver holds or a caller records: :meth:`append_arrow`
  (the event log), :meth:`overwrite_arrow` (a view refreshed in Arrow) and
  :meth:`append_recorded` (COPY INTO's load, with its record in the same commit).
* **What differs between the engines**, in one place: the class attributes
  :attr:`~TableDoor.observes_writes` and :attr:`~TableDoor.commits_arrow`, each saying
  which engine has what and what a caller does otherwise. A method one engine cannot do
  raises :class:`~headwater.errors.EngineUnsupportedError`, naming the engine that can.
* The value types the methods take and give (:class:`WriteSpec`, :class:`WriteResult`,
  :class:`MergeResult`, :class:`Clause`, :class:`Operation`, :class:`DeltaStreamSink`),
  and Delta's own rules that do not depend on the engine: how a write's columns meet the
  table's (:func:`reconcile_schema`), how a column is declared generated, defaulted or an
  identity (:func:`with_generation`, :func:`with_default`, :func:`declare_identity`).
* :func:`narrow_views`: a SQL query over headwater's scans of ``delta.`/path``` narrowed
  to the files its filters admit (delta-spark's file index does this itself; its scans
  are left alone).

A commit conflict comes back as the engine raises it (headwater's
:class:`~headwater.errors.ConcurrentModificationException` family, or delta-spark's own
exceptions of the same names); :func:`is_conflict` tells either apart from other failures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import DataType, StructField, StructType

from headwater.delta.dml.rewrite import Result as MergeResult
from headwater.delta.files.arrow_read import FileTask
from headwater.delta.files.column_values import with_default, with_generation
from headwater.delta.files.identity import declare as declare_identity
from headwater.delta.log.operations import Operation
from headwater.delta.options import OutputMode, WriteSpec
from headwater.delta.read.filtered import narrow_views
from headwater.delta.schema.expressions import ExprLike
from headwater.delta.schema.merge_clauses import Clause
from headwater.delta.schema.table_schema import Reconciled
from headwater.delta.schema.table_schema import check_writable as check_schema_writable
from headwater.delta.schema.table_schema import reconcile as reconcile_schema
from headwater.delta.write.batch import WriteResult
from headwater.delta.write.sink import DeltaStreamSink
from headwater.engines.log_views import (
    AddView,
    CommitInfoView,
    CommitView,
    DataFileView,
    MetadataView,
    SnapshotView,
)
from headwater.engines.table_log import (
    CHANGE_FEED,
    CHANGE_TYPE,
    TableLog,
    change_feed_enabled,
    read_arrow,
    read_arrow_file,
    read_changes,
)

__all__ = [
    "CHANGE_FEED",
    "CHANGE_TYPE",
    "AddView",
    "Clause",
    "CommitInfoView",
    "CommitView",
    "DataFileView",
    "DeltaStreamSink",
    "ExprLike",
    "FileTask",
    "LoadRecord",
    "MergeResult",
    "Operation",
    "MetadataView",
    "OutputMode",
    "RecordedAppend",
    "Reconciled",
    "Requirement",
    "SnapshotView",
    "TableDoor",
    "TableLog",
    "WriteResult",
    "WriteSpec",
    "change_feed_enabled",
    "check_schema_writable",
    "declare_identity",
    "is_conflict",
    "narrow_views",
    "read_arrow",
    "read_arrow_file",
    "read_changes",
    "reconcile_schema",
    "table_log",
    "with_default",
    "with_generation",
]


def table_log(location: str) -> TableLog:
    """The log of the table at ``location`` (one reader for both engines)."""
    return TableLog(location)


# -- a recorded append ---------------------------------------------------------------------


class Requirement(Protocol):
    """A condition on the commits that land between the version a change was planned at
    and its own commit; raises a conflict when one breaks it."""

    def check(self, winner: CommitView) -> None: ...


@dataclass(frozen=True)
class LoadRecord:
    """What an append records of where its rows came from, known once they were read:
    fields of the commit's ``commitInfo`` (on delta-spark, whose writer takes none of
    ours, the same JSON object is the commit's ``userMetadata``) and its metrics."""

    commit_info: Mapping[str, Any]
    metrics: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class RecordedAppend:
    """Rows appended as one commit that also records what they came from (COPY INTO's
    load record), so a crash leaves both or neither. ``record`` is asked once the rows
    were read (what reading skipped is in it). The commit is exactly-once per ``txn``, and
    ``txn`` is recorded with the commit. ``requirement`` is checked against every commit
    since ``read`` where the engine's commit takes such a check (headwater's); where not
    (delta-spark), an append whose ``txn`` the table recorded already commits nothing, so
    ``txn`` alone serialises appends planned at one version."""

    operation: str  # its name in the table's history
    parameters: Mapping[str, str]
    schema: StructType  # the table's columns after the append (new ones added)
    read: SnapshotView | None  # the table as the append was planned on it; None: no table yet
    record: Callable[[], LoadRecord]
    txn: tuple[str, int] | None = None
    requirement: Requirement | None = None
    # Whether the record depends on reading the rows (files skipped as corrupt): an engine
    # that must know it before writing reads the rows first.
    record_after_read: bool = False


# -- the door --------------------------------------------------------------------------------


class TableDoor(Protocol):
    """A Delta table by name or path: read, written, streamed into, MERGEd, altered."""

    # Whether a DataFrame's observed metrics (``Observation``) arrive when it is written
    # here. headwater's: yes. delta-spark's writer runs the query as a nested execution,
    # which never reports them: the pipelines count expectations by a pass of their own.
    observes_writes: ClassVar[bool]
    # Whether rows held in Arrow are committed without a Spark job (:meth:`append_arrow`,
    # :meth:`overwrite_arrow`). headwater's: yes, for tables a Spark write would lay out or
    # check nothing of. delta-spark's commits only its own writes: the rows go through
    # ``createDataFrame`` and its writer, a Spark job each.
    commits_arrow: ClassVar[bool]

    @property
    def spark(self) -> SparkSession: ...
    @property
    def location(self) -> str: ...
    @property
    def name(self) -> str: ...
    def exists(self) -> bool: ...
    def log(self) -> TableLog: ...
    def delta_table(self) -> Any: ...
    def read(
        self,
        version: int | None = None,
        timestamp: str | None = None,
        options: Mapping[str, str] | None = None,
    ) -> DataFrame: ...
    def read_appended(self, since: int, until: int) -> DataFrame | None: ...
    def read_stream(self, options: Mapping[str, str] | None = None) -> DataFrame: ...
    def write(self, df: DataFrame, spec: WriteSpec, operation: Any = None) -> WriteResult: ...
    def sink(
        self,
        checkpoint: str,
        output_mode: OutputMode = "append",
        spec: WriteSpec | None = None,
        on_commit: Callable[[WriteResult], None] | None = None,
    ) -> DeltaStreamSink: ...
    def start_stream(
        self,
        df: DataFrame,
        checkpoint: str,
        output_mode: OutputMode = "append",
        spec: WriteSpec | None = None,
        trigger: Mapping[str, str | bool] | None = None,
        query_name: str | None = None,
        on_commit: Callable[[WriteResult], None] | None = None,
        wrap: Callable[[DeltaStreamSink], Callable[[DataFrame, int], object]] | None = None,
    ) -> Any: ...
    def merge(
        self,
        source: DataFrame,
        condition: ExprLike,
        clauses: list[Clause],
        txn: tuple[str, int] | None = None,
        target_alias: str = "target",
        evolve: bool = False,
        user_metadata: str | None = None,
    ) -> MergeResult: ...
    def update(
        self, condition: ExprLike | None, assignments: Mapping[str, ExprLike]
    ) -> MergeResult: ...
    def delete(self, condition: ExprLike | None) -> MergeResult: ...
    def append_arrow(self, rows: pa.Table, schema: StructType) -> WriteResult:
        """``rows`` (of ``schema``) appended as one commit."""
        ...

    def overwrite_arrow(
        self, rows: pa.Table, read: SnapshotView, user_metadata: str | None = None
    ) -> WriteResult:
        """The table's rows replaced by ``rows`` in one commit, which fails as a conflict
        when the table changed since the version ``read``."""
        ...

    def append_recorded(self, df: DataFrame | None, append: RecordedAppend) -> WriteResult:
        """``df``'s rows (None: none, only the record) appended with their record in one
        commit; a conflict when another commit took what the requirement protects, and
        nothing committed (``version`` None) when ``txn`` was recorded already."""
        ...

    def optimize(
        self, where: str | None = None, z_order_by: Sequence[str] = (), full: bool = False
    ) -> DataFrame:
        """OPTIMIZE: compaction, Z-order or (``full``) liquid clustering of every file;
        delta-spark's metrics row."""
        ...

    def vacuum(self, retention_hours: float | None = None, dry_run: bool = False) -> DataFrame:
        """VACUUM: files no version within the retention needs deleted (listed only, with
        ``dry_run``)."""
        ...

    def replace(
        self,
        schema: StructType,
        partition_by: Sequence[str] = (),
        properties: Mapping[str, str] | None = None,
        description: str | None = None,
    ) -> None: ...
    def add_columns(self, fields: Iterable[StructField]) -> None: ...
    def change_column(
        self, column: str, new_type: DataType | None = None, comment: str | None = None
    ) -> None: ...
    def set_properties(self, properties: Mapping[str, str]) -> None: ...
    def cluster_by(self, columns: Sequence[str] | None) -> None: ...
    def add_constraint(self, name: str, expression: str) -> None: ...
    def drop_constraint(self, name: str, if_exists: bool = False) -> None: ...


# delta-spark's conflict exceptions (io.delta.exceptions / delta.exceptions): the names
# headwater's own carry too (headwater.errors), and their error conditions.
_CONFLICT_NAMES = (
    "ConcurrentModificationException",
    "ConcurrentWriteException",
    "MetadataChangedException",
    "ProtocolChangedException",
    "ConcurrentAppendException",
    "ConcurrentDeleteReadException",
    "ConcurrentDeleteDeleteException",
    "ConcurrentTransactionException",
)


def is_conflict(error: BaseException) -> bool:
    """Whether ``error`` is a commit that lost to a concurrent one (nothing of it was
    committed), raised by either engine: such a write may be planned again and retried."""
    from headwater.errors import ConcurrentModificationException

    if isinstance(error, ConcurrentModificationException):
        return True
    if any(kind.__name__ in _CONFLICT_NAMES for kind in type(error).__mro__):
        return True
    condition = getattr(error, "getCondition", None)
    try:
        found = condition() if callable(condition) else None
    except Exception:  # a py4j error without a condition
        found = None
    if isinstance(found, str) and found.startswith("DELTA_CONCURRENT"):
        return True
    text = str(error)
    return "[DELTA_CONCURRENT_" in text or any(
        f"io.delta.exceptions.{name}" in text for name in _CONFLICT_NAMES
    )
