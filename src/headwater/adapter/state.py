"""What a PySpark builder was told before its terminal call, kept on the Python side.

PySpark keeps a reader's or writer's format, options and mode only in the JVM, where
Python cannot read them back. The adapter records every setter call in a
:class:`BuilderState` per builder object (held weakly: it goes with the builder), so the
terminal call (``load``, ``save``, ``toTable``...) can route a Delta table to headwater
with everything the user set — option names as the user typed them.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.types import StructType

_STATES: weakref.WeakKeyDictionary[Any, BuilderState] = weakref.WeakKeyDictionary()


def as_text(value: Any) -> str | None:
    """An option value as Spark stores it (booleans as ``true``/``false``)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass
class BuilderState:
    format: str | None = None
    options: dict[str, str | None] = field(default_factory=dict)  # names as typed
    mode: str | None = None
    partition_by: list[str] | None = None
    bucket_by: list[str] | None = None
    sort_by: list[str] | None = None
    cluster_by: list[str] | None = None
    schema: StructType | str | None = None
    output_mode: str | None = None
    query_name: str | None = None
    table: str | None = None  # df.writeTo(table)
    properties: dict[str, str] = field(default_factory=dict)  # writeTo(...).tableProperty
    partition_columns: list[Any] | None = None  # writeTo(...).partitionedBy (names or Columns)

    def set_option(self, key: str, value: Any) -> None:
        """Option names are case-insensitive in Spark: a later spelling replaces an
        earlier one."""
        for existing in [k for k in self.options if k.lower() == str(key).lower()]:
            del self.options[existing]
        self.options[str(key)] = as_text(value)

    def merged(self, extra: Mapping[str, Any] | None = None) -> dict[str, str]:
        """The options set on the builder plus those of the terminal call, without nulls."""
        merged = BuilderState(options=dict(self.options))
        for key, value in (extra or {}).items():
            merged.set_option(key, value)
        return {k: v for k, v in merged.options.items() if v is not None}

    def is_format(self, name: str, given: str | None = None, default: bool = False) -> bool:
        chosen = given or self.format
        return (chosen or "").lower() == name if chosen else default


def state_of(builder: Any) -> BuilderState:
    state = _STATES.get(builder)
    if state is None:
        state = _STATES[builder] = BuilderState()
    return state


def columns(cols: tuple[Any, ...]) -> list[str]:
    """``partitionBy("a", "b")`` or ``partitionBy(["a", "b"])`` as a list of names."""
    if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
        cols = tuple(cols[0])
    return [str(c) for c in cols]
