"""``DeltaTable``: delta-spark's Python API, so ``from delta.tables import DeltaTable``
ports by changing the import to ``from headwater.delta.tables import DeltaTable``.

Thin on purpose: DML runs in :mod:`.dml` and :mod:`.merge`, maintenance in
:mod:`.maintenance`, history in :mod:`.history`, creation in :mod:`.create`; names go
through the session's catalog (:mod:`.names`).
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import DataType, StructField, StructType

from headwater.delta import dml, history, maintenance, merge, names
from headwater.delta.create import create_table
from headwater.delta.expressions import ExprLike
from headwater.delta.log import DeltaLog
from headwater.delta.merge_clauses import Clause, ClauseAction, ClauseKind
from headwater.delta.read import read_delta
from headwater.errors import DeltaError, TableAlreadyExistsError, TableNotFoundError
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
    def forPath(cls, sparkSession: SparkSession, path: str) -> DeltaTable:
        if not DeltaLog(path).exists():
            raise TableNotFoundError(f"[DELTA_MISSING_DELTA_TABLE] {path} is not a Delta table.")
        return cls(sparkSession, path)

    @classmethod
    def forName(cls, sparkSession: SparkSession, tableOrViewName: str) -> DeltaTable:
        return cls.forPath(sparkSession, names.of(sparkSession).location(tableOrViewName))

    @classmethod
    def isDeltaTable(cls, sparkSession: SparkSession, identifier: str) -> bool:
        return DeltaLog(identifier).exists()

    @classmethod
    def create(cls, sparkSession: SparkSession | None = None) -> DeltaTableBuilder:
        return DeltaTableBuilder(_session(sparkSession), if_not_exists=False)

    @classmethod
    def createIfNotExists(
        cls,
        sparkSession: SparkSession | None = None,
    ) -> DeltaTableBuilder:
        return DeltaTableBuilder(_session(sparkSession), if_not_exists=True)

    # -- reading ---------------------------------------------------------------------------

    def toDF(self) -> DataFrame:
        df = read_delta(self._spark, self._path)
        return df.alias(self._alias) if self._alias else df

    def alias(self, aliasName: str) -> DeltaTable:
        return DeltaTable(self._spark, self._path, aliasName)

    def history(self, limit: int | None = None) -> DataFrame:
        return history.history(self._spark, self._path, limit)

    def detail(self) -> DataFrame:
        return history.detail(self._spark, self._path)

    # -- DML ---------------------------------------------------------------------------------

    def delete(self, condition: ExprLike | None = None) -> None:
        dml.delete(self._spark, self._path, condition)

    def update(
        self, condition: ExprLike | None = None, set: Mapping[str, ExprLike] | None = None
    ) -> None:
        if set is None:  # update(set={...}) without a condition, as delta-spark allows
            raise ValueError("update() needs set={column: expression}.")
        dml.update(self._spark, self._path, condition, set)

    def updateExpr(
        self, condition: str | None = None, set: Mapping[str, str] | None = None
    ) -> None:
        self.update(condition, set)

    def merge(self, source: DataFrame, condition: ExprLike) -> DeltaMergeBuilder:
        return DeltaMergeBuilder(self, source, condition)

    # -- maintenance -----------------------------------------------------------------------

    def optimize(self) -> DeltaOptimizeBuilder:
        return DeltaOptimizeBuilder(self._spark, self._path)

    def vacuum(self, retentionHours: float | None = None) -> DataFrame:
        return maintenance.vacuum(self._spark, self._path, retentionHours)

    def generate(self, mode: str) -> None:
        """Write manifests for Parquet-only engines (mode ``symlink_format_manifest``)."""
        from headwater.delta.manifest import generate

        generate(self._path, mode)

    def restoreToVersion(self, version: int) -> DataFrame:
        return maintenance.restore(self._spark, self._path, version=version)

    def restoreToTimestamp(self, timestamp: str) -> DataFrame:
        return maintenance.restore(self._spark, self._path, timestamp=timestamp)


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
        return self._add("matched", "update", condition, dict(set or {}))

    def whenMatchedUpdateAll(self, condition: ExprLike | None = None) -> DeltaMergeBuilder:
        return self._add("matched", "update", condition)

    def whenMatchedDelete(self, condition: ExprLike | None = None) -> DeltaMergeBuilder:
        return self._add("matched", "delete", condition)

    def whenNotMatchedInsert(
        self, condition: ExprLike | None = None, values: Mapping[str, ExprLike] | None = None
    ) -> DeltaMergeBuilder:
        return self._add("not_matched", "insert", condition, dict(values or {}))

    def whenNotMatchedInsertAll(self, condition: ExprLike | None = None) -> DeltaMergeBuilder:
        return self._add("not_matched", "insert", condition)

    def whenNotMatchedBySourceUpdate(
        self, condition: ExprLike | None = None, set: Mapping[str, ExprLike] | None = None
    ) -> DeltaMergeBuilder:
        return self._add("not_matched_by_source", "update", condition, dict(set or {}))

    def whenNotMatchedBySourceDelete(self, condition: ExprLike | None = None) -> DeltaMergeBuilder:
        return self._add("not_matched_by_source", "delete", condition)

    def withSchemaEvolution(self) -> DeltaMergeBuilder:
        self._evolve = True
        return self

    def execute(self) -> DataFrame:
        """Run the MERGE; returns one row of its metrics (as delta-spark 3.x does)."""
        t = self._table
        result = merge.merge(
            t._spark, t.path, self._source, self._condition, self._clauses, t._alias, self._evolve
        )
        keys = {
            "numTargetRowsUpdated": "num_updated_rows",
            "numTargetRowsDeleted": "num_deleted_rows",
            "numTargetRowsInserted": "num_inserted_rows",
        }
        row = {"num_affected_rows": sum(result.metrics.get(k, 0) for k in keys)}
        row.update({snake: result.metrics.get(k, 0) for k, snake in keys.items()})
        return t._spark.createDataFrame([row])


class DeltaOptimizeBuilder:
    """``DeltaTable.optimize().where(...).executeCompaction()``, as in delta-spark."""

    def __init__(self, spark: SparkSession, path: str) -> None:
        self._spark = spark
        self._path = path
        self._where: str | None = None

    def where(self, partitionFilter: str) -> DeltaOptimizeBuilder:
        self._where = partitionFilter
        return self

    def executeCompaction(self) -> DataFrame:
        """Rewrite each partition's small files into one (dataChange=false)."""
        return maintenance.optimize(self._spark, self._path, self._where)


class DeltaTableBuilder:
    """``DeltaTable.create(spark).tableName(...).addColumn(...)....execute()``"""

    def __init__(self, spark: SparkSession, if_not_exists: bool) -> None:
        self._spark = spark
        self._if_not_exists = if_not_exists
        self._name: str | None = None
        self._location: str | None = None
        self._fields: list[StructField] = []
        self._partitions: list[str] = []
        self._properties: dict[str, str] = {}
        self._comment: str | None = None

    def tableName(self, identifier: str) -> DeltaTableBuilder:
        self._name = identifier
        return self

    def location(self, location: str) -> DeltaTableBuilder:
        self._location = location
        return self

    def comment(self, comment: str) -> DeltaTableBuilder:
        self._comment = comment
        return self

    def addColumn(
        self,
        colName: str,
        dataType: str | DataType,
        nullable: bool = True,
        **_: object,
    ) -> DeltaTableBuilder:
        dtype = parse_type(dataType) if isinstance(dataType, str) else dataType
        self._fields.append(StructField(colName, dtype, True))
        return self

    def addColumns(self, cols: StructType | list[StructField]) -> DeltaTableBuilder:
        self._fields.extend(StructField(f.name, f.dataType, True) for f in cols)
        return self

    def partitionedBy(self, *cols: str | list[str]) -> DeltaTableBuilder:
        self._partitions = [
            c for group in cols for c in ([group] if isinstance(group, str) else group)
        ]
        return self

    def property(self, key: str, value: str) -> DeltaTableBuilder:
        self._properties[key] = value
        return self

    def execute(self) -> DeltaTable:
        schema = StructType(self._fields)
        if self._name:
            location = names.of(self._spark).create(
                self._name,
                schema,
                self._location,
                self._partitions,
                self._properties,
                self._comment,
                self._if_not_exists,
            )
            return DeltaTable(self._spark, location)
        if not self._location:
            raise DeltaError("DeltaTable.create() needs .tableName(...) or .location(...).")
        try:
            create_table(self._location, schema, self._partitions, self._properties, self._comment)
        except TableAlreadyExistsError:
            if not self._if_not_exists:
                raise
        return DeltaTable(self._spark, self._location)


def _session(spark: SparkSession | None) -> SparkSession:
    session = spark or SparkSession.getActiveSession()
    if session is None:
        raise ValueError("No active SparkSession: pass one, or create it with headwater.session().")
    return session
