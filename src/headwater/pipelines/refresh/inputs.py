"""The facts a view's refresh plan is made from, read from the Delta logs and from Spark's
analysed plan of its query.

A refresh records, in the view's own commit (``userMetadata``, which every Delta engine
writes and keeps), the versions of the inputs it read and a digest of its definition; the
next refresh reads that record back from the view's log and classifies each input's
commits since then by their actions: none that change data, appends only, or rows removed
or rewritten. What the query reads is checked on its analysed plan: every leaf relation
must be one of the pipeline inputs' reads (or constant rows), and the plan deterministic.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame

from headwater.engines.door import change_feed_enabled, table_log
from headwater.pipelines.define.elements import Flow
from headwater.pipelines.refresh import definition, plan_nodes, snapshots
from headwater.pipelines.refresh.averages import Average, average_of
from headwater.pipelines.refresh.plan import (
    Aggregation,
    Change,
    Combine,
    Join,
    Recorded,
    Shape,
    Sides,
)

MARKER = "headwater.materializedView"
LOOK_BACK = 100  # commits searched for the last refresh's record
MAX_CLASSIFIED = 1000  # commits of one input classified; more counts as UPDATES
CONSTANT_LEAVES = ("LocalRelation", "OneRowRelation", "Range")
# Operators whose output rows each come from one input row (or none): the new rows of a
# query made of them alone are the query run on the new input rows.
ROW_WISE = {
    "Project",
    "Filter",
    "SubqueryAlias",
    "View",
    "Generate",
    "Sort",
    "Repartition",
    "RepartitionByExpression",
    "ResolvedHint",
}
NOT_ROW_WISE = {  # what a user reads in the planning reason
    "Aggregate": "the query aggregates",
    "Window": "the query has a window function",
    "GlobalLimit": "the query has a LIMIT",
    "LocalLimit": "the query has a LIMIT",
    "Distinct": "the query has DISTINCT",
    "Deduplicate": "the query drops duplicates",
    "Intersect": "the query has INTERSECT",
    "Except": "the query has EXCEPT",
    "Sample": "the query samples rows",
}
COMBINE = {  # aggregate functions whose results on two row sets combine into the whole's
    "Sum": Combine.SUM,
    "Count": Combine.ADD,
    "count_if": Combine.ADD,
    "Min": Combine.LEAST,
    "Max": Combine.GREATEST,
    "Average": Combine.AVERAGE,  # through its kept sum and count (:mod:`.averages`)
}
# Types whose sums subtract exactly (decimals too): a removed row's value taken back from a
# sum gives the sum of the rows left, as a recompute would.
EXACT_SUMS = {"byte", "short", "integer", "long"}
JOIN_SIDES = {
    "Inner": Sides.EITHER,
    "Cross": Sides.EITHER,
    "LeftOuter": Sides.LEFT,
    "LeftSemi": Sides.LEFT,
    "LeftAnti": Sides.LEFT,
    "RightOuter": Sides.RIGHT,
}
# Deterministic to Spark (one value per query), but not across refreshes: a view that
# reads the clock must be recomputed even when its inputs did not change.
CLOCK = re.compile(
    r"\b(current_timestamp|current_date|current_time|now|localtimestamp|unix_timestamp)\(\)",
    re.IGNORECASE,
)


def definition_digest(flow: Flow, schema_json: str) -> str:
    """A digest of what the view computes: its SQL, or its function's source with the
    helpers and constants it names (:mod:`.definition`), and its schema. A changed
    definition resets the view's incremental state."""
    text = flow.sql or definition.definition_text(flow.func)
    return hashlib.sha256(f"{text}\n{schema_json}".encode()).hexdigest()[:16]


def user_metadata(inputs: dict[str, int], definition: str, state: str | None = None) -> str:
    """What a refresh records in the view's commit (``state``: where it kept its
    averages' sums and counts)."""
    found: dict[str, object] = {"inputs": inputs, "definition": definition}
    if state is not None:
        found["state"] = state
    return json.dumps({MARKER: found}, sort_keys=True)


def last_recorded(location: str) -> tuple[Recorded | None, int | None]:
    """The view's last refresh record (with the version it made) and its latest version;
    (None, None) when there is no table yet."""
    log = table_log(location)
    if not log.exists():
        return None, None
    latest = log.latest_version()
    for version in range(latest, max(-1, latest - LOOK_BACK), -1):
        try:
            info = log.read_commit(version).info
        except Exception:  # a commit cleaned from the log: nothing older to find
            break
        found = _record(info.values.get("userMetadata") if info is not None else None)
        if found is not None:
            return Recorded(found["inputs"], found["definition"], version, found["state"]), latest
    return None, latest


def _record(text: object) -> dict | None:
    if not isinstance(text, str) or MARKER not in text:
        return None
    try:
        found = json.loads(text)[MARKER]
        inputs = {str(k): int(v) for k, v in dict(found["inputs"]).items()}
        state = found.get("state")
        return {
            "inputs": inputs,
            "definition": str(found["definition"]),
            "state": str(state) if state is not None else None,
        }
    except (ValueError, KeyError, TypeError):
        return None


def data_bytes(location: str, version: int | None = None) -> int | None:
    """The size of a table's data files at ``version`` (the latest when None; None: no
    table)."""
    if version is not None:
        return sum(f.size for f in snapshots.at(location, version).files)
    log = table_log(location)
    return sum(f.size for f in log.snapshot().files) if log.exists() else None


def rows_at(location: str, version: int) -> int | None:
    """Rows of a table's version by its files' stats (None: some file has none)."""
    counts = snapshots.at(location, version).add_actions.column("num_records").to_pylist()
    return None if any(n is None for n in counts) else int(sum(counts))


def latest_version(location: str) -> int | None:
    return table_log(location).version()


@dataclass(frozen=True)
class InputChange:
    """What one pass over an input's commits since a refresh found."""

    change: Change
    rows_added: int | None = 0  # rows the data-changing adds hold (None: a file has no count)
    change_feed: bool = False  # the change data feed has every row the commits changed
    # The rows a take-back reads: appended rows, and for commits that removed rows the
    # images their metrics count (an updated row twice: old and new); None: not known.
    rows_changed: int | None = 0
    # Without the feed: the removed and added rows are read back from the files the
    # commits removed and added (and their deletion vectors); rows_changed counts those.
    derived: bool = False


def change_between(location: str, since: int, now: int) -> InputChange:
    """How an input changed from version ``since`` to ``now``, by its commits' actions,
    each commit read once: the kind of change, the rows added (by the files' stats), and
    whether its change data feed was on throughout (then it has every removed row) or,
    where not, whether the removed rows can be read back from the files the commits
    removed (still there: not vacuumed), and how many rows that reads."""
    if now == since:
        return InputChange(Change.NONE)
    if now < since or now - since > MAX_CLASSIFIED:
        return InputChange(Change.RESET if now < since else Change.UPDATES, None)
    log = table_log(location)
    found = Change.NONE
    added: int | None = 0
    read: int | None = 0
    try:
        commits = [(v, log.read_commit(v)) for v in range(since + 1, now + 1)]
        changed = [v for v, commit in commits if commit.metadata is not None]
        if changed:  # its schema at each change against the one read before
            schema = snapshots.at(location, since).schema
            if any(snapshots.at(location, v).schema != schema for v in changed):
                return InputChange(Change.RESET, None)
            feed = False  # (turned on or off between: not every change is in it)
        else:  # no metadata between: the version refreshed to has the same (loaded anyway)
            feed = change_feed_enabled(snapshots.at(location, now).configuration)
        for _, commit in commits:
            grown: int | None = 0
            for add in commit.adds:
                n = add.num_records if add.data_change else 0
                grown = None if grown is None or n is None else grown + n
            added = None if added is None or grown is None else added + grown
            if any(r.data_change for r in commit.removes):
                found = Change.UPDATES
                grown = rows_rewritten(commit.info.values if commit.info is not None else {})
            elif found == Change.NONE and any(a.data_change for a in commit.adds):
                found = Change.APPENDS
            read = None if read is None or grown is None else read + grown
    except Exception:  # history no longer readable (cleaned up): start over
        return InputChange(Change.RESET, None)
    if found == Change.UPDATES and not feed:
        # Every commit's removed and added files say what it changed: whole files (a
        # copy-on-write rewrite: more rows than changed) or deletion vectors' positions.
        rows = log.derivable_rows(since, now)
        return InputChange(found, added, False, rows, derived=rows is not None)
    return InputChange(found, added, feed, read)


# Operation metrics that count changed rows, and the images each such row has in the
# change feed (an updated row: its old and its new one).
IMAGES = {
    "numUpdatedRows": 2,
    "numDeletedRows": 1,
    "numTargetRowsUpdated": 2,
    "numTargetRowsDeleted": 1,
    "numTargetRowsInserted": 1,
}


def rows_rewritten(info: Mapping[str, object]) -> int | None:
    """The change feed's rows of a commit that removed rows (UPDATE, DELETE, MERGE), by
    its ``commitInfo``'s operation metrics (which Delta engines write as strings); None
    when it counts none of them (an overwrite, or an engine that writes no metrics)."""
    metrics = info.get("operationMetrics")
    if not isinstance(metrics, Mapping):
        return None
    try:
        found = [IMAGES[k] * int(str(v)) for k, v in metrics.items() if k in IMAGES]
    except ValueError:
        return None
    return sum(found) if found else None


def query_facts(df: DataFrame, inputs: Sequence[DataFrame]) -> tuple[bool, tuple[str, ...]]:
    """Whether the query gives the same rows on the same inputs (deterministic, and
    reading no clock), and the leaves of its analysed plan that are
    neither one of ``inputs``' reads nor constant rows (named by their node)."""
    plan = plan_nodes.analysed(df)
    known = [leaf for d in inputs for leaf in _leaves(plan_nodes.analysed(d))]
    unversioned = []
    for leaf in _leaves(plan):
        name = leaf.nodeName()
        if name in CONSTANT_LEAVES or any(leaf.sameResult(k) for k in known):
            continue
        unversioned.append(str(leaf.simpleString(60)))
    deterministic = bool(plan.deterministic()) and not CLOCK.search(str(plan.toString()))
    return deterministic, tuple(unversioned)


def _leaves(plan: object) -> list:
    seq = plan.collectLeaves()  # type: ignore[attr-defined]
    return [seq.apply(i) for i in range(seq.size())]


class _NotRowWise(Exception):
    pass


def query_shape(df: DataFrame, reads: Mapping[str, Sequence[DataFrame]]) -> Shape:
    """How the query's rows follow from its inputs' (``reads``: each input's reads, by
    key), from Spark's analysed plan: row by row through projections, filters, unions and
    joins, or not (an aggregate, a window, a LIMIT, DISTINCT, a subquery, constant rows)."""
    known = [(key, plan_nodes.analysed(d)) for key, frames in reads.items() for d in frames]
    joins: list[Join] = []

    def walk(node: object) -> tuple[frozenset[str], bool]:
        """The inputs read under ``node``, and whether it yields constant rows."""
        for key, plan in known:
            if node.sameResult(plan):  # type: ignore[attr-defined]
                return frozenset([key]), False
        name = node.nodeName()  # type: ignore[attr-defined]
        if not node.subqueries().isEmpty():  # type: ignore[attr-defined]
            raise _NotRowWise("the query has a subquery in an expression")
        children = _children(node)
        if not children:
            if name in CONSTANT_LEAVES:
                return frozenset(), True
            raise _NotRowWise(f"the query reads {node.simpleString(60)}")  # type: ignore[attr-defined]
        if name in NOT_ROW_WISE:
            raise _NotRowWise(NOT_ROW_WISE[name])
        if name == "Join":
            (left, _), (right, _) = walk(children[0]), walk(children[1])
            sides = JOIN_SIDES.get(str(node.joinType().toString()))  # type: ignore[attr-defined]
            if sides is None:
                raise _NotRowWise("the query has a full outer join")
            joins.append(Join(left, right, sides))
            return left | right, False
        if name == "Union" or name in ROW_WISE:
            found = [walk(c) for c in children]
            if name == "Union" and any(constant for _, constant in found):
                raise _NotRowWise("the query adds constant rows to its inputs'")
            return frozenset().union(*(i for i, _ in found)), any(c for _, c in found)
        raise _NotRowWise(f"the query has {name}")

    root = plan_nodes.analysed(df)
    while root.nodeName() in ("SubqueryAlias", "View", "Sort"):  # (a table keeps no order)
        root = _children(root)[0]
    aggregate = _aggregation(root) if root.nodeName() == "Aggregate" else None
    try:
        inputs, constant = walk(_children(root)[0] if aggregate is not None else root)
    except _NotRowWise as e:
        return Shape(str(e))
    if constant and not inputs:
        return Shape("the query reads no input")
    if aggregate is not None:
        return Shape(NOT_ROW_WISE["Aggregate"], tuple(joins), aggregate)
    return Shape(None, tuple(joins))


def _aggregation(node: object) -> Aggregation:
    """The GROUP BY's keys and how each aggregate column combines (or why one cannot), and
    what taking rows back needs: the ``count(*)`` column, each sum's count of the same
    values (or of rows, when the summed values cannot be NULL)."""
    grouping = _seq(node.groupingExpressions())  # type: ignore[attr-defined]
    keys: list[str] = []
    columns: dict[str, Combine] = {}
    sums: dict[str, object] = {}  # sum column -> the summed expression
    counts: dict[str, object | None] = {}  # count column -> the counted expression (None: rows)
    averages: list[Average] = []
    why = None
    for e in _seq(node.aggregateExpressions()):  # type: ignore[attr-defined]
        value = e.child() if e.nodeName() == "Alias" else e
        if any(value.semanticEquals(g) for g in grouping):
            keys.append(str(e.name()))
            continue
        if value.nodeName() != "AggregateExpression":
            why = why or f"its column '{e.name()}' is computed from aggregates"
            continue
        function = value.aggregateFunction()
        combine = COMBINE.get(str(function.nodeName()))
        if value.isDistinct() or not value.filter().isEmpty():
            why = why or f"its column '{e.name()}' aggregates DISTINCT or FILTERed rows"
        elif combine is None:
            why = (
                why or f"its aggregate {function.nodeName()} does not combine from partial results"
            )
        else:
            if function.nodeName() == "Average":
                found = _average(str(e.name()), len(averages), function)
                if isinstance(found, str):
                    why = why or found
                    continue
                averages.append(found)
            columns[str(e.name())] = combine
            args = _children(function)
            if function.nodeName() == "Sum":
                sums[str(e.name())] = args[0]
            elif function.nodeName() == "Count":
                counted = [a for a in args if not (a.foldable() and not a.nullable())]
                counts[str(e.name())] = (
                    counted[0] if len(counted) == 1 else (None if not counted else False)
                )
    if why is None and len(keys) < len(grouping):
        why = "a GROUP BY expression is not one of the view's columns"
    rows, sum_counts, not_retractable = _retraction(columns, sums, counts, bool(grouping))
    return Aggregation(
        tuple(keys), columns, why, rows, sum_counts, not_retractable, tuple(averages)
    )


def _average(column: str, index: int, function: object) -> Average | str:
    """An ``avg`` column's average by the type of its values, or why it cannot be kept."""
    kind = function.child().dataType()  # type: ignore[attr-defined]
    name = str(kind.typeName())
    if name.startswith("decimal"):
        return average_of(column, index, "decimal", int(kind.precision()), int(kind.scale()))
    return average_of(column, index, name)


def _retraction(
    columns: Mapping[str, Combine],
    sums: Mapping[str, object],
    counts: Mapping[str, object | None],
    grouped: bool,
) -> tuple[str | None, dict[str, str], str | None]:
    """The ``count(*)`` column, each sum's count column, and why removed rows cannot be
    taken back exactly, if they cannot."""
    rows = next((c for c, counted in counts.items() if counted is None), None)
    sum_counts: dict[str, str] = {}
    lost = [c for c, how in columns.items() if how in (Combine.LEAST, Combine.GREATEST)]
    if lost:
        return rows, sum_counts, f"min/max ({_quoted(lost)}) cannot take rows back"
    for column, summed in sums.items():
        kind = str(summed.dataType().typeName())  # type: ignore[attr-defined]
        if kind not in EXACT_SUMS and not kind.startswith("decimal"):
            return (
                rows,
                sum_counts,
                (f"the sum '{column}' adds {kind} values, which do not subtract exactly"),
            )
        paired = next(
            (
                c
                for c, x in counts.items()
                if x is not None and x is not False and x.semanticEquals(summed)  # type: ignore[attr-defined]
            ),
            None,
        )
        if paired is None and not summed.nullable() and rows is not None:  # type: ignore[attr-defined]
            paired = rows
        if paired is None:
            return (
                rows,
                sum_counts,
                (
                    f"the sum '{column}' has no count of the same values beside it (count of "
                    "the column, or count(*) over non-null values) to tell when it becomes NULL"
                ),
            )
        sum_counts[column] = paired
    if grouped and rows is None:
        return rows, sum_counts, "the view has no count(*) column to tell when a group empties"
    return rows, sum_counts, None


def _quoted(names: Sequence[str]) -> str:
    return ", ".join(f"'{n}'" for n in names)


def _children(node: object) -> list:
    return _seq(node.children())  # type: ignore[attr-defined]


def _seq(seq: object) -> list:
    """A Scala sequence's items."""
    return [seq.apply(i) for i in range(seq.size())]  # type: ignore[attr-defined]
