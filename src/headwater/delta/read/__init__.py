"""Reading tables: batch reads of a snapshot (:mod:`.batch`), Spark's native scan, the
``delta`` Python data source, streaming reads, the change data feed, and which files a
filter or a DML can touch (skipping, pruning). May import ``files``, ``log``, ``schema``."""

from types import ModuleType

from headwater.lazy import submodule


def __getattr__(name: str) -> ModuleType:
    return submodule(__name__, name)  # ``headwater.delta.tables`` without importing it first
