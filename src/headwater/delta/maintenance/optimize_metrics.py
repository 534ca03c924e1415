"""What OPTIMIZE reports, shaped as delta-spark's ``OptimizeMetrics``.

Code written for delta-spark reads ``execute*()``'s result as ``row.metrics.numFilesAdded``,
``row.metrics.filesAdded.totalSize``, ``row.metrics.zOrderStats`` ...; the struct here has
the same fields in the same order, and the commit's ``operationMetrics`` carry the names
delta-spark's OPTIMIZE commits use (``numAddedFiles``, ``p50FileSize``, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession

from headwater.delta.log.delta_log import Snapshot

_FILE_SIZES = "struct<min:bigint,max:bigint,avg:double,totalFiles:bigint,totalSize:bigint>"
_ZFILES = "struct<num:bigint,size:bigint>"
_CFILES = "struct<numFiles:bigint,size:bigint>"
_ZORDER = (
    f"struct<strategyName:string,inputCubeFiles:{_ZFILES},inputOtherFiles:{_ZFILES},"
    f"inputNumCubes:bigint,mergedFiles:{_ZFILES},numOutputCubes:bigint,mergedNumCubes:bigint>"
)
_CLUSTERING = (
    f"struct<inputZCubeFiles:{_CFILES},inputOtherFiles:{_CFILES},inputNumZCubes:bigint,"
    f"mergedFiles:{_CFILES},numOutputZCubes:bigint>"
)
_PARALLELISM = (
    "struct<maxClusterActiveParallelism:bigint,minClusterActiveParallelism:bigint,"
    "maxSessionActiveParallelism:bigint,minSessionActiveParallelism:bigint>"
)
_VECTORS = "struct<numDeletionVectorsRemoved:bigint,numDeletionVectorRowsRemoved:bigint>"
METRICS_SCHEMA = (
    f"struct<numFilesAdded:bigint,numFilesRemoved:bigint,filesAdded:{_FILE_SIZES},"
    f"filesRemoved:{_FILE_SIZES},partitionsOptimized:bigint,zOrderStats:{_ZORDER},"
    f"clusteringStats:{_CLUSTERING},numBins:bigint,numBatches:bigint,"
    "totalConsideredFiles:bigint,totalFilesSkipped:bigint,preserveInsertionOrder:boolean,"
    "numFilesSkippedToReduceWriteAmplification:bigint,"
    "numBytesSkippedToReduceWriteAmplification:bigint,startTimeMs:bigint,endTimeMs:bigint,"
    f"totalClusterParallelism:bigint,totalScheduledTasks:bigint,"
    f"autoCompactParallelismStats:{_PARALLELISM},deletionVectorStats:{_VECTORS},"
    "numTableColumns:bigint,numTableColumnsWithStats:bigint>"
)
RESULT_SCHEMA = f"path string, metrics {METRICS_SCHEMA}"


@dataclass
class Outcome:
    """The files one OPTIMIZE considered, removed and added (sizes in bytes)."""

    considered: int
    start_ms: int
    end_ms: int = 0
    added: list[int] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)
    partitions: int = 0
    vectors_removed: tuple[int, int] = (0, 0)
    cube_files: int = 0
    cubes: int = 0

    def commit_metrics(self) -> dict[str, int | str]:
        """The ``operationMetrics`` of the OPTIMIZE commit, as delta-spark names them."""
        sizes = sorted(self.added) or [0]
        n = len(sizes)
        return {
            "numAddedFiles": len(self.added),
            "numRemovedFiles": len(self.removed),
            "numAddedBytes": sum(self.added),
            "numRemovedBytes": sum(self.removed),
            "minFileSize": sizes[0],
            "p25FileSize": sizes[n // 4],
            "p50FileSize": sizes[n // 2],
            "p75FileSize": sizes[n * 3 // 4],
            "maxFileSize": sizes[-1],
            "numDeletionVectorsRemoved": self.vectors_removed[0],
            "numDeletionVectorRowsRemoved": self.vectors_removed[1],
        }


def _sizes(sizes: list[int]) -> dict[str, Any]:
    if not sizes:
        return {"min": None, "max": None, "avg": 0.0, "totalFiles": 0, "totalSize": 0}
    return {
        "min": min(sizes),
        "max": max(sizes),
        "avg": sum(sizes) / len(sizes),
        "totalFiles": len(sizes),
        "totalSize": sum(sizes),
    }


def metrics_row(
    spark: SparkSession,
    snap: Snapshot,
    z_order_by: list[str],
    clustered_by: list[str] | None,
    o: Outcome,
) -> dict[str, Any]:
    """The ``metrics`` struct of the result row."""
    removed_total = {"num": len(o.removed), "size": sum(o.removed)}
    zorder = None
    if z_order_by and clustered_by is None:
        zorder = {
            "strategyName": "all",  # every file of each partition
            "inputCubeFiles": {"num": 0, "size": 0},
            "inputOtherFiles": removed_total,
            "inputNumCubes": 0,
            "mergedFiles": removed_total,
            "numOutputCubes": o.partitions,
            "mergedNumCubes": None,
        }
    clustering = None
    if clustered_by is not None:
        merged = {"numFiles": len(o.removed), "size": sum(o.removed)}
        clustering = {
            "inputZCubeFiles": {"numFiles": o.cube_files, "size": 0},
            "inputOtherFiles": {"numFiles": o.considered - o.cube_files, "size": 0},
            "inputNumZCubes": o.cubes,
            "mergedFiles": merged,
            "numOutputZCubes": 1 if o.added else 0,
        }
    bins = o.partitions if o.removed else 0
    columns = len(snap.schema.fields)
    return {
        "numFilesAdded": len(o.added),
        "numFilesRemoved": len(o.removed),
        "filesAdded": _sizes(o.added),
        "filesRemoved": _sizes(o.removed),
        "partitionsOptimized": o.partitions,
        "zOrderStats": zorder,
        "clusteringStats": clustering,
        "numBins": bins,
        "numBatches": 1 if bins else 0,
        "totalConsideredFiles": o.considered,
        "totalFilesSkipped": o.considered - len(o.removed),
        "preserveInsertionOrder": False,
        "numFilesSkippedToReduceWriteAmplification": 0,
        "numBytesSkippedToReduceWriteAmplification": 0,
        "startTimeMs": o.start_ms,
        "endTimeMs": o.end_ms,
        "totalClusterParallelism": spark.sparkContext.defaultParallelism,
        "totalScheduledTasks": bins,
        "autoCompactParallelismStats": None,
        "deletionVectorStats": {
            "numDeletionVectorsRemoved": o.vectors_removed[0],
            "numDeletionVectorRowsRemoved": o.vectors_removed[1],
        },
        "numTableColumns": columns,
        "numTableColumnsWithStats": columns,
    }
