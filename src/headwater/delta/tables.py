"""``DeltaTable``: delta-spark's Python API, so ``from delta.tables import DeltaTable``
ports by changing the import to ``from headwater.delta.tables import DeltaTable``.

DML (delete/update/merge) runs in Spark (:mod:`headwater.delta.dml`); maintenance and
history go through delta-rs (:mod:`headwater.delta.maintenance`).
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import DataFrame, SparkSession

from headwater.delta import dml, maintenance, merge
from headwater.delta.dml import Clause, ExprLike
from headwater.delta.log import DeltaLog
from headwater.delta.read import read_delta
from headwater.errors import TableNotFoundError


class DeltaTable:
    def __init__(self, spark: SparkSession, path: str, alias: str | None = None) -> None:
        self._spark = spark
        self._path = DeltaLog(path).root
        self._alias = alias

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def forPath(cls, sparkSession: SparkSession, path: str) -> DeltaTable:
        if not DeltaLog(path).exists():
            raise TableNotFoundError(f"[DELTA_MISSING_DELTA_TABLE] {path} is not a Delta table.")
        return cls(sparkSession, path)

    @classmethod
    def forName(cls, sparkSession: SparkSession, tableOrViewName: str) -> DeltaTable:
        from headwater.catalog import Catalog
        from headwater.catalog.names import delta_path

        by_path = delta_path(tableOrViewName)
        if by_path is not None:
            return cls.forPath(sparkSession, by_path)
        return cls(sparkSession, Catalog.of(sparkSession).require(tableOrViewName).location)

    @classmethod
    def isDeltaTable(cls, sparkSession: SparkSession, identifier: str) -> bool:
        return DeltaLog(identifier).exists()

    @classmethod
    def create(cls, sparkSession: SparkSession | None = None) -> maintenance.CreateBuilder:
        return maintenance.CreateBuilder(_session(sparkSession), if_not_exists=False)

    @classmethod
    def createIfNotExists(
        cls, sparkSession: SparkSession | None = None
    ) -> maintenance.CreateBuilder:
        return maintenance.CreateBuilder(_session(sparkSession), if_not_exists=True)

    # -- reading ---------------------------------------------------------------------------

    def toDF(self) -> DataFrame:
        df = read_delta(self._spark, self._path)
        return df.alias(self._alias) if self._alias else df

    def alias(self, aliasName: str) -> DeltaTable:
        return DeltaTable(self._spark, self._path, aliasName)

    def history(self, limit: int | None = None) -> DataFrame:
        return maintenance.history(self._spark, self._path, limit)

    def detail(self) -> DataFrame:
        return maintenance.detail(self._spark, self._path)

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

    def optimize(self) -> maintenance.OptimizeBuilder:
        return maintenance.OptimizeBuilder(self._spark, self._path)

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

    def _add(self, kind: str, action: str, condition=None, values=None) -> DeltaMergeBuilder:
        self._clauses.append(Clause(kind, action, condition, values))
        return self

    def whenMatchedUpdate(
        self, condition: ExprLike | None = None, set: Mapping[str, ExprLike] | None = None
    ):
        return self._add("matched", "update", condition, dict(set or {}))

    def whenMatchedUpdateAll(self, condition: ExprLike | None = None):
        return self._add("matched", "update", condition)

    def whenMatchedDelete(self, condition: ExprLike | None = None):
        return self._add("matched", "delete", condition)

    def whenNotMatchedInsert(
        self, condition: ExprLike | None = None, values: Mapping[str, ExprLike] | None = None
    ):
        return self._add("not_matched", "insert", condition, dict(values or {}))

    def whenNotMatchedInsertAll(self, condition: ExprLike | None = None):
        return self._add("not_matched", "insert", condition)

    def whenNotMatchedBySourceUpdate(
        self, condition: ExprLike | None = None, set: Mapping[str, ExprLike] | None = None
    ):
        return self._add("not_matched_by_source", "update", condition, dict(set or {}))

    def whenNotMatchedBySourceDelete(self, condition: ExprLike | None = None):
        return self._add("not_matched_by_source", "delete", condition)

    def withSchemaEvolution(self) -> DeltaMergeBuilder:
        self._evolve = True
        return self

    def execute(self) -> DataFrame:
        """Run the MERGE; returns one row of its metrics (as delta-spark 3.x does)."""
        t = self._table
        result = merge.merge(
            t._spark, t._path, self._source, self._condition, self._clauses, t._alias, self._evolve
        )
        keys = ["numTargetRowsUpdated", "numTargetRowsDeleted", "numTargetRowsInserted"]
        row = {"num_affected_rows": sum(result.metrics.get(k, 0) for k in keys)}
        row.update({_snake(k): result.metrics.get(k, 0) for k in keys})
        return t._spark.createDataFrame([row])


def _snake(name: str) -> str:
    return {
        "numTargetRowsUpdated": "num_updated_rows",
        "numTargetRowsDeleted": "num_deleted_rows",
        "numTargetRowsInserted": "num_inserted_rows",
    }[name]


def _session(spark: SparkSession | None) -> SparkSession:
    session = spark or SparkSession.getActiveSession()
    if session is None:
        raise ValueError("No active SparkSession: pass one, or create it with headwater.session().")
    return session
