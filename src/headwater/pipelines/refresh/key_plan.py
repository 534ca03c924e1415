"""The *affected keys* refresh's decision, from facts alone (no Spark, no I/O).

A view whose rows are keyed by columns carried unchanged from its inputs (the keys of a
GROUP BY, the partition columns of its windows, a DISTINCT's columns: read from Spark's
analysed plan, :func:`..partitions.carried`) holds, for each key, exactly the rows its
query gives on the input rows with that key. So after any change — appends, updates,
deletes — recomputing the query on the inputs' rows whose keys the changed rows hold
(both their old and new images) and replacing the view's rows of those keys gives the
rows a full recompute would, for any deterministic query of that shape: ``min``/``max``
after deletes, ``count(DISTINCT)``, ``collect_set``, ``HAVING``, windows, ``DISTINCT``.
It is the fallback of the techniques that combine or take rows back
(:mod:`.plan`): it reads the inputs' rows again (their keys' rows), not only the changes.

The platform names the technique by the shape: ``GROUP_AGGREGATE`` for a GROUP BY or a
DISTINCT recomputed by group, ``WINDOW_FUNCTION`` for windows recomputed by partition.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

WINDOW = "window"  # the query has a window function (its partitions are the keys)
GROUPS = "groups"  # a GROUP BY or a DISTINCT (its groups are the keys)


@dataclass(frozen=True)
class Keyed:
    """The view's key columns and the input columns each is, from its analysed plan."""

    columns: tuple[str, ...] = ()  # the view's columns keying its rows (empty: none)
    # Input key -> its columns, one per key column in the same order: read with the
    # touched keys only.
    sources: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    fixed: frozenset[str] = frozenset()  # inputs on join sides that do not carry the keys
    kind: str = GROUPS
    not_keyed: str | None = None  # why the view's rows are not keyed so, if they are not


def decide(
    keyed: Keyed,
    changed: list[str],
    kinds: str,
    *,
    unread: list[str],
    rows_read: int | None,
    rows_total: int | None,
    quarantines: bool,
    expectations: bool,
    appends_readable: bool,
) -> tuple[bool, str]:
    """Whether the keys the changes touched can be recomputed alone, and why (not)."""
    what = f"input {_names(changed)} changed ({kinds})"
    if keyed.not_keyed is not None:
        return False, f"{what}, but {keyed.not_keyed}"
    moved = sorted(set(changed) & keyed.fixed)
    if moved:
        return False, f"input {_names(moved)} changed on a join's side that carries no key"
    outside = sorted(k for k in changed if k not in keyed.sources)
    if outside:
        return False, f"input {_names(outside)} changed, and the view's keys do not come from it"
    if unread:
        return False, (
            f"the rows removed from {_names(unread)} cannot be read back: no change data "
            "feed has them and a file its commits removed is gone (VACUUM) or counts no rows"
        )
    if quarantines:
        return False, "the view quarantines rows: its quarantine table cannot commit with it"
    if expectations:
        return False, "the view's expectations are checked on whole refreshes"
    if not appends_readable:
        return False, "the appended files were rewritten since (OPTIMIZE): they cannot be read"
    if rows_read is not None and rows_total is not None and rows_read > rows_total:
        return False, (
            f"{what}: reading the changed rows' keys reads {rows_read:,} rows, more than "
            f"the {rows_total:,} a recompute reads"
        )
    unit = "window partitions" if keyed.kind == WINDOW else "groups"
    counted = (
        f" ({rows_read:,} changed rows of {rows_total:,})"
        if rows_read is not None and rows_total is not None
        else ""
    )
    return True, (
        f"{what}{counted}: the {unit} keyed by {', '.join(keyed.columns)} that the changed "
        "rows hold (old and new images) are recomputed from the inputs' rows with those "
        "keys and replace the view's rows of those keys in one commit"
    )


def _names(keys: list[str]) -> str:
    return ", ".join(f"'{k}'" for k in keys)
