"""Each table version a view's refresh reads, loaded from its log once.

A refresh's planning reads the same versions more than once (the changed input at the
version refreshed to: its row count, then the Arrow job's schema and configuration; the
view at its latest version: its size, then the Arrow job's files), each load a read of
the log (3-8 ms). A version of a Delta table never changes, so within one refresh
(:func:`scope`) the first load is reused; outside a scope every call loads afresh (no
state outlives a refresh: a table dropped and created again at the same location
between refreshes starts its versions over)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from headwater.engines.door import SnapshotView, table_log

_loaded: ContextVar[dict[tuple[str, int], SnapshotView] | None] = ContextVar(
    "headwater_refresh_snapshots", default=None
)


@contextmanager
def scope() -> Iterator[None]:
    """Versions loaded inside are loaded once (per thread: flows refresh in parallel)."""
    token = _loaded.set({})
    try:
        yield
    finally:
        _loaded.reset(token)


def at(location: str, version: int) -> SnapshotView:
    """The table at ``location`` at ``version`` (loaded once within a :func:`scope`)."""
    loaded = _loaded.get()
    if loaded is None:
        return table_log(location).snapshot(version)
    key = (location, int(version))
    if key not in loaded:
        loaded[key] = table_log(location).snapshot(version)
    return loaded[key]
