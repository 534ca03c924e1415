"""Argument checks of delta-spark's Python API, with delta-spark's exception types.

Code written for delta-spark catches ``TypeError`` / ``ValueError`` for a wrong argument,
raised before any work is done; the same calls must fail the same way here rather than
deep inside Spark (or not at all, as an update with no assignments would).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql.types import DataType


def string(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, found {value!r} of type {type(value).__name__}.")
    return value


def optional_string(value: Any, name: str) -> str | None:
    return None if value is None else string(value, name)


def integer(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, found {value!r} of type {type(value).__name__}.")
    return value


def condition(value: Any, name: str = "condition", required: bool = False) -> Any:
    """A Column or a SQL expression string (None allowed unless ``required``)."""
    if value is None:
        if required:
            raise ValueError(f"'{name}' cannot be None.")
        return None
    if not isinstance(value, (str, Column)):
        raise TypeError(
            f"{name} must be a Spark SQL Column or a string (expression in SQL syntax), found "
            f"{value!r} of type {type(value).__name__}."
        )
    return value


def assignments(value: Any, name: str) -> Mapping[str, Any]:
    """A dict of column name -> Column or SQL expression string."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict, found {value!r} of type {type(value).__name__}.")
    for key, expr in value.items():
        if not isinstance(key, str):
            raise TypeError(
                f"Keys of dict in {name} must contain only strings with column names, found "
                f"{key!r} of type {type(key).__name__}."
            )
        if not isinstance(expr, (str, Column)):
            raise TypeError(
                f"Values of dict in {name} must contain only Spark SQL Columns or strings "
                f"(expressions in SQL syntax) as values, found {expr!r} of type "
                f"{type(expr).__name__}."
            )
    return value


def dataframe(value: Any, name: str) -> DataFrame:
    if value is None:
        raise ValueError(f"'{name}' cannot be None.")
    if not isinstance(value, DataFrame):
        raise TypeError(f"Type of '{name}' must be DataFrame, found {type(value).__name__}.")
    return value


def data_type(value: Any, name: str) -> str | DataType:
    if not isinstance(value, (str, DataType)):
        raise TypeError(
            f"{name} must be a DataType or a type string such as 'INT', found {value!r} of "
            f"type {type(value).__name__}."
        )
    return value


def boolean(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, found {value!r} of type {type(value).__name__}.")
    return value


def string_map(value: Any, name: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise TypeError(f"{name} must be a dict of strings to strings, found {value!r}.")
    return dict(value)
