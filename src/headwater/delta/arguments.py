"""Argument checks of delta-spark's Python API, with delta-spark's exception types.

Code written for delta-spark catches ``TypeError`` / ``ValueError`` for a wrong argument,
raised before any work is done; the same calls must fail the same way here rather than
deep inside Spark (or not at all, as an update with no assignments would).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pyspark.errors import ParseException, UnsupportedOperationException
from pyspark.sql import Column, DataFrame
from pyspark.sql.types import DataType, LongType


def string(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, found {value!r} of type {type(value).__name__}.")
    return value


_KINDS: dict[type, str] = {str: "a string", int: "an int", bool: "a boolean"}


def needs(value: Any, kind: type, name: str) -> Any:
    """delta-spark's own checks on the table's maintenance and protocol calls (restore,
    add/drop feature): a ValueError worded as delta-spark words it, which ported code may
    match on."""
    if not isinstance(value, kind):
        raise ValueError(f"{name} needs to be {_KINDS[kind]} but got '{type(value)}'.")
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
    """A dict of column name -> Column or SQL expression string (required: delta-spark
    raises ValueError for a missing one, before looking at the condition)."""
    if value is None:
        raise ValueError(f"{name} cannot be None.")
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


def column_type(value: str | DataType, parse: Callable[[str], DataType]) -> DataType:
    """A column's type; text that is no type is Spark's ParseException, as in delta-spark
    (whose builder hands the text to Spark's parser)."""
    if isinstance(value, DataType):
        return value
    try:
        return parse(value)
    except ValueError as e:
        raise ParseException(message=f"Cannot parse the column type '{value}': {e}") from None


def identity_spec(column: str, dtype: DataType, step: int) -> None:
    """delta-spark's checks of an ``IdentityGenerator``: a step of 0 is a ValueError, a
    column not BIGINT its UnsupportedOperationException."""
    if step == 0:
        raise ValueError(f"Column {column}: an IdentityGenerator's step cannot be 0.")
    if not isinstance(dtype, LongType):
        raise UnsupportedOperationException(
            message=f"Column {column} is {dtype.simpleString()}: identity columns must be BIGINT."
        )


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
