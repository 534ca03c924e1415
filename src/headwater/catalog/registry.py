"""The persistent record of named tables: one small JSON file per table in the warehouse.

``<warehouse>/_headwater_catalog/<database>/<table>.json`` holds the table's location and
whether headwater manages its data. Plain files (written whole, then renamed) work on any
filesystem, need no server, and let several processes share one warehouse.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass

from headwater import storage
from headwater.catalog.names import TableName

REGISTRY_DIR = "_headwater_catalog"


@dataclass(frozen=True)
class TableEntry:
    database: str
    table: str
    location: str
    managed: bool

    @property
    def name(self) -> TableName:
        return TableName(self.database, self.table)


class Registry:
    def __init__(self, warehouse: str) -> None:
        self.warehouse = storage.normalize(warehouse)
        self.root = storage.join(self.warehouse, REGISTRY_DIR)

    def _file(self, name: TableName) -> str:
        return storage.join(self.root, name.database, f"{name.table}.json")

    def managed_location(self, name: TableName) -> str:
        if name.database == "default":
            return storage.join(self.warehouse, name.table)
        return storage.join(self.warehouse, f"{name.database}.db", name.table)

    def get(self, name: TableName) -> TableEntry | None:
        try:
            data = json.loads(storage.read_bytes(self._file(name)))
        except FileNotFoundError:
            return None
        return TableEntry(**data)

    def put(self, entry: TableEntry) -> None:
        path = self._file(entry.name)
        tmp = f"{path}.{os.getpid()}.tmp"
        storage.write_bytes(tmp, json.dumps(asdict(entry)).encode())
        storage.move(tmp, path)

    def remove(self, name: TableName) -> None:
        storage.delete_file(self._file(name))

    def databases(self) -> list[str]:
        dirs = {f.path[len(storage.filesystem(self.root)[1]) :].strip("/").split("/")[0]
                for f in storage.list_files(self.root)}  # fmt: skip
        return sorted(d for d in dirs if d)

    def entries(self, database: str | None = None) -> list[TableEntry]:
        out = []
        for info in storage.list_files(self.root):
            if not info.path.endswith(".json"):
                continue
            data = json.loads(storage.read_bytes(info.path))
            if database is None or data["database"] == database:
                out.append(TableEntry(**data))
        return sorted(out, key=lambda e: (e.database, e.table))
