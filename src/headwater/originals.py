"""PySpark's own reader, writer and session methods, as they were before headwater wrapped
any of them.

The adapter (:mod:`headwater.adapter`) replaces some methods on PySpark's classes. Code that
must reach Spark itself — the catalog mirroring a table into Spark's catalog, the SQL front
passing a statement through, the Python-path read of a Delta table — calls the original
through :func:`original`, so no package needs the adapter above it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_SAVED: dict[tuple[type, str], Callable[..., Any]] = {}


def keep(cls: type, name: str) -> Callable[..., Any]:
    """Remember ``cls.name`` before it is replaced (the first call wins); returns it."""
    key = (cls, name)
    if key not in _SAVED:
        _SAVED[key] = getattr(cls, name)
    return _SAVED[key]


def forget(cls: type, name: str) -> Callable[..., Any] | None:
    """Drop the remembered original (once it is back on the class); returns it."""
    return _SAVED.pop((cls, name), None)


def original(cls: type, name: str) -> Callable[..., Any]:
    """PySpark's own ``cls.name``, whether or not the adapter has replaced it."""
    return _SAVED.get((cls, name)) or getattr(cls, name)
