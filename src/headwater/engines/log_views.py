"""A Delta table's log as the door shows it: read-only views typed by what the rooms above
the engines read of a version (:class:`SnapshotView`) and of a commit (:class:`CommitView`),
not by how an engine keeps them. :mod:`headwater.engines.table_log` hands them out;
:mod:`headwater.engines.door` re-exports them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import pyarrow as pa
from pyspark.sql.types import StructType


class DataFileView(Protocol):
    """A live data file of a version."""

    @property
    def path(self) -> str: ...  # relative to the table's root, decoded
    @property
    def size(self) -> int: ...
    @property
    def partition_values(self) -> dict[str, str | None]: ...
    def absolute(self, root: str) -> str: ...


class MetadataView(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def schema_string(self) -> str: ...


class SnapshotView(Protocol):
    """One version of a table: its definition and its live files."""

    @property
    def root(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def schema(self) -> StructType: ...
    @property
    def partition_columns(self) -> list[str]: ...
    @property
    def configuration(self) -> dict[str, str]: ...
    @property
    def check_constraints(self) -> dict[str, str]: ...
    @property
    def physical_schema(self) -> StructType | None: ...  # None: no column mapping
    @property
    def metadata(self) -> MetadataView: ...
    @property
    def files(self) -> list[Any]: ...  # DataFileView each
    @property
    def add_actions(
        self,
    ) -> (
        pa.Table
    ): ...  # a row per live file: path, size_bytes, num_records, partition.*, min.*, max.*
    def check_writable(self, schema_change: bool = False) -> None: ...


class AddView(Protocol):
    """A file a commit added (or removed: ``num_records`` then None)."""

    @property
    def data_change(self) -> bool: ...
    @property
    def num_records(self) -> int | None: ...


class CommitInfoView(Protocol):
    @property
    def values(self) -> Mapping[str, Any]: ...


class CommitView(Protocol):
    """The actions of one commit."""

    @property
    def version(self) -> int: ...
    @property
    def info(self) -> CommitInfoView | None: ...
    @property
    def metadata(self) -> MetadataView | None: ...  # set when the commit changed it
    @property
    def adds(self) -> list[Any]: ...  # AddView each
    @property
    def removes(self) -> list[Any]: ...  # each has data_change
