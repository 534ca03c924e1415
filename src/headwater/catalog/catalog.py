"""Named Delta tables that survive the session.

The registry (:mod:`headwater.catalog.registry`) is the record. Each session mirrors it into
Spark's own session catalog so that SQL (``SELECT ... FROM db.t``) resolves names: every
table gets a data-source class of its own with the table's path built in (Spark hands a
catalog table's source no options), registered under a deterministic name
``hwt_<sha1(path)[:12]>``. ``spark.table``, ``read.table``, ``readStream.table``,
``saveAsTable`` and ``toTable`` resolve through the registry directly (see
:mod:`headwater.api_hooks`), so they see tables created by other processes at once and read
through the native Parquet path.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence

from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from headwater import storage
from headwater.catalog.names import TableName, delta_path, parse
from headwater.catalog.registry import Registry, TableEntry
from headwater.delta import names as delta_names
from headwater.delta.log.delta_log import DeltaLog
from headwater.delta.read.source import DeltaDataSource
from headwater.delta.write.create import create_table
from headwater.errors import HeadwaterError, TableAlreadyExistsError, TableNotFoundError
from headwater.originals import original

log = logging.getLogger(__name__)


def source_name(path: str) -> str:
    # sha1, not hash(): the name must be the same in every Python process.
    return "hwt_" + hashlib.sha1(storage.normalize(path).encode()).hexdigest()[:12]


def table_source(path: str) -> type[DeltaDataSource]:
    """A ``delta`` data source class bound to one table path."""
    name = source_name(path)
    return type(
        f"DeltaTableSource_{name}",
        (DeltaDataSource,),
        {"table_path": storage.normalize(path), "name": classmethod(lambda cls: name)},
    )


class Catalog:
    """The names of one warehouse, served to one session (it is the session's
    :class:`headwater.delta.names.TableNames`)."""

    def __init__(self, spark: SparkSession, warehouse: str) -> None:
        self.spark = spark
        self.registry = Registry(warehouse)

    @classmethod
    def attach(cls, spark: SparkSession, warehouse: str) -> Catalog:
        catalog = cls._serve(spark, warehouse)
        catalog.sync()
        return catalog

    @classmethod
    def join(cls, spark: SparkSession, warehouse: str, own_state: bool) -> Catalog:
        """The catalog of a session Spark derived from one this warehouse is attached to.
        Spark's catalog, which the sessions of a context share, already holds every table:
        nothing is mirrored again. A session with a state of its own (``newSession()``,
        ``own_state``) lacks only the tables' data sources; a clone (``foreachBatch``'s
        session) has those too."""
        catalog = cls._serve(spark, warehouse)
        if own_state:
            for entry in catalog.list_tables():
                spark.dataSource.register(table_source(entry.location))
        return catalog

    @classmethod
    def _serve(cls, spark: SparkSession, warehouse: str) -> Catalog:
        catalog = cls(spark, warehouse)
        spark._headwater_catalog = catalog  # type: ignore[attr-defined]
        delta_names.attach(spark, catalog)
        return catalog

    @classmethod
    def of(cls, spark: SparkSession) -> Catalog:
        catalog = getattr(spark, "_headwater_catalog", None)
        if catalog is None:
            # the registry takes any spelling (Spark's is a file: URI)
            warehouse = spark.conf.get("spark.headwater.warehouse", None) or str(
                spark.conf.get("spark.sql.warehouse.dir")
            )
            catalog = cls.attach(spark, warehouse)
        return catalog

    # -- lookups ---------------------------------------------------------------------------

    def get(self, name: str | TableName) -> TableEntry | None:
        """The entry of an existing table, or None."""
        tname = parse(name) if isinstance(name, str) else name
        entry = self.registry.get(tname)
        if entry is None or not DeltaLog(entry.location).exists():
            return None
        return entry

    def require(self, name: str) -> TableEntry:
        entry = self.get(name)
        if entry is None:
            raise TableNotFoundError(
                f"Table or view '{name}' not found (looked in {self.registry.warehouse}). "
                f"Known tables: {', '.join(str(e.name) for e in self.list_tables()) or 'none'}."
            )
        return entry

    def location(self, name: str) -> str:
        """Where the table ``name`` (or ``delta.`/path```) lives; TableNotFoundError if none."""
        by_path = delta_path(name)
        return by_path if by_path is not None else self.require(name).location

    def list_tables(self, database: str | None = None) -> list[TableEntry]:
        return [
            e
            for e in self.registry.entries(database and database.lower())
            if DeltaLog(e.location).exists()
        ]

    def list_databases(self) -> list[str]:
        return self.registry.databases()

    # -- changes ---------------------------------------------------------------------------

    def entry_for_write(self, name: str, location: str | None = None) -> TableEntry:
        """The entry a write to ``name`` goes to, recorded if new (managed unless ``location``)."""
        tname = parse(name)
        existing = self.registry.get(tname)
        if existing is not None and (
            location is None or storage.normalize(location) == existing.location
        ):
            return existing
        if existing is not None and DeltaLog(existing.location).exists():
            raise TableAlreadyExistsError(
                f"Table {tname} already exists at {existing.location}, not at {location}."
            )
        entry = TableEntry(
            tname.database,
            tname.table,
            storage.normalize(location) if location else self.registry.managed_location(tname),
            managed=location is None,
        )
        self.registry.put(entry)
        return entry

    def create_table(
        self,
        name: str,
        schema: StructType | None = None,
        location: str | None = None,
        partition_by: Sequence[str] | None = None,
        properties: Mapping[str, str] | None = None,
        if_not_exists: bool = False,
        description: str | None = None,
    ) -> TableEntry:
        """Create a table (or register an existing Delta table at ``location``)."""
        if self.get(name) is not None:
            if if_not_exists:
                return self.require(name)
            raise TableAlreadyExistsError(f"Table {parse(name)} already exists.")
        entry = self.entry_for_write(name, location)
        dlog = DeltaLog(entry.location)
        if not dlog.require_table_or_empty():
            if schema is None:
                raise HeadwaterError(
                    f"Cannot create table {entry.name}: give a schema, or a location that holds a Delta table."
                )
            create_table(entry.location, schema, list(partition_by or []), properties, description)
        self.register_in_spark(entry)
        return entry

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
        """:class:`headwater.delta.names.TableNames`: ``DeltaTable.create(...).tableName``."""
        by_path = delta_path(name)
        if by_path is not None:
            if DeltaLog(by_path).exists():
                if if_not_exists:
                    return by_path
                raise TableAlreadyExistsError(f"A Delta table already exists at {by_path}.")
            create_table(by_path, schema, partition_by, properties, description)
            return by_path
        entry = self.create_table(
            name, schema, location, partition_by, properties, if_not_exists, description
        )
        return entry.location

    def entries_at(self, location: str) -> list[TableEntry]:
        """The names of the table at ``location`` (none for a table known by path only)."""
        where = storage.normalize(location)
        return [e for e in self.registry.entries() if storage.normalize(e.location) == where]

    def name_at(self, location: str) -> str | None:
        """:class:`headwater.delta.names.TableNames`: DESCRIBE DETAIL's ``name``."""
        entries = self.entries_at(location)
        return f"spark_catalog.{entries[0].name}" if entries else None

    def changed(self, location: str) -> None:
        """:class:`headwater.delta.names.TableNames`: mirror a new schema into Spark, under
        every name of the table at ``location``."""
        for entry in self.entries_at(location):
            self.register_in_spark(entry)

    def drop_table(self, name: str, purge: bool | None = None, if_exists: bool = False) -> None:
        """Forget a table. Managed tables lose their data too unless ``purge=False``;
        external ones keep it unless ``purge=True``."""
        tname = parse(name)
        entry = self.registry.get(tname)
        if entry is None:
            if if_exists:
                return
            raise TableNotFoundError(f"Table {tname} not found; nothing to drop.")
        self._spark_sql(f"DROP TABLE IF EXISTS {tname.quoted}")
        self.registry.remove(tname)
        if purge if purge is not None else entry.managed:
            storage.delete_dir(entry.location)

    def rename_table(self, entry: TableEntry, new: TableName) -> TableEntry:
        """``ALTER TABLE ... RENAME TO``: the entry under its new name (no Delta commit, as
        in delta-spark). A managed table's directory moves to the new name's managed
        location, as Spark's catalog moves it; an external one stays where it is."""
        if self.registry.get(new) is not None:
            raise TableAlreadyExistsError(f"Cannot rename {entry.name} to {new}: it exists.")
        location = entry.location
        if entry.managed:
            location = self.registry.managed_location(new)
            if storage.is_remote(location) or storage.exists(location):
                raise HeadwaterError(
                    f"Cannot move managed table {entry.name} to {location} for its new name: "
                    "the place is taken or on object storage. Give the table a LOCATION first."
                )
        self.drop_table(str(entry.name), purge=False)
        if location != entry.location:
            storage.move(entry.location, location)
        return self.repoint(TableEntry(new.database, new.table, location, entry.managed))

    def repoint(self, entry: TableEntry) -> TableEntry:
        """Record ``entry`` (a name's new location: ``SET LOCATION``) and mirror it."""
        self.registry.put(entry)
        self.register_in_spark(entry)
        return entry

    # -- Spark's session catalog -----------------------------------------------------------

    def register_in_spark(self, entry: TableEntry) -> None:
        """Mirror one table into Spark's catalog (again, if its schema changed)."""
        self.spark.dataSource.register(table_source(entry.location))
        name = entry.name
        self._spark_sql(f"CREATE DATABASE IF NOT EXISTS `{name.database}`")
        self._spark_sql(f"DROP TABLE IF EXISTS {name.quoted}")
        location = entry.location.replace("'", "\\'")
        self._spark_sql(
            f"CREATE TABLE {name.quoted} USING {source_name(entry.location)} LOCATION '{location}'"
        )

    def _spark_sql(self, text: str) -> None:
        """Spark's own ``spark.sql``: these statements manage the mirror only, and must not be
        routed to headwater's SQL front (its DROP TABLE would drop the table itself)."""
        original(SparkSession, "sql")(self.spark, text)

    def sync(self) -> None:
        for entry in self.list_tables():
            try:
                self.register_in_spark(entry)
            except Exception as e:  # one unreadable table must not break the session
                log.warning("table %s not registered in Spark's catalog: %s", entry.name, e)
