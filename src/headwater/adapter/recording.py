"""The builder setters the adapter records (see :mod:`.state`): each wrapper notes the
call, then lets PySpark's own method run, so Spark's side of the builder is unchanged."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from headwater.adapter.state import BuilderState, as_text, columns, state_of

Method = Callable[..., Any]
Note = Callable[[BuilderState, tuple[Any, ...], dict[str, Any]], None]


def recorder(note: Note) -> Callable[[Method], Method]:
    """A patch maker: the wrapper calls ``note(state, args, kwargs)``, then the original."""

    def make(original: Method) -> Method:
        @functools.wraps(original)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            note(state_of(self), args, kwargs)
            return original(self, *args, **kwargs)

        return wrapper

    return make


def _first(args: tuple[Any, ...], kwargs: dict[str, Any], name: str) -> Any:
    return args[0] if args else kwargs.get(name)


def _format(state: BuilderState, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    state.format = str(_first(args, kwargs, "source")).lower()


def _sink_function(sink: str) -> Note:
    """``foreachBatch(f)``/``foreach(f)``: Spark's writer then runs ``f`` whatever format was
    set before (``format("delta").foreachBatch(f)`` does not write Delta), so the recorded
    format becomes Spark's name for that sink."""

    def note(state: BuilderState, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        state.format = sink

    return note


def _using(state: BuilderState, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    state.format = str(_first(args, kwargs, "provider")).lower()


def _option(state: BuilderState, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    key = _first(args, kwargs, "key")
    value = args[1] if len(args) > 1 else kwargs.get("value")
    state.set_option(str(key), value)


def _options(state: BuilderState, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    for key, value in kwargs.items():
        state.set_option(key, value)


def _mode(state: BuilderState, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    state.mode = _first(args, kwargs, "saveMode")


def _partition_by(state: BuilderState, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    state.partition_by = columns(args)


def _bucket_by(state: BuilderState, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    state.bucket_by = columns(args[1:] or (kwargs.get("col"),))


def _sort_by(state: BuilderState, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    state.sort_by = columns(args or (kwargs.get("col"),))


def _cluster_by(state: BuilderState, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    state.cluster_by = columns(args)


def _schema(state: BuilderState, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    state.schema = _first(args, kwargs, "schema")


def _output_mode(state: BuilderState, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    state.output_mode = _first(args, kwargs, "outputMode")


def _query_name(state: BuilderState, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    state.query_name = _first(args, kwargs, "queryName")


def _table_property(state: BuilderState, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    key = _first(args, kwargs, "property")
    value = args[1] if len(args) > 1 else kwargs.get("value")
    state.properties[str(key)] = as_text(value) or ""


def _partitioned_by(state: BuilderState, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    state.partition_columns = list(args)


format_ = recorder(_format)
using = recorder(_using)
foreach_batch = recorder(_sink_function("foreachbatch"))
foreach = recorder(_sink_function("foreach"))
option = recorder(_option)
options = recorder(_options)
mode = recorder(_mode)
partition_by = recorder(_partition_by)
bucket_by = recorder(_bucket_by)
sort_by = recorder(_sort_by)
cluster_by = recorder(_cluster_by)
schema = recorder(_schema)
output_mode = recorder(_output_mode)
query_name = recorder(_query_name)
table_property = recorder(_table_property)
partitioned_by = recorder(_partitioned_by)
