"""What the Spark-free reader tests share: schemas by keyword and files from text."""

from __future__ import annotations

from pyspark.sql.types import StructField, StructType

RESCUE = "_rescued_data"


def schema(**columns) -> StructType:
    return StructType([StructField(name, dt) for name, dt in columns.items()])


def write(tmp_path, name: str, data: str | bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return str(path)
