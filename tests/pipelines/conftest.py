"""A pipeline project per test: spec, sources and landing folder in ``tmp_path``, tables in
a database of its own (the warehouse is shared by the whole test session)."""

from __future__ import annotations

import itertools
import json
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

_ids = itertools.count()


@dataclass
class Project:
    root: Path
    database: str
    spark: Any

    @property
    def landing(self) -> Path:
        return self.root / "landing"

    @property
    def storage(self) -> Path:
        return self.root / "storage"

    def source(self, name: str, text: str) -> Path:
        path = self.root / "transformations" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        return path

    def spec(self, **fields: Any) -> Path:
        data = {
            "name": self.database,
            "storage": str(self.storage),
            "database": self.database,
            "configuration": {"source_dir": str(self.landing)},
            "libraries": [{"glob": {"include": "transformations/**"}}],
        }
        data.update(fields)
        path = self.root / "spark-pipeline.yml"
        path.write_text(yaml.safe_dump(data))
        return path

    def land(self, name: str, rows: list[dict], folder: str = "orders") -> None:
        target = self.landing / folder
        target.mkdir(parents=True, exist_ok=True)
        (target / name).write_text("".join(json.dumps(r) + "\n" for r in rows))

    def run(self, **options: Any):
        from headwater import pipelines

        if not (self.root / "spark-pipeline.yml").exists():
            self.spec()
        return pipelines.run(self.root, self.spark, **options)

    def rows(self, table: str, order_by: str | None = None) -> list[tuple]:
        df = self.spark.table(f"{self.database}.{table}")
        if order_by:
            df = df.orderBy(*order_by.split(","))
        return [tuple(r) for r in df.collect()]

    def count(self, table: str) -> int:
        return self.spark.table(f"{self.database}.{table}").count()


@pytest.fixture
def project(tmp_path, spark) -> Project:
    root = tmp_path / "pipeline"
    root.mkdir()
    return Project(root, f"pl_{next(_ids)}_{tmp_path.name[-6:].lower()}".replace("-", "_"), spark)
