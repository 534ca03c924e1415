"""Source files and target tables the COPY INTO tests share."""

from __future__ import annotations

import json
import os

from deltalake import DeltaTable as RsTable
from pyspark.sql.types import StructType

from headwater import api


def write_json(directory, name: str, rows: list[dict]) -> str:
    """A JSON Lines file ``directory/name`` (directories created); its path."""
    path = os.path.join(str(directory), name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    return path


def write_text(directory, name: str, text: str) -> str:
    path = os.path.join(str(directory), name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


def land(directory, files: int, rows: int = 3, start: int = 0) -> list[str]:
    """``files`` JSON files ``f<i>.json``, rows ``{"id": i*100+j, "name": "n<j>"}``."""
    return [
        write_json(
            directory, f"f{i:03d}.json", [{"id": i * 100 + j, "name": f"n{j}"} for j in range(rows)]
        )
        for i in range(start, start + files)
    ]


def table(spark, path, ddl: str = "id bigint, name string") -> str:
    """An empty Delta table at ``path`` with columns ``ddl``, made by the session's engine;
    its COPY INTO target name."""
    api.for_path(spark, str(path)).replace(StructType.fromDDL(ddl))
    return f"delta.`{path}`"


def last_commit(spark, path):
    """The newest row of the table's history, as the session's engine gives it."""
    return api.for_path(spark, str(path)).delta_table().history(1).first()


def rows(path) -> list[dict]:
    """The table's rows (read with delta-rs, not Spark), sorted."""
    data = RsTable(str(path)).to_pyarrow_table().to_pylist()
    return sorted(data, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def result(df) -> tuple[int, int, int]:
    r = df.collect()
    assert len(r) == 1
    return tuple(r[0])


def versions(path) -> int:
    return RsTable(str(path)).version()
