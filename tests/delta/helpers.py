"""Shared steps of the Delta tests."""

from __future__ import annotations

from pathlib import Path


def drain_to_memory(spark, df, name: str, checkpoint: Path) -> list:
    """Run streaming ``df`` once over everything available; the rows it produced."""
    query = (
        df.writeStream.format("memory")
        .queryName(name)
        .trigger(availableNow=True)
        .option("checkpointLocation", str(checkpoint))
        .start()
    )
    query.awaitTermination(120)
    return spark.sql(f"SELECT * FROM {name}").collect()
