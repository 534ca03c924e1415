"""What a view's Python definition computes, as text to digest: the function's source, and
the source of the helpers and the values of the constants it names, followed down.

A view's incremental state (its recorded inputs, its kept sums and counts) belongs to one
definition: when the definition changes, the next refresh recomputes. The function's own
source is not enough. ``def gold(): return aggregate()`` keeps its source when
``aggregate`` is edited, and a flow made in a loop (``for region in REGIONS: ...``) has one
source for every region; either way the view would go on incrementally from rows the old
query made. So the text also holds, for every global or closure name the function's code
uses (its nested lambdas and comprehensions included): the source of a function defined in
the user's code, followed the same way, and the value of a plain constant (strings,
numbers, booleans, tuples of them). Library functions (PySpark, headwater, anything
installed) are named, not read: they change with a version, not with the pipeline.
"""

from __future__ import annotations

import inspect
import os
import sysconfig
from collections.abc import Callable, Iterator
from types import CodeType, FunctionType
from typing import Any

# Helpers are followed this deep: enough for a view calling a helper calling a helper.
DEPTH = 4
_PLAIN = (str, int, float, bool, bytes, type(None))
_LIBRARY_ROOTS = tuple(
    {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
) + (os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),)  # headwater


def definition_text(func: Callable[..., Any]) -> str:
    """The function's source, then its helpers' sources and its constants' values."""
    parts: list[str] = []
    _collect(func, parts, set(), DEPTH)
    return "\n".join(parts)


def _collect(func: Callable[..., Any], parts: list[str], seen: set[int], depth: int) -> None:
    seen.add(id(func))
    try:
        parts.append(inspect.getsource(func))
    except (OSError, TypeError):
        parts.append(f"{func.__module__}.{func.__qualname__}")
    if not isinstance(func, FunctionType):
        return
    values: dict[str, Any] = {}
    for name in sorted(set(_names(func.__code__))):
        if name in func.__globals__:
            values[name] = func.__globals__[name]
    for name, cell in zip(func.__code__.co_freevars, func.__closure__ or (), strict=False):
        try:
            values[name] = cell.cell_contents
        except ValueError:  # a cell not filled yet
            continue
    for name, value in sorted(values.items()):
        if _plain(value):
            parts.append(f"{name} = {value!r}")
        elif depth > 0 and _followed(value, seen):
            _collect(value, parts, seen, depth - 1)


def _names(code: CodeType) -> Iterator[str]:
    """Global and closure names a code object and the code objects inside it use."""
    yield from code.co_names
    yield from code.co_freevars
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _names(const)


def _followed(value: object, seen: set[int]) -> bool:
    return isinstance(value, FunctionType) and id(value) not in seen and _users(value)


def _plain(value: object) -> bool:
    if isinstance(value, _PLAIN):
        return True
    if isinstance(value, (tuple, frozenset)):
        return all(_plain(item) for item in value)
    return False


def _users(func: FunctionType) -> bool:
    """Defined in the user's code: not the standard library, not an installed package."""
    try:
        path = inspect.getsourcefile(func) or ""
    except TypeError:
        return False
    return bool(path) and not os.path.abspath(path).startswith(_LIBRARY_ROOTS)
