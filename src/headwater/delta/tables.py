"""``DeltaTable``: delta-spark's Python API, so ``from delta.tables import DeltaTable``
ports by changing the import to ``from headwater.delta.tables import DeltaTable``.

Thin on purpose: DML runs in :mod:`.delete_update` and :mod:`.merge`, maintenance in
:mod:`.vacuum_restore`, history in :mod:`.history`, creation in :mod:`.create`; names go
through the session's catalog (:mod:`.names`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StructField, StructType

from headwater import storage
from headwater.delta import arguments, names
from headwater.delta.dml import delete_update as dml
from headwater.delta.dml import merge
from headwater.delta.dml.rewrite import Result
from headwater.delta.files import column_values, identity
from headwater.delta.log import clustering, features, history
from headwater.delta.log.delta_log import DeltaLog
from headwater.delta.maintenance import optimize
from headwater.delta.maintenance import vacuum_restore as maintenance
from headwater.delta.read.batch import read_delta
from headwater.delta.schema.expressions import ExprLike
from headwater.delta.schema.merge_clauses import Clause, ClauseAction, ClauseKind
from headwater.delta.write.create import create_table, replace_table
from headwater.errors import TableAlreadyExistsError, TableNotFoundError
from headwater.sqltypes import parse_type


class DeltaTable:
    def __init__(self, spark: SparkSession, path: str, alias: str | None = None) -> None:
        self._spark = spark
        self._path = DeltaLog(path).root
        self._alias = alias

    @property
    def path(self) -> str:
        return self._path

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def forPath(
        cls,
        sparkSession: SparkSession,
        path: str,
        hadoopConf: Mapping[str, str] | None = None,
    ) -> DeltaTable:
        """``hadoopConf``: file-system settings (``fs.s3a.*``) for this table's store, as
        delta-spark takes them; they then serve every access to that bucket in the session
        (the log, the driver and the executors)."""
        arguments.string(path, "path")
        conf = arguments.string_map(hadoopConf, "hadoopConf")
        if conf:
            _apply_hadoop_conf(sparkSession, path, conf)
        if not DeltaLog(path).exists():
            raise TableNotFoundError(f"[DELTA_MISSING_DELTA_TABLE] {path} is not a Delta table.")
        return cls(sparkSession, path)

    @classmethod
    def forName(cls, sparkSession: SparkSession, tableOrViewName: str) -> DeltaTable:
        arguments.string(tableOrViewName, "tableOrViewName")
        return cls.forPath(sparkSession, names.of(sparkSession).location(tableOrViewName))

    @classmethod
    def isDeltaTable(cls, sparkSession: SparkSession, identifier: str) -> bool:
        return DeltaLog(identifier).exists()

    @classmethod
    def create(cls, sparkSession: SparkSession | None = None) -> DeltaTableBuilder:
        return DeltaTableBuilder(_session(sparkSession), "create")

    @classmethod
    def createIfNotExists(
        cls,
        sparkSession: SparkSession | None = None,
    ) -> DeltaTableBuilder:
        return DeltaTableBuilder(_session(sparkSession), "createIfNotExists")

    @classmethod
    def replace(cls, sparkSession: SparkSession | None = None) -> DeltaTableBuilder:
        """Replace an existing table (its history stays: time travel reaches before)."""
        return DeltaTableBuilder(_session(sparkSession), "replace")

    @classmethod
    def createOrReplace(cls, sparkSession: SparkSession | None = None) -> DeltaTableBuilder:
        return DeltaTableBuilder(_session(sparkSession), "createOrReplace")

    @classmethod
    def convertToDelta(
        cls,
        sparkSession: SparkSession,
        identifier: str,
        partitionSchema: str | StructType | None = None,
    ) -> DeltaTable:
        """Make a directory of Parquet files (``parquet.`/path```) a Delta table in place:
        a log over the existing files, with their stats; no data is rewritten."""
        from headwater.delta.write.convert import convert_to_delta

        arguments.string(identifier, "identifier")
        if partitionSchema is not None and not isinstance(partitionSchema, (str, StructType)):
            raise TypeError("partitionSchema must be a DDL string or a StructType.")
        return cls(sparkSession, convert_to_delta(sparkSession, identifier, partitionSchema))

    # -- reading ---------------------------------------------------------------------------

    def toDF(self) -> DataFrame:
        """The table's rows; its columns carry users' metadata (comments), not the log's
        own (generation expressions, identity, column mapping), as delta-spark's do."""
        df = read_delta(self._spark, self._path)
        internal = [
            f for f in df.schema if any(k.startswith(INTERNAL_METADATA) for k in f.metadata)
        ]
        if internal:
            df = df.select(
                *[
                    F.col(f"`{f.name}`").alias(f.name, metadata=_users_metadata(f))
                    if f in internal
                    else F.col(f"`{f.name}`")
                    for f in df.schema
                ]
            )
        return df.alias(self._alias) if self._alias else df

    def alias(self, aliasName: str) -> DeltaTable:
        return DeltaTable(self._spark, self._path, aliasName)

    def history(self, limit: int | None = None) -> DataFrame:
        if limit is not None:
            arguments.integer(limit, "limit")
        return history.history(self._spark, self._path, limit)

    def detail(self) -> DataFrame:
        return history.detail(self._spark, self._path)

    # -- DML ---------------------------------------------------------------------------------

    def delete(self, condition: ExprLike | None = None) -> None:
        dml.delete(self._spark, self._path, arguments.condition(condition))

    def update(
        self, condition: ExprLike | None = None, set: Mapping[str, ExprLike] | None = None
    ) -> None:
        values = arguments.assignments(set, "'set'")  # update(set={...}) alone: every row
        dml.update(self._spark, self._path, arguments.condition(condition), values)

    def updateExpr(
        self, condition: str | None = None, set: Mapping[str, str] | None = None
    ) -> None:
        self.update(condition, set)

    def merge(self, source: DataFrame, condition: ExprLike) -> DeltaMergeBuilder:
        arguments.dataframe(source, "source")
        arguments.condition(condition, "condition", required=True)
        return DeltaMergeBuilder(self, source, condition)

    # -- maintenance -----------------------------------------------------------------------

    def optimize(self) -> DeltaOptimizeBuilder:
        return DeltaOptimizeBuilder(self._spark, self._path)

    def vacuum(self, retentionHours: float | None = None) -> DataFrame:
        """Delete the files no version within the retention reads; as delta-spark's, an
        empty DataFrame (``VACUUM``'s SQL returns the table's path)."""
        maintenance.vacuum(self._spark, self._path, retentionHours)
        return self._spark.createDataFrame([], StructType([]))

    def generate(self, mode: str) -> None:
        """Write manifests for Parquet-only engines (mode ``symlink_format_manifest``)."""
        from headwater.delta.maintenance.manifest import generate

        generate(self._path, mode)

    def restoreToVersion(self, version: int) -> DataFrame:
        arguments.needs(version, int, "version")
        return self._restore(version=version)

    def restoreToTimestamp(self, timestamp: str) -> DataFrame:
        arguments.needs(timestamp, str, "timestamp")
        return self._restore(timestamp=timestamp)

    def _restore(self, version: int | None = None, timestamp: str | None = None) -> DataFrame:
        """RESTORE brings back the schema of the version restored: the table's names must
        show it."""
        before = DeltaLog(self._path).snapshot().metadata
        metrics = maintenance.restore(self._spark, self._path, version, timestamp)
        after = DeltaLog(self._path).snapshot().metadata
        if (before.schema_string, before.partition_columns) != (
            after.schema_string,
            after.partition_columns,
        ):
            names.schema_changed(self._spark, self._path)
        return metrics

    # -- protocol ----------------------------------------------------------------------------

    def upgradeTableProtocol(self, readerVersion: int, writerVersion: int) -> None:
        features.upgrade_protocol(self._path, readerVersion, writerVersion)

    def addFeatureSupport(self, featureName: str) -> None:
        features.add_feature(self._path, arguments.needs(featureName, str, "featureName"))

    def dropFeatureSupport(self, featureName: str, truncateHistory: bool | None = None) -> None:
        arguments.needs(featureName, str, "featureName")
        truncate = (
            False
            if truncateHistory is None
            else arguments.needs(truncateHistory, bool, "truncateHistory")
        )
        features.drop_feature(self._path, featureName, truncate)


@dataclass(frozen=True)
class IdentityGenerator:
    """An identity column's numbering, as delta-spark's builder takes it
    (``addColumn("id", "BIGINT", generatedAlwaysAs=IdentityGenerator(start=1, step=1))``)."""

    start: int = 1
    step: int = 1


BuilderMode = Literal["create", "createIfNotExists", "replace", "createOrReplace"]

# delta-spark's MERGE result row, in its column order.
MERGE_RESULT_SCHEMA = (
    "num_affected_rows long, num_updated_rows long, num_deleted_rows long, num_inserted_rows long"
)


class DeltaMergeBuilder:
    """``merge(source, cond).whenMatchedUpdate(...)...execute()``, as in delta-spark."""

    def __init__(self, table: DeltaTable, source: DataFrame, condition: ExprLike) -> None:
        self._table = table
        self._source = source
        self._condition = condition
        self._clauses: list[Clause] = []
        self._evolve = False

    def _add(
        self,
        kind: ClauseKind,
        action: ClauseAction,
        condition: ExprLike | None = None,
        values: Mapping[str, ExprLike] | None = None,
    ) -> DeltaMergeBuilder:
        self._clauses.append(Clause(kind, action, condition, values))
        return self

    def whenMatchedUpdate(
        self, condition: ExprLike | None = None, set: Mapping[str, ExprLike] | None = None
    ) -> DeltaMergeBuilder:
        set = arguments.assignments(set, "'set' in whenMatchedUpdate")
        return self._add("matched", "update", arguments.condition(condition), dict(set))

    def whenMatchedUpdateAll(self, condition: ExprLike | None = None) -> DeltaMergeBuilder:
        return self._add("matched", "update", arguments.condition(condition))

    def whenMatchedDelete(self, condition: ExprLike | None = None) -> DeltaMergeBuilder:
        return self._add("matched", "delete", arguments.condition(condition))

    def whenNotMatchedInsert(
        self, condition: ExprLike | None = None, values: Mapping[str, ExprLike] | None = None
    ) -> DeltaMergeBuilder:
        values = arguments.assignments(values, "'values' in whenNotMatchedInsert")
        return self._add("not_matched", "insert", arguments.condition(condition), dict(values))

    def whenNotMatchedInsertAll(self, condition: ExprLike | None = None) -> DeltaMergeBuilder:
        return self._add("not_matched", "insert", arguments.condition(condition))

    def whenNotMatchedBySourceUpdate(
        self, condition: ExprLike | None = None, set: Mapping[str, ExprLike] | None = None
    ) -> DeltaMergeBuilder:
        set = arguments.assignments(set, "'set' in whenNotMatchedBySourceUpdate")
        return self._add(
            "not_matched_by_source", "update", arguments.condition(condition), dict(set)
        )

    def whenNotMatchedBySourceDelete(self, condition: ExprLike | None = None) -> DeltaMergeBuilder:
        return self._add("not_matched_by_source", "delete", arguments.condition(condition))

    def withSchemaEvolution(self) -> DeltaMergeBuilder:
        self._evolve = True
        return self

    def execute(self) -> DataFrame:
        """Run the MERGE; returns one row of its metrics (as delta-spark 3.x does)."""
        t = self._table
        result = merge.merge(
            t._spark, t.path, self._source, self._condition, self._clauses, t._alias, self._evolve
        )
        if result.schema_changed:  # SQL must see the new columns under the table's names
            names.schema_changed(t._spark, t.path)
        return merge_metrics(t._spark, result)


def merge_metrics(spark: SparkSession, result: Result) -> DataFrame:
    """A MERGE's result row, as delta-spark 3.x returns it (and SQL's MERGE INTO)."""
    keys = ("numTargetRowsUpdated", "numTargetRowsDeleted", "numTargetRowsInserted")
    counts = [int(result.metrics.get(k, 0)) for k in keys]
    return spark.createDataFrame([(sum(counts), *counts)], MERGE_RESULT_SCHEMA)


class DeltaOptimizeBuilder:
    """``DeltaTable.optimize().where(...).executeCompaction()`` / ``.executeZOrderBy(...)``,
    as in delta-spark; each returns ``(path, metrics)`` with delta-spark's metrics struct.
    On a clustered table both cluster the files not yet clustered (:mod:`.optimize`)."""

    def __init__(self, spark: SparkSession, path: str) -> None:
        self._spark = spark
        self._path = path
        self._where: str | None = None

    def where(self, partitionFilter: str) -> DeltaOptimizeBuilder:
        self._where = partitionFilter
        return self

    def executeCompaction(self) -> DataFrame:
        """Rewrite each partition's small files into one (dataChange=false)."""
        return optimize.optimize(self._spark, self._path, self._where)

    def executeZOrderBy(self, *cols: str | list[str]) -> DataFrame:
        """Rewrite each selected partition's files along a Z-order curve over ``cols``."""
        columns = [c for group in cols for c in ([group] if isinstance(group, str) else group)]
        if not columns:
            raise ValueError("executeZOrderBy() needs at least one column name.")
        return optimize.optimize(self._spark, self._path, self._where, columns)


class DeltaTableBuilder:
    """``DeltaTable.create(spark).tableName(...).addColumn(...)....execute()``, and the
    ``createIfNotExists`` / ``replace`` / ``createOrReplace`` builders."""

    def __init__(self, spark: SparkSession, mode: BuilderMode) -> None:
        self._spark = spark
        self._mode = mode
        self._name: str | None = None
        self._location: str | None = None
        self._fields: list[StructField] = []
        self._partitions: list[str] = []
        self._properties: dict[str, str] = {}
        self._comment: str | None = None
        self._cluster_by: list[str] = []

    def tableName(self, identifier: str) -> DeltaTableBuilder:
        self._name = arguments.string(identifier, "Table name")
        return self

    def location(self, location: str) -> DeltaTableBuilder:
        self._location = arguments.string(location, "Location")
        return self

    def comment(self, comment: str) -> DeltaTableBuilder:
        self._comment = arguments.string(comment, "Table comment")
        return self

    def addColumn(
        self,
        colName: str,
        dataType: str | DataType,
        nullable: bool = True,
        generatedAlwaysAs: str | None = None,
        generatedByDefaultAs: object | None = None,
        comment: str | None = None,
    ) -> DeltaTableBuilder:
        """``nullable=False`` makes a NOT NULL column, enforced on every write."""
        arguments.string(colName, "Column name")
        arguments.data_type(dataType, "Column data type")
        arguments.boolean(nullable, "Column nullable")
        arguments.optional_string(comment, "Column comment")
        if generatedAlwaysAs is not None and generatedByDefaultAs is not None:
            raise ValueError("generatedByDefaultAs and generatedAlwaysAs cannot both be set.")
        for given in (generatedAlwaysAs, generatedByDefaultAs):
            if given is not None and not isinstance(given, (str, IdentityGenerator)):
                raise TypeError(
                    f"Column {colName}: generatedAlwaysAs takes a SQL expression string or an "
                    f"IdentityGenerator, found {type(given).__name__}."
                )
        if isinstance(generatedByDefaultAs, str):
            raise TypeError("generatedByDefaultAs takes an IdentityGenerator.")
        dtype = arguments.column_type(dataType, parse_type)
        generator = next(
            (
                g
                for g in (generatedAlwaysAs, generatedByDefaultAs)
                if isinstance(g, IdentityGenerator)
            ),
            None,
        )
        if generator is not None:
            arguments.identity_spec(colName, dtype, generator.step)
        metadata = {"comment": comment} if comment is not None else {}
        field = StructField(colName, dtype, nullable, metadata)
        if isinstance(generatedAlwaysAs, str):
            field = column_values.with_generation(field, generatedAlwaysAs)
        elif isinstance(generatedAlwaysAs, IdentityGenerator):
            field = identity.declare(field, generatedAlwaysAs.start, generatedAlwaysAs.step)
        elif isinstance(generatedByDefaultAs, IdentityGenerator):
            g = generatedByDefaultAs
            field = identity.declare(field, g.start, g.step, always=False)
        self._fields.append(field)
        return self

    def addColumns(self, cols: StructType | list[StructField]) -> DeltaTableBuilder:
        if not isinstance(cols, (StructType, list)) or not all(
            isinstance(f, StructField) for f in cols
        ):
            raise TypeError("addColumns takes a StructType or a list of StructField.")
        self._fields.extend(cols)
        return self

    def partitionedBy(self, *cols: str | list[str]) -> DeltaTableBuilder:
        self._partitions = [
            c for group in cols for c in ([group] if isinstance(group, str) else group)
        ]
        for c in self._partitions:
            arguments.string(c, "Partition column name")
        return self

    def clusterBy(self, *cols: str | list[str]) -> DeltaTableBuilder:
        """Liquid clustering columns (at most 4; not with partitionedBy)."""
        self._cluster_by = [
            c for group in cols for c in ([group] if isinstance(group, str) else group)
        ]
        for c in self._cluster_by:
            arguments.string(c, "Clustering column")
        return self

    def property(self, key: str, value: str) -> DeltaTableBuilder:
        self._properties[arguments.string(key, "Property key")] = arguments.string(
            value, "Property value"
        )
        return self

    def execute(self) -> DeltaTable:
        if not self._name and not self._location:
            raise ValueError(f"DeltaTable.{self._mode}() needs .tableName(...) or .location(...).")
        if not self._fields:
            raise ValueError(f"DeltaTable.{self._mode}() needs columns: call addColumn(s).")
        schema = StructType(self._fields)
        if self._mode in ("replace", "createOrReplace"):
            return self._replace(schema)
        if_not_exists = self._mode == "createIfNotExists"
        if self._name:
            with clustering.creating(self._cluster_by):
                location = names.of(self._spark).create(
                    self._name,
                    schema,
                    self._location,
                    self._partitions,
                    self._properties,
                    self._comment,
                    if_not_exists,
                )
            return DeltaTable(self._spark, location)
        assert self._location is not None
        try:
            create_table(
                self._location,
                schema,
                self._partitions,
                self._properties,
                self._comment,
                cluster_by=self._cluster_by,
            )
        except TableAlreadyExistsError:
            if not if_not_exists:
                raise
        return DeltaTable(self._spark, self._location)

    def _replace(self, schema: StructType) -> DeltaTable:
        or_create = self._mode == "createOrReplace"
        catalog = names.of(self._spark) if self._name else None
        location = self._location
        if catalog is not None and self._name is not None:
            try:
                location = catalog.location(self._name)
            except TableNotFoundError:
                if not or_create:
                    raise TableNotFoundError(
                        f"[DELTA_CANNOT_REPLACE_MISSING_TABLE] Table {self._name} cannot be "
                        "replaced as it did not exist. Use DeltaTable.createOrReplace() to "
                        "create it."
                    ) from None
                with clustering.creating(self._cluster_by):
                    location = catalog.create(
                        self._name,
                        schema,
                        self._location,
                        self._partitions,
                        self._properties,
                        self._comment,
                        False,
                    )
                return DeltaTable(self._spark, location)
        assert location is not None
        replace_table(
            location,
            schema,
            self._partitions,
            self._properties,
            self._comment,
            create_if_missing=or_create,
            cluster_by=self._cluster_by,
        )
        names.schema_changed(self._spark, location)
        return DeltaTable(self._spark, location)


# Field metadata the log keeps for the engine, not shown in the DataFrame a read returns.
INTERNAL_METADATA = ("delta.generationExpression", "delta.identity.", "delta.columnMapping.")


def _users_metadata(field: StructField) -> dict:
    return {k: v for k, v in field.metadata.items() if not k.startswith(INTERNAL_METADATA)}


def _session(spark: SparkSession | None) -> SparkSession:
    session = spark or SparkSession.getActiveSession()
    if session is None:
        raise ValueError("No active SparkSession: pass one, or create it with headwater.session().")
    return session


def _apply_hadoop_conf(spark: SparkSession, path: str, conf: Mapping[str, str]) -> None:
    """``forPath``'s ``hadoopConf`` for the bucket of ``path``: configured in this process
    and shipped to Python workers (the ``delta`` source is registered again so its workers
    get the new settings)."""
    from headwater.delta.read.source import DeltaDataSource
    from headwater.storage import settings

    location = storage.parse(path)
    if not location.is_s3:
        return  # local paths need no settings
    given = settings.from_spark_conf({f"spark.hadoop.{k}": v for k, v in conf.items()})
    general = given.get("")
    if general is not None:
        settings.configure(general, location.bucket)
    spark.sparkContext.environment[settings.ENVIRONMENT_VARIABLE] = settings.encoded()
    spark.dataSource.register(DeltaDataSource)
