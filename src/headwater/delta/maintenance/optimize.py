"""OPTIMIZE: compaction, Z-ordering and liquid clustering, committed with ``dataChange=false``.

* **Compaction** (``executeCompaction``, ``OPTIMIZE t``): each partition's small files are
  rewritten into one.
* **Z-order** (``executeZOrderBy(cols)``, ``OPTIMIZE t ZORDER BY (cols)``): every file of
  each selected partition is rewritten along a space-filling curve over ``cols``
  (:mod:`.curve`), into files of about the target size, so a filter on any of the columns
  skips most files by their min/max statistics.
* **Clustering** (any OPTIMIZE of a clustered table): the files no OPTIMIZE has clustered
  yet are clustered the same way by the table's clustering columns; already clustered
  files are left alone (incremental), unless ``FULL``. The new files carry what delta-spark
  writes on clustered files (``clusteringProvider``, ``ZCUBE_*`` tags), so either engine
  knows which files are clustered, and by which columns.

All of it is one Spark job reading the chosen files and writing new ones, then one commit;
the result is delta-spark's ``(path, metrics struct)`` row.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from headwater.delta.dml import row_ids
from headwater.delta.dml.delete_update import partition_only_files
from headwater.delta.dml.target import FILE_COL, read_target
from headwater.delta.files.data_files import discard_files, write_files
from headwater.delta.log import clustering, replay
from headwater.delta.log.actions import AddFile, now_ms
from headwater.delta.log.commit import Transaction
from headwater.delta.log.delta_log import DataFile, DeltaLog, Snapshot
from headwater.delta.log.operations import Operation
from headwater.delta.maintenance import curve
from headwater.delta.maintenance.optimize_metrics import RESULT_SCHEMA, Outcome, metrics_row
from headwater.delta.read import pruning
from headwater.delta.schema.expressions import condition_columns, unresolved_text
from headwater.errors import ConcurrentModificationException, DeltaAnalysisError, DeltaError
from headwater.storage.paths import hadoop_uri

SMALL_FILE_BYTES = 128 * 1024 * 1024  # compaction rewrites files smaller than this
MAX_FILE_SIZE_CONF = "spark.databricks.delta.optimize.maxFileSize"
DEFAULT_MAX_FILE_BYTES = 1024 * 1024 * 1024
ZCUBE_ID, ZCUBE_ZORDER_BY, ZCUBE_ZORDER_CURVE = "ZCUBE_ID", "ZCUBE_ZORDER_BY", "ZCUBE_ZORDER_CURVE"


@dataclass
class _Plan:
    """The files one OPTIMIZE rewrites, and how."""

    files: list[DataFile]
    considered: int
    curve_columns: list[str] = field(default_factory=list)  # empty: compaction
    clustered_by: list[str] | None = None  # the table's clustering columns, when clustering
    cube_files: int = 0  # considered files already in a cube of the current columns
    cubes: int = 0


def optimize(
    spark: SparkSession,
    path: str,
    where: str | None = None,
    z_order_by: Sequence[str] = (),
    full: bool = False,
) -> DataFrame:
    """Run OPTIMIZE on the table at ``path``; one row: its path and delta-spark's metrics."""
    start = now_ms()
    dlog = DeltaLog(path)
    snap = dlog.snapshot()
    snap.check_writable()
    plan = _plan(spark, snap, where, list(z_order_by), full)
    outcome = Outcome(considered=plan.considered, start_ms=start)
    if plan.files:
        outcome = _rewrite(spark, dlog, snap, plan, where, full, outcome)
    outcome.end_ms = now_ms()
    row = metrics_row(spark, snap, plan.curve_columns, plan.clustered_by, outcome)
    # The path qualified, as delta-spark gives it (file:/... for a local table).
    return spark.createDataFrame([(hadoop_uri(snap.root), row)], RESULT_SCHEMA)


def _plan(
    spark: SparkSession, snap: Snapshot, where: str | None, z_order_by: list[str], full: bool
) -> _Plan:
    clustered_by = clustering.columns_of(snap)
    if clustered_by:
        if z_order_by:
            raise DeltaAnalysisError(
                f"[DELTA_CLUSTERING_WITH_ZORDER_BY] {snap.root} is clustered by "
                f"({', '.join(clustered_by)}); OPTIMIZE clusters it by those columns and takes "
                "no ZORDER BY. Run OPTIMIZE without it, or change the columns with ALTER TABLE "
                "... CLUSTER BY."
            )
        if where:
            raise DeltaAnalysisError(
                f"[DELTA_CLUSTERING_WITH_PARTITION_PREDICATE] OPTIMIZE ... WHERE '{where}': "
                f"{snap.root} is clustered (not partitioned); run OPTIMIZE without WHERE."
            )
        return _clustering_plan(snap, clustered_by, full)
    if full:
        raise DeltaAnalysisError(
            f"[DELTA_OPTIMIZE_FULL_NOT_SUPPORTED] OPTIMIZE ... FULL re-clusters a clustered "
            f"table; {snap.root} is not clustered. Run OPTIMIZE without FULL."
        )
    candidates = snap.files
    if where:
        _check_partition_predicate(snap, where)
        chosen = partition_only_files(spark, snap, F.expr(where))
        if chosen is None and snap.files:
            raise DeltaError(f"OPTIMIZE ... WHERE '{where}' must refer to partition columns only.")
        candidates = chosen or []
    if z_order_by:
        return _Plan(candidates, len(candidates), _z_columns(snap, z_order_by))
    small = [f for f in candidates if f.size < SMALL_FILE_BYTES]
    groups: dict[tuple, list[DataFile]] = {}
    for f in small:
        groups.setdefault(tuple(sorted(f.partition_values.items())), []).append(f)
    files = [f for group in groups.values() if len(group) > 1 for f in group]
    return _Plan(files, len(candidates))


def _check_partition_predicate(snap: Snapshot, where: str) -> None:
    """OPTIMIZE's WHERE selects partitions: a column that is not one is refused with
    delta-spark's message."""
    parts = snap.partition_columns
    lowered = {p.lower() for p in parts}
    for name in condition_columns(where) or []:
        if name.lower() not in lowered:
            raise DeltaAnalysisError(
                f"[DELTA_NON_PARTITION_COLUMN_REFERENCE] Predicate references non-partition "
                f"column '{name}'. Only the partition columns may be referenced: "
                f"[{', '.join(parts)}]"
            )


def _z_columns(snap: Snapshot, columns: list[str]) -> list[str]:
    parts = {p.lower() for p in snap.partition_columns}
    for c in columns:
        if c.lower() in parts:
            raise DeltaAnalysisError(
                f"[DELTA_ZORDERING_ON_PARTITION_COLUMN] {c} is a partition column. "
                "Z-Ordering can only be performed on data columns."
            )
    return clustering.check(columns, snap.schema)


def _clustering_plan(snap: Snapshot, columns: list[str], full: bool) -> _Plan:
    """Unclustered files (all of them with ``full``), as delta-spark's incremental
    clustering picks them; files clustered by other columns (before an ALTER ... CLUSTER BY)
    or by another provider are left to a FULL run."""
    logged = replay.live_adds(DeltaLog(snap.root), snap.version)
    ours = json.dumps(columns, separators=(",", ":"))
    chosen, cube_files, cubes = [], 0, set()
    for f in snap.files:
        add = logged.get(f.path)
        tags = dict((add.tags if add else None) or {})
        provider = (add.extra if add else {}).get("clusteringProvider")
        in_cube = ZCUBE_ID in tags or provider is not None
        same = in_cube and provider in (None, clustering.PROVIDER)
        same = same and _same_columns(tags.get(ZCUBE_ZORDER_BY), ours)
        if same:
            cube_files += 1
            cubes.add(tags.get(ZCUBE_ID))
        if full or not in_cube:
            chosen.append(f)
    return _Plan(chosen, len(snap.files), list(columns), list(columns), cube_files, len(cubes))


def _same_columns(tagged: str | None, ours: str) -> bool:
    if tagged is None:
        return True  # a clustered file without the tag: count it as clustered by ours
    try:
        return [c.lower() for c in json.loads(tagged)] == [c.lower() for c in json.loads(ours)]
    except (ValueError, AttributeError):
        return False


def _rewrite(
    spark: SparkSession,
    dlog: DeltaLog,
    snap: Snapshot,
    plan: _Plan,
    where: str | None,
    full: bool,
    outcome: Outcome,
) -> Outcome:
    parts = snap.partition_columns
    # The DML reader drops rows deleted by deletion vectors and renames column-mapped
    # physical columns, which a plain Parquet read would not.
    df = read_target(spark, snap, plan.files).drop(FILE_COL)
    if plan.curve_columns:
        total = sum(f.size for f in plan.files)
        num_files = max(1, total // max_file_bytes(spark, snap))
        df = curve.cluster(df, plan.curve_columns, int(num_files), parts)
    else:
        df = df.repartition(*[F.col(f"`{p}`") for p in parts]) if parts else df.coalesce(1)
    written = write_files(
        df.select(*[f"`{c.name}`" for c in snap.schema], *row_ids.carried(snap, None)),
        snap.root,
        parts,
        snap.schema,
        data_change=False,
    )
    adds = written.adds
    if plan.clustered_by is not None:
        adds = _tag_cube(adds, plan.clustered_by)
    removes = replay.removes(snap, plan.files, data_change=False)
    txn = Transaction(dlog, snap, _operation(where, plan, full))
    txn.read_files([f.path for f in plan.files], pruning.partition_filter(spark, snap, where))
    txn.remove_files(removes)
    txn.add_files(adds)
    outcome = replace(
        outcome,
        added=[a.size for a in adds],
        removed=[f.size for f in plan.files],
        partitions=len({tuple(sorted(f.partition_values.items())) for f in plan.files}),
        vectors_removed=_vectors(snap, plan.files),
        cube_files=plan.cube_files,
        cubes=plan.cubes,
    )
    txn.metrics = outcome.commit_metrics()
    try:
        txn.commit()
    except ConcurrentModificationException:
        discard_files(snap.root, adds)
        raise
    return outcome


def _tag_cube(adds: list[AddFile], columns: list[str]) -> list[AddFile]:
    """The new files as one cube of the current clustering columns, as delta-spark tags
    clustered files."""
    tags = {
        ZCUBE_ID: str(uuid.uuid4()),
        ZCUBE_ZORDER_BY: json.dumps(columns, separators=(",", ":")),
        ZCUBE_ZORDER_CURVE: curve.NAME if len(columns) > 1 else "linear",
    }
    return [
        replace(
            a,
            tags={**(a.tags or {}), **tags},
            extra={**a.extra, "clusteringProvider": clustering.PROVIDER},
        )
        for a in adds
    ]


def _vectors(snap: Snapshot, files: list[DataFile]) -> tuple[int, int]:
    counts = replay.deleted_counts(snap)
    hit = [counts[f.path] for f in files if f.path in counts]
    return len(hit), sum(hit)


def _operation(where: str | None, plan: _Plan, full: bool) -> Operation:
    """delta-spark's OPTIMIZE parameters: ``zOrderBy`` is empty when clustering."""
    params: dict = {
        "predicate": [unresolved_text(where)] if where else [],
        "zOrderBy": [] if plan.clustered_by is not None else list(plan.curve_columns),
        "clusterBy": list(plan.clustered_by or []),
        "auto": False,
    }
    if full:
        params["isFull"] = True
    return Operation("OPTIMIZE", params)


def max_file_bytes(spark: SparkSession, snap: Snapshot) -> int:
    """Target size of files OPTIMIZE writes: the table's ``delta.targetFileSize``, else
    ``spark.databricks.delta.optimize.maxFileSize``, else 1 GiB (as delta-spark)."""
    for value in (
        snap.configuration.get("delta.targetFileSize"),
        spark.conf.get(MAX_FILE_SIZE_CONF, None),
    ):
        if value:
            parsed = _bytes(value)
            if parsed:
                return parsed
    return DEFAULT_MAX_FILE_BYTES


def _bytes(text: str) -> int | None:
    units = {"b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    t = text.strip().lower().removesuffix("b") or "0"
    try:
        if t[-1] in units:
            return int(float(t[:-1]) * units[t[-1]])
        return int(float(t))
    except ValueError:
        return None
