"""Parity of the ``DeltaTable`` API: headwater's ``headwater.delta.tables.DeltaTable``
against delta-spark's ``delta.tables.DeltaTable``, each on its engine, the same calls
(tests/engines/parity/matrix.py says how they are compared)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.engines.parity import matrix
from tests.engines.parity.matrix import (
    collected,
    default_isolation,
    delta_table_class,
    location,
    ran,
    refused,
    row,
)

SAMPLE = (
    "SELECT id, CAST(id % 3 AS INT) AS part, concat('n', id) AS name, id * 1.5 AS amount "
    "FROM range({}, {})"
)
RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"


def made(spark, root: str, *partitions: str, appends: int = 1):
    """A table of ``appends`` commits of 4 rows in one file each; its ``DeltaTable``."""
    path = f"{root}/t"
    for i in range(appends):
        rows = spark.sql(SAMPLE.format(4 * i, 4 * i + 4)).coalesce(1)
        rows.write.format("delta").mode("append").partitionBy(*partitions).save(path)
    return delta_table_class(spark).forPath(spark, path), path


def source(spark, extra: str = ""):
    return spark.sql(SAMPLE.format(2, 7)).selectExpr("*", *([extra] if extra else []))


def files(path: str) -> int:
    """Data files in the table's folder (vacuum's work), the log aside."""
    return sum(1 for f in Path(path).rglob("*.parquet") if "_delta_log" not in f.parts)


# -- DML ---------------------------------------------------------------------------------------


def merge_builder(spark, root):
    from pyspark.sql import functions as F

    table, path = made(spark, root, appends=1)
    merge = (
        table.alias("t")
        .merge(source(spark).alias("s"), "t.id = s.id")
        .whenMatchedUpdate(condition="s.id > 2", set={"name": "s.name", "amount": F.lit(-1.0)})
        .whenMatchedDelete()
        .whenNotMatchedInsert(condition="s.id < 6", values={"id": "s.id", "name": "'new'"})
        .whenNotMatchedBySourceUpdate(condition="t.id = 0", set={"name": F.lit("orphan")})
        .whenNotMatchedBySourceDelete()
    )
    return ran(collected(merge.execute()), t=path)


def merge_with_schema_evolution(spark, root):
    table, path = made(spark, root, appends=2)
    merge = table.alias("t").merge(source(spark, "id * 10 AS extra").alias("s"), "t.id = s.id")
    merge = merge.withSchemaEvolution().whenMatchedUpdateAll().whenNotMatchedInsertAll()
    return ran(collected(merge.execute()), t=path)


def update(spark, root):
    from pyspark.sql import functions as F

    table, path = made(spark, root, appends=2)
    first = table.update(condition="id > 5", set={"name": "'big'", "amount": "amount * 2"})
    second = table.update(F.col("part") == 1, {"name": F.concat(F.col("name"), F.lit("!"))})
    return ran([first, second], t=path)


def delete(spark, root):
    from pyspark.sql import functions as F

    table, path = made(spark, root, "part", appends=2)
    results = [table.delete("id < 2"), table.delete(F.col("part") == 2)]
    return ran(results, t=path)


def to_df(spark, root):
    table, path = made(spark, root, appends=2)
    df = table.toDF()
    return ran((df.columns, collected(df.where("part = 1"))), t=path)


def for_name(spark, root):
    table = delta_table_class(spark)
    spark.sql(SAMPLE.format(0, 3)).write.format("delta").saveAsTable("delta_table_for_name")
    found = table.forName(spark, "delta_table_for_name")
    flags = [table.isDeltaTable(spark, location(spark, "delta_table_for_name"))]
    flags.append(table.isDeltaTable(spark, f"{root}/nothing"))
    return ran((collected(found.toDF()), flags), t=location(spark, "delta_table_for_name"))


# -- what the log says ------------------------------------------------------------------------


def history(spark, root):
    from pyspark.sql import functions as F

    table, path = made(spark, root, appends=2)
    table.delete("id = 1")
    table.update("id = 2", {"name": "'two'"})
    found = table.history().select(
        "version",
        "operation",
        # delta-spark writes a DELETE's or UPDATE's predicate as its analysed expression,
        # with expression ids (``(id#90838L = 1)``) that no two runs share.
        F.map_filter("operationParameters", lambda k, v: k != "predicate").alias("parameters"),
        "readVersion",
        default_isolation("isolationLevel"),
        "isBlindAppend",
        "userMetadata",
    )
    return ran((collected(found), table.history(1).count()), t=path)


def history_operation_metrics(spark, root):
    """Each commit's metrics by name, and those that count rows (not bytes or times)."""
    from pyspark.sql import functions as F

    table, path = made(spark, root, appends=2)
    table.delete("id = 1")
    table.update("id = 2", {"name": "'two'"})
    merge = table.alias("t").merge(source(spark).alias("s"), "t.id = s.id")
    merge.whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    metrics = F.col("operationMetrics")
    rows = F.map_filter(metrics, lambda k, v: k.endswith("Rows")).alias("rows")
    names = F.sort_array(F.map_keys(metrics)).alias("names")
    return ran(collected(table.history().select("version", names, rows)), t=path)


DETAIL = (
    "format",
    "partitionColumns",
    "clusteringColumns",
    "numFiles",
    "properties",
    "minReaderVersion",
    "minWriterVersion",
    "tableFeatures",
)


def detail(spark, root):
    table, path = made(spark, root, "part", appends=2)
    return ran(collected(table.detail().select(*DETAIL)), t=path)


def detail_location(spark, root):
    table, path = made(spark, root)
    return ran(table.detail().first()["location"])


def optimized(rows) -> list:
    """OPTIMIZE's metrics that count (not bytes or times)."""
    counted = (
        "numFilesAdded",
        "numFilesRemoved",
        "partitionsOptimized",
        "numBatches",
        "totalConsideredFiles",
        "totalFilesSkipped",
        "preserveInsertionOrder",
    )
    return [{k: r["metrics"][k] for k in counted} for r in rows]


def optimize_compaction(spark, root):
    table, path = made(spark, root, appends=3)
    return ran(optimized(table.optimize().executeCompaction().collect()), t=path)


def optimize_a_partition(spark, root):
    table, path = made(spark, root, "part", appends=3)
    return ran(optimized(table.optimize().where("part = 1").executeCompaction().collect()), t=path)


def optimize_z_order(spark, root):
    table, path = made(spark, root, appends=3)
    return ran(optimized(table.optimize().executeZOrderBy("amount", "id").collect()), t=path)


def optimize_result_path(spark, root):
    table, path = made(spark, root, appends=2)
    return ran([r["path"] for r in table.optimize().executeCompaction().collect()])


def vacuum(spark, root):
    """Files kept by a vacuum at the default retention (nothing is old enough), then by
    one at none."""
    table, path = made(spark, root, appends=3)
    table.delete("id < 6")
    counts = [files(path)]
    table.vacuum()
    counts.append(files(path))
    spark.conf.set(RETENTION_CHECK, "false")
    try:
        table.vacuum(0)
    finally:
        spark.conf.unset(RETENTION_CHECK)
    return ran(counts + [files(path)], t=path)


def vacuum_result(spark, root):
    table, path = made(spark, root)
    return ran(collected(table.vacuum()))


def vacuum_under_the_retention_fails(spark, root):
    table, path = made(spark, root, appends=2)
    return ran(refused(path, lambda: table.vacuum(0)))


def restore_to_version(spark, root):
    table, path = made(spark, root, appends=3)
    table.delete("id = 0")
    table.restoreToVersion(1)
    return ran(t=path)


def restore_result(spark, root):
    """RESTORE's metrics: their names, and the file counts (not sizes)."""
    table, path = made(spark, root, appends=2)
    found = table.restoreToVersion(0)
    counts = [c for c in found.columns if c.startswith("num_")]
    return ran((found.columns, collected(found.select(*counts))))


def generate_manifest(spark, root):
    table, path = made(spark, root, "part", appends=2)
    table.generate("symlink_format_manifest")
    manifests = sorted(Path(path, "_symlink_format_manifest").rglob("manifest"))
    found = [(str(m.parent.relative_to(path)), len(m.read_text().split())) for m in manifests]
    return ran(found, t=path)


def upgrade_table_protocol(spark, root):
    table, path = made(spark, root)
    table.upgradeTableProtocol(1, 4)
    versions = table.detail().select("minReaderVersion", "minWriterVersion").first()
    return ran(tuple(versions), t=path)


def add_feature_support(spark, root):
    table, path = made(spark, root)
    table.addFeatureSupport("deletionVectors")
    return ran(collected(table.detail().select("tableFeatures")), t=path)


def create_builder(spark, root):
    path = f"{root}/t"
    (
        delta_table_class(spark)
        .create(spark)
        .location(path)
        .addColumn("id", "BIGINT", nullable=False)
        .addColumn("part", "INT")
        .addColumn("doubled", "BIGINT", generatedAlwaysAs="id * 2")
        .partitionedBy("part")
        .property("delta.appendOnly", "true")
        .comment("made by the builder")
        .execute()
    )
    spark.sql(f"INSERT INTO delta.`{path}` (id, part) VALUES (1, 1), (2, 0)")
    return ran(t=path)


OPERATIONS = [
    row(merge_builder),
    row(merge_with_schema_evolution),
    row(update),
    row(delete),
    row(to_df),
    row(for_name),
    row(
        history,
        documented=["isolation-default"],
    ),
    row(history_operation_metrics),
    row(detail),
    row(detail_location),
    row(optimize_compaction),
    row(optimize_a_partition),
    row(optimize_z_order),
    row(optimize_result_path),
    row(vacuum),
    row(vacuum_result),
    row(vacuum_under_the_retention_fails),
    row(restore_to_version),
    row(restore_result),
    row(generate_manifest),
    row(upgrade_table_protocol),
    row(add_feature_support),
    row(
        create_builder,
        documented=["read-nullability"],
    ),
]


@pytest.mark.parametrize("op", OPERATIONS)
def test_delta_table(parity_runs, op):
    matrix.assert_parity(parity_runs[__file__], op)
