"""Engine parity as a matrix: every public operation run on both engines over the same
inputs, compared row for row, and every table it leaves read by the other engine too.

An operation is a module-level function of a family module (``test_parity_*.py``)::

    def merge_sql(spark, root: str) -> Ran:   # runs in either engine's process
        ...                                   # makes its inputs under ``root``, runs
        return ran(result, t=path)            # what it returned, and the tables it left

and one entry of that module's ``OPERATIONS`` (:func:`row`): the matrix row. Both engines
(``tests/engines/peer.py``: ``headwater.session()`` and ``headwater.session(delta_engine=
"delta-spark")``, one process each for the whole package) run every selected operation,
each in a folder of its own, side by side, a family per call; then each engine reads every
table both left, in one more call (conftest.py's ``parity_runs``). A row passes when

- both engines ran it and returned equal results, the folders aside (the inputs differ
  by where they are); an error an operation expects is part of its result, as its error
  condition and the versions the failed write committed (:func:`raised`, :func:`refused`);
- every table it left reads the same on the other engine as on its writer (schema, rows,
  change feed), and the other engine's DESCRIBE HISTORY says what the log's commits say
  (version, operation, read version, isolation level, blind append, user metadata);
- the two engines' tables have the same columns and types, rows, change feed, versions and
  commit names, and their logs the same protocol, partition columns, configuration and
  schema.

Differences docs/engines.md lists under "Behaviours that differ" are taken out of the
comparison where they would show, each by name (:data:`DOCUMENTED`), and nothing else is;
a difference found that is not documented keeps its row as a strict xfail. Two are shown
by one row each, not by every row they would touch: the change feed's commit timestamps
(``change_times``) and the protocol a feature gets (``protocol_in``).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.engines.peer import Peer

HERE = Path(__file__).resolve().parent

# docs/engines.md, "Behaviours that differ": a row names those its comparison leaves aside.
DOCUMENTED = {
    # "NOT NULL columns in a read's schema": delta-spark reads every column as nullable.
    "read-nullability",
    # "Commit names": a stream's or a pipeline's commits are named by each engine its way.
    "commit-names",
    # "Isolation of DELETE/UPDATE/MERGE against a concurrent append": the default level
    # each engine records in a data change's commit (WriteSerializable / Serializable).
    "isolation-default",
    # "COPY INTO": a load is a WRITE through delta-spark's writer, a COPY INTO on headwater.
    "copy-into-commits",
    # "DELETE with a subquery": headwater deletes, delta-spark refuses (the operation,
    # test_parity_dml.delete_with_a_subquery, checks the refusal and deletes by value there).
    "delete-subquery",
}

Ran = dict  # {"result": plain data, "tables": {label: path}}


def ran(result: Any = None, **tables: str) -> Ran:
    """What an operation gives back: its result and the tables it left, by label."""
    return {"result": result, "tables": tables}


@dataclass(frozen=True)
class Operation:
    run: Callable[..., Ran]
    documented: tuple[str, ...] = ()
    # Whether the change feed's commit timestamps are compared too (see read_tables).
    change_times: bool = False
    # The row that compares the protocol of tables like this row's (see assert_same_tables).
    protocol_in: str = ""

    @property
    def name(self) -> str:
        return self.run.__name__


def row(
    run: Callable[..., Ran],
    known: str = "",
    documented: Iterable[str] = (),
    change_times: bool = False,
    protocol_in: str = "",
) -> Any:
    """One matrix row: ``run`` on both engines. ``known``: a difference found and not
    documented (one line), the row a strict xfail until it is gone."""
    unknown = set(documented) - DOCUMENTED
    assert not unknown, f"not a documented difference: {unknown}"
    marks = [pytest.mark.xfail(strict=True, reason=known)] if known else []
    op = Operation(run, tuple(documented), change_times, protocol_in)
    return pytest.param(op, id=run.__name__, marks=marks)


# -- in the engines' processes -------------------------------------------------------------

_FAMILIES: dict[str, Any] = {}
RAISED: list[str] = []  # the errors :func:`raised` caught in the running operation


def run_family(spark, file: str, names: list[str], root: str) -> dict[str, dict]:
    """Each operation ``names`` of the family module ``file`` in its own folder of
    ``root``; an operation's unexpected error is its outcome, the others still run."""
    if file not in _FAMILIES:
        spec = importlib.util.spec_from_file_location(f"family_{len(_FAMILIES)}", file)
        assert spec and spec.loader
        _FAMILIES[file] = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_FAMILIES[file])
    # The operations' module imported this file by its name; the peer loaded it by path.
    errors = importlib.import_module("tests.engines.parity.matrix").RAISED
    outcomes = {}
    for name in names:
        folder = Path(root, name)
        folder.mkdir(parents=True)
        started = time.monotonic()
        errors.clear()
        try:
            outcome = {"ok": True, **getattr(_FAMILIES[file], name)(spark, str(folder))}
        except Exception as exc:
            outcome = {"ok": False, "error": f"{type(exc).__name__}: {str(exc)[:2000]}"}
        outcome["seconds"] = round(time.monotonic() - started, 2)
        outcome["raised"] = list(errors)
        outcomes[name] = outcome
    return outcomes


def warehouse(spark) -> str:
    """Where the engine keeps tables made by name."""
    return spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:")


def read_tables(spark, paths: dict[str, tuple[int | None, bool]]) -> dict[str, Any]:
    """Each table as this engine reads it: schema and rows (in a fixed order); where asked,
    its history (of another engine's table: the writer's is read from its log); where the
    change feed is on, from the version given, the feed: its rows but for
    ``_commit_timestamp``, and apart each version's ``_commit_timestamp``, which rows
    compare only when they ask (``change_times``): docs/engines.md, "Differences found",
    change feed commit timestamps, a known difference with a strict xfail row of its own."""
    found: dict[str, Any] = {}
    for path, (feed_from, with_history) in paths.items():
        try:
            df = spark.read.format("delta").load(path)
            schema = [(f.name, f.dataType.simpleString(), f.nullable) for f in df.schema.fields]
            found[path] = {"schema": schema, "rows": ordered(df.collect())}
            if with_history:
                history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").select(*HISTORY)
                found[path]["history"] = sorted(tuple(r) for r in history.collect())
            if feed_from is not None:
                feed = spark.read.format("delta").option("readChangeFeed", "true")
                feed = feed.option("startingVersion", feed_from).load(path)
                times = feed.select("_commit_version", "_commit_timestamp").distinct()
                found[path]["changes"] = ordered(feed.drop("_commit_timestamp").collect())
                found[path]["change_times"] = ordered(times.collect())
        except Exception as exc:
            found[path] = {"error": f"{type(exc).__name__}: {str(exc)[:1000]}"}
    return found


HISTORY = (
    "version",
    "operation",
    "readVersion",
    "isolationLevel",
    "isBlindAppend",
    "userMetadata",
)


def ordered(rows: Iterable[Any]) -> list[tuple]:
    """Rows as tuples in a fixed order (by their text: rows may hold None beside values)."""
    return sorted((tuple(r) for r in rows), key=repr)


# -- in the test process ---------------------------------------------------------------------


@dataclass
class Runs:
    """A family's outcomes on both engines, their folders (the family's, then the warehouse
    of tables by name), every table as each engine read it, and each table's log."""

    roots: dict[str, tuple[str, str]]
    outcomes: dict[str, dict[str, dict]]
    reads: dict[str, dict[str, Any]]
    logs: dict[str, dict]


def each_engine(peers: dict[str, Peer], work: Callable[[str, Peer], Any]) -> dict[str, Any]:
    """``work(name, peer)`` for both engines at once."""
    with ThreadPoolExecutor(len(peers)) as pool:
        futures = {name: pool.submit(work, name, peer) for name, peer in peers.items()}
        return {name: future.result() for name, future in futures.items()}


def selected(items: list[Any]) -> dict[str, list[str]]:
    """The operations of the tests pytest selected, by family module (a family test that
    takes no operation needs them all)."""
    families: dict[str, list[str]] = {}
    for item in items:
        module = getattr(item, "module", None)
        if module is None or Path(module.__file__).parent != HERE:
            continue
        names = families.setdefault(module.__file__, [])
        params = getattr(item, "callspec", None)
        ops = [params.params["op"]] if params and "op" in params.params else None
        for op in ops or [r.values[0] for r in module.OPERATIONS]:
            if op.name not in names:
                names.append(op.name)
    return families


def run(peers: dict[str, Peer], families: dict[str, list[str]], tmp: Path) -> dict[str, Runs]:
    """Every family's operations on both engines: each engine runs them all at its own pace
    (a family per call), then reads every table both engines left."""
    warehouses = each_engine(peers, lambda name, peer: peer.call(warehouse))
    roots = {
        family: {name: (str(tmp / Path(family).stem / name), warehouses[name]) for name in peers}
        for family in families
    }

    def operations_on(name: str, peer: Peer) -> dict[str, dict]:
        return {
            family: peer.call(run_family, family, names, roots[family][name][0])
            for family, names in families.items()
        }

    started = time.monotonic()
    outcomes = each_engine(peers, operations_on)
    ran_for = time.monotonic() - started
    writers = {
        path: name
        for name, found in outcomes.items()
        for family in found.values()
        for outcome in family.values()
        for path in outcome.get("tables", {}).values()
    }
    feeds = {path: change_feed_start(path) for path in writers}
    reads = each_engine(
        peers,
        lambda name, peer: peer.call(
            read_tables, {path: (feeds[path], writer != name) for path, writer in writers.items()}
        ),
    )
    print(
        f"\nparity: {len(writers)} tables; operations {ran_for:.0f} s, "
        f"reads {time.monotonic() - started - ran_for:.0f} s; seconds per operation:"
    )
    for name, found in outcomes.items():
        print(name, {op: o["seconds"] for family in found.values() for op, o in family.items()})
    logs = {path: {**log_summary(path), "history": log_history(path)} for path in writers}
    return {
        family: Runs(roots[family], {n: outcomes[n][family] for n in peers}, reads, logs)
        for family in families
    }


def located(value: Any, roots: tuple[str, ...]) -> Any:
    """``value`` with the engine's folders written ``<root>``, ``<warehouse>``: the
    inputs are the same but for where they are, and paths (a rescued row's file, a table's
    location) say so."""
    if isinstance(value, str):
        for root, placeholder in zip(roots, ("<root>", "<warehouse>"), strict=True):
            value = value.replace(root, placeholder)
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(located(v, roots) for v in value)
    if isinstance(value, dict):
        return {located(k, roots): located(v, roots) for k, v in value.items()}
    return value


def assert_parity(runs: Runs, op: Operation) -> None:
    outcomes = {name: found[op.name] for name, found in runs.outcomes.items()}
    failed = {name: o["error"] for name, o in outcomes.items() if not o["ok"]}
    assert not failed, f"{op.name} failed: {failed}"
    (first, one), (second, other) = outcomes.items()
    results = {
        name: located(outcome["result"], runs.roots[name]) for name, outcome in outcomes.items()
    }
    raised = {
        name: outcome["raised"] for name, outcome in outcomes.items() if outcome.get("raised")
    }
    assert results[second] == results[first], differ(f"{op.name}: results", results, raised)
    assert set(other["tables"]) == set(one["tables"])
    for label in one["tables"]:
        written = {name: outcome["tables"][label] for name, outcome in outcomes.items()}
        for writer, path in written.items():
            assert_read_alike(runs, op, writer, path)
        assert_same_tables(runs, op, label, written)


def differ(what: str, found: dict[str, Any], raised: dict[str, list] | None = None) -> str:
    """Both engines' values, one line each (long ones cut), and the errors each raised."""
    lines = [f"  {k}: {v!r:.3000}" for k, v in found.items()]
    lines += [f"  {k} raised: {v!r:.3000}" for k, v in (raised or {}).items()]
    return what + " differ:\n" + "\n".join(lines)


def read_by(runs: Runs, reader: str, path: str) -> dict:
    found = runs.reads[reader][path]
    assert "error" not in found, f"{reader} cannot read {path}: {found['error']}"
    return found


def assert_read_alike(runs: Runs, op: Operation, writer: str, path: str) -> None:
    """The other engine reads the writer's table as the writer does, and its history as
    the log has it."""
    own = read_by(runs, writer, path)
    for reader in runs.reads:
        if reader != writer:
            theirs = read_by(runs, reader, path)
            what = f"{op.name}: {reader} reads {writer}'s table {path}"
            keys = ("rows", "changes") + (("change_times",) if op.change_times else ())
            for key, of in (("schema", lambda read: schema(read, op)),) + tuple(
                (key, lambda read, key=key: read.get(key)) for key in keys
            ):
                found = {writer: of(own), reader: of(theirs)}
                assert found[reader] == found[writer], differ(f"{what}: {key}", found)
            found = {"the log": runs.logs[path]["history"], reader: theirs["history"]}
            assert found[reader] == found["the log"], differ(f"{what}: history", found)


def assert_same_tables(runs: Runs, op: Operation, label: str, written: dict[str, str]) -> None:
    """The engines' tables of ``label`` are alike: columns, rows, change feed, versions and
    their operations, and what the log says of the table. Protocols are compared by the
    row ``op.protocol_in`` names, where there is one: a protocol chosen otherwise for a
    feature shows in the row about that feature, not in every row whose tables have it."""
    (first, one), (second, other) = written.items()
    mine, theirs = read_by(runs, first, one), read_by(runs, second, other)
    what = f"{op.name}: the engines' tables '{label}'"
    sides = {first: (mine, one), second: (theirs, other)}
    for key, of in (
        ("columns", lambda read, path: [c[:2] for c in read["schema"]]),
        ("rows", lambda read, path: read["rows"]),
        ("changes", lambda read, path: read.get("changes")),
        ("commits", lambda read, path: commits(runs.logs[path]["history"], op)),
        ("log", lambda read, path: logged(runs.logs[path], op)),
    ):
        found = {name: located(of(*side), runs.roots[name]) for name, side in sides.items()}
        assert found[second] == found[first], differ(f"{what}: {key}", found)


def schema(read: dict, op: Operation) -> list[tuple]:
    if "read-nullability" in op.documented:
        return [c[:2] for c in read["schema"]]
    return read["schema"]


def commits(history: list[tuple], op: Operation) -> list:
    """The table's versions and their operations' names."""
    if {"commit-names", "copy-into-commits"} & set(op.documented):
        return [h[0] for h in history]
    return [h[:2] for h in history]


def logged(log: dict, op: Operation) -> dict:
    """What the log says of the table but its history (and its protocol, where another row
    compares it)."""
    left_out = {"history"} | ({"protocol"} if op.protocol_in else set())
    return {key: value for key, value in log.items() if key not in left_out}


def commits_of(path: str) -> Iterable[tuple[int, list[dict]]]:
    """Each JSON commit of the table's log: its version and actions."""
    for commit in sorted(Path(path, "_delta_log").glob("*.json")):
        lines = commit.read_text().splitlines()
        yield int(commit.name.split(".")[0]), [json.loads(line) for line in lines if line]


def log_history(path: str) -> list[tuple]:
    """Each commit's :data:`HISTORY` columns, as its commitInfo has them."""
    found = []
    for version, actions in commits_of(path):
        info = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
        found.append((version, *(info.get(column) for column in HISTORY[1:])))
    return found


def change_feed_start(path: str) -> int | None:
    """The version from which the table's change feed is on to its latest (None: off)."""
    start = None
    for version, actions in commits_of(path):
        for action in actions:
            if "metaData" in action:
                on = action["metaData"].get("configuration", {}).get(CHANGE_FEED) == "true"
                start = (version if start is None else start) if on else None
    return start


CHANGE_FEED = "delta.enableChangeDataFeed"


def log_summary(path: str) -> dict:
    """What the table's log says of it, beside its rows: the latest protocol, partition
    columns, configuration and schema (names, types, nullability, column metadata)."""
    protocol, metadata = {}, {}
    for _, actions in commits_of(path):
        for action in actions:
            protocol = action.get("protocol", protocol)
            metadata = action.get("metaData", metadata)
    for features in ("readerFeatures", "writerFeatures"):  # sets, written in any order
        if features in protocol:
            protocol = {**protocol, features: sorted(protocol[features])}
    return {
        "protocol": protocol,
        "partitionColumns": metadata.get("partitionColumns"),
        "configuration": metadata.get("configuration"),
        "schema": json.loads(metadata.get("schemaString") or "null"),
    }


# -- helpers for operations (in the engines' processes) ---------------------------------------


def engine(spark) -> str:
    from headwater import engines

    return engines.of(spark)


def delta_table_class(spark):
    """The ``DeltaTable`` users of the engine import."""
    if engine(spark) == "delta-spark":
        from delta.tables import DeltaTable
    else:
        from headwater.delta.tables import DeltaTable
    return DeltaTable


def raised(action: Callable[[], Any]) -> tuple:
    """``("raised", condition)`` when ``action`` fails (the first error condition its
    message names, as ``[DELTA_...]``, or None), else ``("returned", result)``."""
    try:
        result = action()
    except Exception as exc:
        found = re.search(r"\[([A-Z][A-Z0-9_.]+)\]", str(exc))
        RAISED.append(f"{type(exc).__name__}: {str(exc)[:500]}")
        return ("raised", found.group(1) if found else None)
    return ("returned", result)


def refused(path: str, action: Callable[[], Any]) -> tuple:
    """:func:`raised` of ``action`` on the table at ``path``, and how many versions it
    committed (a refused write: none)."""
    before = latest(path)
    return (*raised(action), latest(path) - before)


def latest(path: str) -> int:
    """The table's newest version, from its log's commit files (-1: no table)."""
    return max((version for version, _ in commits_of(path)), default=-1)


def default_isolation(column: str):
    """A history's isolation level, each engine's default for data changes written as one
    (docs/engines.md, "Isolation of DELETE/UPDATE/MERGE against a concurrent append":
    headwater records WriteSerializable, delta-spark Serializable)."""
    from pyspark.sql import functions as F

    level = F.col(column)
    defaults = level.isin("WriteSerializable", "Serializable")
    return F.when(defaults, F.lit("<default>")).otherwise(level).alias(column)


def table_rows(spark, name_or_path: str) -> list[tuple]:
    if "/" in name_or_path:
        return ordered(spark.read.format("delta").load(name_or_path).collect())
    return ordered(spark.table(name_or_path).collect())


def location(spark, name: str) -> str:
    """A named table's folder, as DESCRIBE DETAIL gives it (without ``file:``)."""
    found = spark.sql(f"DESCRIBE DETAIL {name}").first()["location"]
    return found.removeprefix("file:")


def collected(df) -> list[tuple]:
    return ordered(df.collect())
