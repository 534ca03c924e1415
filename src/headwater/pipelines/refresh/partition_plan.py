"""The *partition overwrite* technique's decision, from facts alone (no Spark, no I/O).

A view partitioned by a column that is an input's partition column carried through the
query unchanged (a plain column reference through projections, filters, the keys of a
GROUP BY, windows partitioned by it, DISTINCT, unions, the changed side of a join) has in
each of its partitions exactly the rows the query gives on that partition of its inputs.
When the inputs changed only in partitions their Delta logs name (the ``partitionValues``
of the commits' added and removed files), recomputing the query on those partitions alone
and replacing those partitions of the view gives the rows a full recompute would, for any
deterministic query of that shape: updates and deletes need no change data feed and no
aggregate that can take rows back.

Where the *group aggregate* technique applies too, a simple cost model chooses
(:func:`prefer`): the rows the touched partitions hold against the rows the changes wrote.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Partitioned:
    """How a view's partitions follow from its inputs' partitions, and how the inputs'
    changes since the last refresh fall in them."""

    column: str | None  # the view's partition column derived unchanged from inputs' (None: none)
    sources: Mapping[str, str] = field(default_factory=dict)  # input -> its partition column
    # Inputs on a join's side that does not carry the column: they must not change.
    fixed: frozenset[str] = frozenset()
    not_derived: str | None = None  # why no partition column of the view derives, if none
    # Each changed input's partition values (as its log writes them, None for NULL) that
    # its data-changing commits added or removed files in, or why they are unknown.
    touched: Mapping[str, frozenset[str | None]] = field(default_factory=dict)
    unreadable: Mapping[str, str] = field(default_factory=dict)
    rows_touched: int | None = None  # rows the changed inputs hold now in those partitions
    rows_total: int | None = None  # rows the changed inputs hold now
    rows_changed: int | None = None  # rows in the files the changes added (their stats)


@dataclass(frozen=True)
class Overwrite:
    """What the runner recomputes: the view's ``column`` in ``values`` (as logged, None
    for NULL), each input in ``sources`` read in those values of its column."""

    column: str
    values: tuple[str | None, ...]
    sources: Mapping[str, str]


def overwrite(
    partitioned: Partitioned | None, changed: list[str], *, quarantines: bool
) -> tuple[Overwrite | None, str]:
    """The partitions to recompute, or None and why the technique does not apply."""
    if partitioned is None:
        return None, "the view's partitioning was not analysed"
    if partitioned.column is None:
        return None, partitioned.not_derived or "the view is not partitioned"
    column = partitioned.column
    moved = sorted(set(changed) & partitioned.fixed)
    if moved:
        return None, (
            f"input {_names(moved)} changed on a join's side that does not carry the "
            f"partition column '{column}'"
        )
    outside = sorted(k for k in changed if k not in partitioned.sources)
    if outside:
        return None, f"input {_names(outside)} changed, and the view's partitions do not follow it"
    unknown = sorted(k for k in changed if k in partitioned.unreadable)
    if unknown:
        return None, f"the partitions {_names(unknown)} changed in are unknown: " + "; ".join(
            partitioned.unreadable[k] for k in unknown
        )
    if quarantines:
        return None, "the view quarantines rows: its quarantine table cannot commit with it"
    values: set[str | None] = set()
    for key in changed:
        values |= partitioned.touched.get(key, frozenset())
    touched, total = partitioned.rows_touched, partitioned.rows_total
    if touched is not None and total and touched >= total:
        return None, (
            f"the changes touched every partition of {_names(changed)}: recomputing them "
            "is a full recompute"
        )
    ordered = tuple(sorted(values, key=lambda v: (v is not None, v or "")))
    return Overwrite(column, ordered, dict(partitioned.sources)), ""


def reason(found: Overwrite, partitioned: Partitioned, changed: list[str], kinds: str) -> str:
    """Why the technique applies, for the planning event."""
    shown = ", ".join("NULL" if v is None else v for v in found.values[:10])
    more = f" and {len(found.values) - 10} more" if len(found.values) > 10 else ""
    rows = (
        f" ({partitioned.rows_touched:,} of {partitioned.rows_total:,} input rows)"
        if partitioned.rows_touched is not None and partitioned.rows_total is not None
        else ""
    )
    return (
        f"input {_names(changed)} changed ({kinds}) only in partitions {found.column} = "
        f"{shown}{more}{rows}, and the view's partition column '{found.column}' is the "
        "inputs' unchanged: those partitions are recomputed and replaced in one commit"
    )


def prefer(partitioned: Partitioned | None, updated: bool) -> tuple[bool, str]:
    """The cost model between *partition overwrite* and *group aggregate* where both apply:
    whether to overwrite partitions, and why. The overwrite reads every row of the touched
    partitions and rewrites only those partitions of the view; the group aggregate reads
    only the changed rows (twice, from the change feed, for updates and deletes) but
    rewrites the whole view or merges into it. So: the overwrite when the touched
    partitions hold at most twice the rows the changes wrote (new partitions, such as a new
    day, or changes rewriting most of their partitions), or, for updates and deletes, at
    most a tenth of the inputs' rows; the group aggregate otherwise, and for appends whose
    rows are not counted."""
    if partitioned is None:
        return False, "no partitions counted"
    touched, changed, total = (
        partitioned.rows_touched,
        partitioned.rows_changed,
        partitioned.rows_total,
    )
    if touched is None or changed is None:
        if updated:
            return True, "rows not counted: recomputing the partitions needs no change feed"
        return False, "rows not counted: the new rows alone are read"
    if touched <= 2 * changed:
        return True, (
            f"the touched partitions hold {touched:,} rows, at most twice the {changed:,} the "
            "changes wrote: recomputing them reads about as much and rewrites only them"
        )
    if updated and total and touched * 10 <= total:
        return True, (
            f"the touched partitions hold {touched:,} of the inputs' {total:,} rows: "
            "recomputing them costs less than taking rows back and rewriting the view"
        )
    return False, (
        f"the touched partitions hold {touched:,} rows, more than twice the {changed:,} the "
        "changes wrote: merging the changed rows' groups reads fewer"
    )


def _names(keys: list[str]) -> str:
    return ", ".join(f"'{k}'" for k in keys)
