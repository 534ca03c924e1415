"""Delta Lake tables on plain PySpark: the log through delta-rs, data through Spark's Parquet I/O.

The package imports nothing itself (its submodules load on first use, :mod:`headwater.lazy`):
its modules are on the import path of the streaming sources, which Spark loads in a fresh
Python process for every stream it starts, and each takes only what it needs (``headwater.delta.write.batch.write``,
``headwater.delta.read.batch.read_delta``, ``headwater.delta.options.WriteSpec``).
"""

from types import ModuleType

from headwater.lazy import submodule


def __getattr__(name: str) -> ModuleType:
    return submodule(__name__, name)  # ``headwater.delta.tables`` without importing it first
