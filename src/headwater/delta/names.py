"""Table names, for the parts of delta-spark's API that take them (``DeltaTable.forName``,
``DeltaTable.create(spark).tableName(...)``).

Names are the catalog's business, a layer above this package. The catalog attaches its
:class:`TableNames` to each session it serves (:func:`attach`); this package asks the
session for it (:func:`of`) and never imports the catalog.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from headwater.errors import HeadwaterError

_ATTRIBUTE = "_headwater_table_names"


class TableNames(Protocol):
    def location(self, name: str) -> str:
        """The location of the existing table ``name``; raises TableNotFoundError."""
        ...

    def create(
        self,
        name: str,
        schema: StructType,
        location: str | None,
        partition_by: Sequence[str],
        properties: Mapping[str, str],
        description: str | None,
        if_not_exists: bool,
    ) -> str:
        """Create the table ``name`` (with ``if_not_exists``, or find it); its location."""
        ...

    def name_at(self, location: str) -> str | None:
        """The qualified name (``spark_catalog.db.t``) of the table at ``location``, if any."""
        ...

    def changed(self, location: str) -> None:
        """The table at ``location`` has a new schema: show it under every name it has."""
        ...


def attach(spark: SparkSession, names: TableNames) -> None:
    setattr(spark, _ATTRIBUTE, names)


def of(spark: SparkSession) -> TableNames:
    names = getattr(spark, _ATTRIBUTE, None)
    if names is None:
        raise HeadwaterError(
            "This SparkSession has no headwater catalog, so tables cannot be found by name. "
            "Build the session with headwater.session(), or call headwater.install(spark)."
        )
    return names


def schema_changed(spark: SparkSession, location: str) -> None:
    """A commit gave the table at ``location`` a new schema (or partitioning): the names
    that point there must show it. Nothing to do in a session without names."""
    names = getattr(spark, _ATTRIBUTE, None)
    if names is not None:
        names.changed(location)
