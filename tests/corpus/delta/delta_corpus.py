"""The compatibility corpus's checks: every table a published example creates is compared,
row for row, with an oracle the test computes in plain Python from the data it generated.

A table is read twice: by delta-rs (``deltalake``, a reader headwater's read path has no
part in) and through headwater (``spark.read.format("delta")``); both must equal the
oracle. Rows are compared as multisets of tuples in the columns' order, with timestamps
made naive UTC and floats rounded, so the order Spark or delta-rs returns rows in does not
matter but every value, NULLs included, does.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections.abc import Iterable, Sequence
from decimal import Decimal

import pyarrow as pa
from deltalake import DeltaTable as RsTable
from deltalake import QueryBuilder


def canon(value):
    """One spelling of a value, whichever reader returned it."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    if isinstance(value, float):
        return round(value, 9)
    if isinstance(value, Decimal):
        return value.normalize()
    if isinstance(value, dict):
        return tuple(sorted(((k, canon(v)) for k, v in value.items()), key=lambda kv: kv[0]))
    if hasattr(value, "asDict"):  # a Spark struct (a tuple too): as delta-rs gives it, a dict
        return canon(value.asDict(recursive=True))
    if isinstance(value, list | tuple):
        return tuple(canon(v) for v in value)
    return value


def _sort_key(row: tuple) -> tuple:
    return tuple((v is None, str(type(v)), v if v is not None else 0) for v in row)


def bag(rows: Iterable[Sequence]) -> list[tuple]:
    """Rows as a sorted list of canonical tuples: a multiset two readers can be compared by."""
    return sorted((tuple(canon(v) for v in row) for row in rows), key=_sort_key)


def rs_table(path: str, version: int | None = None) -> pa.Table:
    """The table at ``path`` (at ``version``) as delta-rs reads it; its DataFusion path
    applies deletion vectors, which ``to_pyarrow_table`` refuses."""
    table = RsTable(path) if version is None else RsTable(path, version=version)
    return pa.table(QueryBuilder().register("t", table).execute("select * from t").read_all())


def _parse(rows: Iterable[Sequence], columns: Sequence[str], json_columns: Sequence[str]):
    """``json_columns`` hold JSON text (a rescue column): compared as the objects it spells."""
    at = [columns.index(c) for c in json_columns]
    for row in rows:
        yield tuple(rescued(v) if i in at else v for i, v in enumerate(row))


def rescued(text: str | None) -> dict | None:
    """A rescue column's JSON as an object; its ``_file_path`` without a ``file:`` scheme,
    which readers spell either way for a local file."""
    if text is None:
        return None
    found = json.loads(text)
    if isinstance(found.get("_file_path"), str):
        found["_file_path"] = re.sub("^file:(//)?", "", found["_file_path"])
    return found


def rs_rows(path, columns: Sequence[str], version=None, json_columns=()) -> list[tuple]:
    table = rs_table(path, version)
    rows = zip(*(table.column(c).to_pylist() for c in columns), strict=True)
    return bag(_parse(rows, columns, json_columns))


def spark_rows(spark, path, columns: Sequence[str], version=None, json_columns=()):
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    rows = (tuple(r) for r in reader.load(path).select(*columns).collect())
    return bag(_parse(rows, columns, json_columns))


def location(spark, name: str) -> str:
    """Where the named table lives (its catalog entry, as ``DESCRIBE DETAIL`` gives it)."""
    found = spark.sql(f"DESCRIBE DETAIL {name}").collect()[0]["location"]
    return found.removeprefix("file:")


def assert_table(
    spark, table: str, columns: Sequence[str], expected, version=None, json_columns=()
):
    """``table`` (a path, or a name) holds exactly ``expected`` (rows in ``columns``'
    order; the values of ``json_columns`` as the objects their JSON spells), by delta-rs
    and by headwater's reader."""
    path = table if table.startswith("/") else location(spark, table)
    want = bag(expected)
    got = rs_rows(path, columns, version, json_columns)
    assert got == want, f"delta-rs reads {path}:\n{got}\nexpected:\n{want}"
    got = spark_rows(spark, path, columns, version, json_columns)
    assert got == want, f"headwater reads {path}:\n{got}\nexpected:\n{want}"


def assert_schema(spark, table: str, expected: dict[str, str]) -> None:
    """Column names and Spark types (``simpleString``); the order is not compared."""
    path = table if table.startswith("/") else location(spark, table)
    fields = spark.read.format("delta").load(path).schema.fields
    got = {f.name: f.dataType.simpleString() for f in fields}
    assert got == expected, f"{path} has columns {got}"
    assert sorted(rs_table(path).column_names) == sorted(expected), "delta-rs sees other columns"


def rs_changes(path: str, start: int, columns: Sequence[str]) -> list[tuple]:
    """The change data feed from ``start`` by delta-rs: ``columns`` then ``_change_type``
    and ``_commit_version``."""
    feed = pa.table(RsTable(path).load_cdf(starting_version=start).read_all())
    names = [*columns, "_change_type", "_commit_version"]
    return bag(zip(*(feed.column(c).to_pylist() for c in names), strict=True))


def live_files(path: str) -> list[dict]:
    """The table's add actions (path, size_bytes, partition values) as delta-rs lists them."""
    return pa.table(RsTable(path).get_add_actions(flatten=True)).to_pylist()


def history_operations(path: str) -> list[str]:
    """Each version's operation, oldest first, from the log as delta-rs reads it."""
    return [c["operation"] for c in sorted(RsTable(path).history(), key=lambda c: c["version"])]


def finish(query, timeout: float = 180) -> None:
    """Wait for a triggered stream (``availableNow``) to end; raise what stopped it."""
    if not query.awaitTermination(timeout):
        query.stop()
        raise AssertionError(f"stream {query.name or query.id} still running after {timeout}s")
    if query.exception() is not None:
        raise query.exception()


def write_lines(directory: str, name: str, lines: Iterable[str]) -> str:
    """A landing file of ``lines``; its path (the folder is created)."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.writelines(line + "\n" for line in lines)
    return path


def write_json(directory: str, name: str, records: Iterable[dict]) -> str:
    return write_lines(directory, name, (json.dumps(r) for r in records))
