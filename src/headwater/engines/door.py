"""The one interface upper layers reach a Delta table through, whichever engine runs it.

``api.Table`` (headwater's engine) and ``DeltaSparkTable`` (delta-spark) both have these
methods with these meanings; ``api.table``/``api.for_path``/``api.find`` hand out the
session's. A method one engine cannot do raises
:class:`~headwater.errors.EngineUnsupportedError`, naming the engine that can.

A commit conflict comes back as the engine raises it (headwater's
:class:`~headwater.errors.ConcurrentModificationException` family, or delta-spark's own
exceptions of the same names); :func:`is_conflict` tells either apart from other failures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, Protocol

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import DataType, StructField, StructType

from headwater.delta.dml.rewrite import Result as MergeResult
from headwater.delta.options import WriteSpec
from headwater.delta.schema.expressions import ExprLike
from headwater.delta.schema.merge_clauses import Clause
from headwater.delta.write.batch import WriteResult
from headwater.delta.write.sink import DeltaStreamSink, OutputMode


class TableDoor(Protocol):
    """A Delta table by name or path: read, written, streamed into, MERGEd, altered."""

    # Whether a DataFrame's observed metrics (``Observation``) arrive when it is written
    # here; where not, the pipelines count expectations by a pass of their own.
    observes_writes: ClassVar[bool]
    # Whether a caller may stage data files and actions in headwater's own ``Transaction``
    # and ``commit`` it (COPY INTO: its load record in the commitInfo, checked against every
    # commit in between). Where not, COPY INTO appends through ``write`` with a transaction
    # id and the record as the commit's ``userMetadata``.
    commits_staged: ClassVar[bool]

    @property
    def spark(self) -> SparkSession: ...
    @property
    def location(self) -> str: ...
    @property
    def name(self) -> str: ...
    def exists(self) -> bool: ...
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
    def commit(self, txn: Any) -> int: ...
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
