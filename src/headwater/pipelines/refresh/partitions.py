"""The *partition overwrite* technique's facts: which of the view's partition columns is an
input's partition column carried through the query unchanged (from Spark's analysed plan,
never from strings), and which partitions of each changed input its commits touched (from
the ``partitionValues`` of their added and removed files in the Delta log; no change data
feed needed), with the rows those partitions hold (the files' stats), for the cost model
of :mod:`.partition_plan`.

A view row's partition value determines which input rows it can come from only when the
column reaches the view as a plain reference through operators that keep rows of
different values apart: projections, filters, the keys of a GROUP BY, windows partitioned
by it, DISTINCT, unions (each branch's column), and joins on the side that carries it —
the preserved side of an outer join, and only while the other side does not change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql import DataFrame

from headwater.engines.door import table_log
from headwater.pipelines.refresh import plan_nodes
from headwater.pipelines.refresh.partition_plan import Partitioned

CONSTANT_LEAVES = ("LocalRelation", "OneRowRelation", "Range")
# Operators whose output carries their child's column as it is, rows of different values
# never mixed (a DISTINCT's rows include the column; a table keeps no order).
PASSING = {
    "Filter",
    "Sort",
    "SubqueryAlias",
    "View",
    "Repartition",
    "RepartitionByExpression",
    "ResolvedHint",
    "Distinct",
    "Generate",
}
# Which side of a join may carry the column: outer joins' rows from the side that may find
# no match have NULL there, whatever partition the other side's row was in.
CARRIERS = {
    "Inner": ("left", "right"),
    "Cross": ("left", "right"),
    "LeftOuter": ("left",),
    "LeftSemi": ("left",),
    "LeftAnti": ("left",),
    "RightOuter": ("right",),
}
# Partition column types whose logged values a SQL literal casts back exactly.
TYPES = {"byte", "short", "integer", "long", "string", "date", "boolean"}


class _NotDerived(Exception):
    pass


def derive(
    df: DataFrame,
    reads: Mapping[str, Sequence[DataFrame]],
    view_partitions: Sequence[str],
    input_partitions: Mapping[str, Sequence[str]],
) -> Partitioned:
    """The first of the view's partition columns (``view_partitions``) that is, through
    the query (``df``; ``reads``: each input's reads, by key), a partition column
    (``input_partitions``) of each input it comes from; or why none is."""
    if not view_partitions:
        return Partitioned(None)
    known = [(key, plan_nodes.analysed(d)) for key, frames in reads.items() for d in frames]
    root = plan_nodes.analysed(df)
    why = None
    for column in view_partitions:
        attribute = next(
            (a for a in _seq(root.output()) if str(a.name()).lower() == column.lower()), None
        )
        if attribute is None:
            why = why or f"the view has no column '{column}'"
            continue
        try:
            sources, fixed = _trace(root, _id(attribute), known)
            if not sources:
                raise _NotDerived("comes from no input")
            kind = str(attribute.dataType().typeName())
            if kind not in TYPES:
                raise _NotDerived(f"is of type {kind}, whose partition values are not compared")
            for key, names in sources.items():
                if len(names) > 1:
                    raise _NotDerived(f"comes from several columns of '{key}'")
                name = next(iter(names))
                if name not in input_partitions.get(key, ()):
                    raise _NotDerived(f"is '{key}'s column '{name}', not a partition column of it")
        except _NotDerived as e:
            why = why or f"the view's partition column '{column}' {e}"
            continue
        return Partitioned(column, {k: next(iter(v)) for k, v in sources.items()}, frozenset(fixed))
    return Partitioned(None, not_derived=why)


def carried(
    df: DataFrame, reads: Mapping[str, Sequence[DataFrame]]
) -> dict[str, tuple[dict[str, str], frozenset[str]] | str]:
    """For each of the query's columns (``df``; ``reads``: each input's reads, by key),
    the input columns it is, unchanged, by input key (one per input), with the inputs on
    join sides that do not carry it; or why it is not such a column. A view row's value
    of such a column comes only from input rows with that value (the affected-keys
    refresh, :mod:`headwater.pipelines.runner.affected_keys`)."""
    known = [(key, plan_nodes.analysed(d)) for key, frames in reads.items() for d in frames]
    root = plan_nodes.analysed(df)
    found: dict[str, tuple[dict[str, str], frozenset[str]] | str] = {}
    for attribute in _seq(root.output()):
        column = str(attribute.name())
        try:
            sources, fixed = _trace(root, _id(attribute), known)
            if not sources:
                raise _NotDerived("comes from no input")
            several = sorted(k for k, names in sources.items() if len(names) > 1)
            if several:
                raise _NotDerived(f"comes from several columns of '{several[0]}'")
        except _NotDerived as e:
            found[column] = f"'{column}' {e}"
            continue
        found[column] = ({k: next(iter(v)) for k, v in sources.items()}, frozenset(fixed))
    return found


def _trace(
    node: object, attribute: int, known: list[tuple[str, object]]
) -> tuple[dict[str, set[str]], set[str]]:
    """The input columns the attribute ``attribute`` (an expression id) of ``node``'s
    output is, unchanged, by input key; and the inputs on join sides that do not carry
    it. Raises :class:`_NotDerived` with why it is not a plain column of inputs."""
    for key, plan in known:
        if node.sameResult(plan):  # type: ignore[attr-defined]
            name = _name(node, attribute)
            if name is None:
                raise _NotDerived(f"is not a column of '{key}'")
            return {key: {name}}, set()
    name = node.nodeName()  # type: ignore[attr-defined]
    if not node.subqueries().isEmpty():  # type: ignore[attr-defined]
        raise _NotDerived("passes a subquery in an expression")
    children = _seq(node.children())  # type: ignore[attr-defined]
    if not children:
        if name in CONSTANT_LEAVES:
            return {}, set()
        raise _NotDerived(f"comes from {node.simpleString(60)}")  # type: ignore[attr-defined]
    if name == "Project":
        return _trace(children[0], _plain(node.projectList(), attribute, "is computed"), known)  # type: ignore[attr-defined]
    if name == "Aggregate":
        grouping = _seq(node.groupingExpressions())  # type: ignore[attr-defined]
        for e in _seq(node.aggregateExpressions()):  # type: ignore[attr-defined]
            inner = e.child() if e.nodeName() == "Alias" and _id(e) == attribute else e
            if _id(e) != attribute and inner is e:
                continue
            if not any(inner.semanticEquals(g) for g in grouping):
                raise _NotDerived(f"is an aggregate ({e.sql()})")
            if inner.nodeName() != "AttributeReference":
                raise _NotDerived(f"is computed ({e.sql()})")
            return _trace(children[0], _id(inner), known)
        raise _NotDerived("is not a GROUP BY column")
    if name == "Window":
        # (The analyser moves a select list's aliases below the window: ``day AS d`` is
        # a column of its own there, the window partitioned by ``day``.)
        spec = _seq(node.partitionSpec())  # type: ignore[attr-defined]
        origin = _origin(children[0], attribute)
        if not any(
            p.nodeName() == "AttributeReference" and _origin(children[0], _id(p)) == origin
            for p in spec
        ):
            shown = ", ".join(str(p.sql()) for p in spec) or "nothing"
            raise _NotDerived(f"passes a window partitioned by {shown}, not by it")
        return _trace(children[0], attribute, known)
    if name == "Join":
        return _join(node, children, attribute, known)
    if name == "Union":
        at = [_id(a) for a in _seq(node.output())].index(attribute)  # type: ignore[attr-defined]
        sources: dict[str, set[str]] = {}
        fixed: set[str] = set()
        for child in children:
            found, held = _trace(child, _id(_seq(child.output())[at]), known)
            for key, names in found.items():
                sources.setdefault(key, set()).update(names)
            fixed |= held
        return sources, fixed
    if name in PASSING:
        if _name(children[0], attribute) is None:
            raise _NotDerived(f"is made by {name}")
        return _trace(children[0], attribute, known)
    raise _NotDerived(f"passes {name}")


def _origin(node: object, attribute: int) -> int:
    """The id of the column that ``node``'s column ``attribute`` renames, down plain
    aliases of projections and operators that pass their child's columns."""
    while True:
        name = node.nodeName()  # type: ignore[attr-defined]
        children = _seq(node.children())  # type: ignore[attr-defined]
        if name == "Project":
            found = [e for e in _seq(node.projectList()) if _id(e) == attribute]  # type: ignore[attr-defined]
            inner = found[0] if found else None
            inner = inner.child() if inner is not None and inner.nodeName() == "Alias" else inner
            if inner is None or inner.nodeName() != "AttributeReference":
                return attribute
            attribute, node = _id(inner), children[0]
        elif (name in PASSING or name == "Window") and _name(children[0], attribute) is not None:
            node = children[0]
        else:
            return attribute


def _join(
    node: object, children: list, attribute: int, known: list[tuple[str, object]]
) -> tuple[dict[str, set[str]], set[str]]:
    kind = str(node.joinType().toString())  # type: ignore[attr-defined]
    side = 0 if _name(children[0], attribute) is not None else 1
    if ("left", "right")[side] not in CARRIERS.get(kind, ()):
        raise _NotDerived(f"comes from a {kind} join's side whose rows may find no match")
    sources, fixed = _trace(children[side], attribute, known)
    return sources, fixed | _inputs(children[1 - side], known)


def _inputs(node: object, known: list[tuple[str, object]]) -> set[str]:
    for key, plan in known:
        if node.sameResult(plan):  # type: ignore[attr-defined]
            return {key}
    found: set[str] = set()
    for child in _seq(node.children()):  # type: ignore[attr-defined]
        found |= _inputs(child, known)
    return found


def _plain(expressions: object, attribute: int, otherwise: str) -> int:
    """The id of the column the output ``attribute`` of a projection is (itself, or an
    alias of a plain column)."""
    for e in _seq(expressions):
        if _id(e) != attribute:
            continue
        inner = e.child() if e.nodeName() == "Alias" else e
        if inner.nodeName() != "AttributeReference":
            raise _NotDerived(f"{otherwise} ({e.sql()})")
        return _id(inner)
    raise _NotDerived(f"{otherwise}")


def _name(node: object, attribute: int) -> str | None:
    return next(
        (str(a.name()) for a in _seq(node.output()) if _id(a) == attribute),  # type: ignore[attr-defined]
        None,
    )


def _id(expression: object) -> int:
    return int(expression.exprId().id())  # type: ignore[attr-defined]


def _seq(seq: object) -> list:
    return [seq.apply(i) for i in range(seq.size())]  # type: ignore[attr-defined]


def partition_columns(location: str) -> list[str]:
    log = table_log(location)
    return log.snapshot().partition_columns if log.exists() else []


def touched(location: str, since: int, now: int, column: str) -> frozenset[str | None] | str:
    """The values of the partition column ``column`` (as logged; None for NULL) that the
    data-changing commits after ``since`` up to ``now`` added or removed files in; or why
    they cannot be read from the log."""
    log = table_log(location)
    try:
        before, after = log.snapshot(since), log.snapshot(now)
    except Exception:  # history cleaned up (the plan recomputes on a reset anyway)
        return f"its version {since} is no longer readable"
    if column not in before.partition_columns or column not in after.partition_columns:
        return f"'{column}' was not its partition column throughout"
    if after.configuration.get("delta.columnMapping.mode", "none") != "none":
        return "its partition values are logged under column mapping's names"
    values: set[str | None] = set()
    for version in range(since + 1, now + 1):
        try:
            commit = log.read_commit(version)
        except Exception:  # a commit cleaned from the log
            return f"its commit {version} is no longer readable"
        if commit.metadata is not None:
            return f"its metadata changed in version {version}"
        files: list[Mapping[str, str | None] | None]
        files = [a.partition_values for a in commit.adds if a.data_change]
        files += [r.partition_values for r in commit.removes if r.data_change]
        for partition in files:
            if partition is None or column not in partition:
                return f"a file removed in version {version} does not name its partition"
            values.add(partition[column])
    return frozenset(values)


def rows_in(
    location: str, version: int, column: str, values: frozenset[str | None]
) -> tuple[int | None, int | None]:
    """Rows a table's version holds in those partitions and in all (None: a file has no
    count in its stats)."""
    import pyarrow as pa

    actions = table_log(location).snapshot(version).add_actions
    counts = actions.column("num_records").to_pylist()
    if any(n is None for n in counts):
        return None, None
    parts = actions.column(f"partition.{column}").cast(pa.string()).to_pylist()
    inside = sum(n for n, p in zip(counts, parts, strict=True) if _logged(p) in values)
    return inside, sum(counts)


def _logged(value: str | None) -> str | None:
    """A partition value as the log writes it (booleans lower case)."""
    return value.lower() if value in ("True", "False") else value
