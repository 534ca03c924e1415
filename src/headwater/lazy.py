"""Submodules as attributes on first use (PEP 562), for packages whose modules are heavy.

``import headwater`` then ``headwater.pipelines.run(...)``, ``headwater.delta.tables`` or
``headwater.engines.door`` work as the docs write them, while ``import headwater`` stays
light: ``headwater.pipelines`` pulls in the runner, ``headwater.sql`` sqlglot, and Spark's
Python workers import single modules of ``headwater.delta`` without the rest. A package
defines ``__getattr__`` with :func:`submodule`. Imports nothing of headwater.
"""

from __future__ import annotations

import importlib
from types import ModuleType


def submodule(package: str, name: str) -> ModuleType:
    """``package.name`` imported on first use. A name that is no submodule is an
    AttributeError, as for any missing attribute (``hasattr`` stays False); a submodule
    that fails to import raises its own error."""
    if not name.startswith("_"):
        try:
            return importlib.import_module(f"{package}.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"{package}.{name}":
                raise  # the submodule exists; something it imports does not
    raise AttributeError(f"module {package!r} has no attribute {name!r}")
