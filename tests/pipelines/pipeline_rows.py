"""What most pipeline tests start from: the bronze table over the landing folder and rows
of orders. A module of its own, not the folder's conftest: ``from conftest import`` finds
another folder's conftest when pytest is given several test folders at once."""

from __future__ import annotations

# A bronze streaming table over the landing folder, as most tests' pipelines start.
RAW_TABLE = """
from pyspark import pipelines as dp

@dp.table
def raw():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.schemaHints", "id bigint, amount bigint")
        .load(spark.conf.get("source_dir") + "/orders")
    )
"""


def orders(start: int, n: int, region: str = "eu") -> list[dict]:
    return [{"id": i, "amount": i * 10, "region": region} for i in range(start, start + n)]
