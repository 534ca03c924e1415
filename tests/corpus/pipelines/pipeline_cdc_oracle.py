"""Oracles for change data capture, in plain Python: what the known platform documents a
slowly changing dimension to hold after a set of change events, whatever order they came
in (events apply per key in sequence order), and the customer change events the CDC demos
generate (``id, firstname, lastname, email, address, operation, operation_date`` with the
date as ``MM-dd-yyyy HH:mm:ss`` text)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

Row = Mapping[str, Any]


def _by_key(events: Iterable[Row], keys: Sequence[str], seq: Callable[[Row], Any]) -> dict:
    grouped: dict[tuple, list[Row]] = {}
    for e in events:
        grouped.setdefault(tuple(e[k] for k in keys), []).append(e)
    for history in grouped.values():
        history.sort(key=seq)
        assert len({seq(e) for e in history}) == len(history), (
            "two events of a key share a sequence value"
        )
    return grouped


def scd1(
    events: Iterable[Row],
    keys: Sequence[str],
    seq: Callable[[Row], Any],
    is_delete: Callable[[Row], bool],
    columns: Sequence[str],
) -> list[dict]:
    """Type 1: per key, the newest event's columns; none when the newest is a delete."""
    out = []
    for history in _by_key(events, keys, seq).values():
        newest = history[-1]
        if not is_delete(newest):
            out.append({c: newest[c] for c in columns})
    return out


def scd2(
    events: Iterable[Row],
    keys: Sequence[str],
    seq: Callable[[Row], Any],
    is_delete: Callable[[Row], bool],
    columns: Sequence[str],
    tracked: Sequence[str] | None = None,
) -> list[dict]:
    """Type 2: per key, a version per change of a tracked column (all but the keys when
    ``tracked`` is None), ``__START_AT`` the sequence value of the event that opened it and
    ``__END_AT`` of the event that closed it (a change or a delete; NULL while open). A
    change of untracked columns only rewrites the open version; an identical event adds
    nothing; a delete with no open version does nothing."""
    watched = [c for c in columns if c not in keys] if tracked is None else list(tracked)
    out: list[dict] = []
    for history in _by_key(events, keys, seq).values():
        current: dict | None = None
        for e in history:
            if is_delete(e):
                if current is not None:
                    current["__END_AT"] = seq(e)
                    current = None
                continue
            values = {c: e[c] for c in columns}
            if current is not None and all(current[c] == values[c] for c in watched):
                current.update(values)
                continue
            if current is not None:
                current["__END_AT"] = seq(e)
            current = {**values, "__START_AT": seq(e), "__END_AT": None}
            out.append(current)
    return out


CUSTOMER_COLUMNS = (
    "address",
    "email",
    "id",
    "firstname",
    "lastname",
    "operation",
    "operation_date",
)


def customer_event(key: str | None, op: str | None, when: str, n: int, **overrides: Any) -> dict:
    """One change event as the demos' generators write it."""
    row = {
        "id": key,
        "firstname": f"First{n}",
        "lastname": f"Last{n}",
        "email": f"user{n}@example.com",
        "address": f"{n} Main Street",
        "operation": op,
        "operation_date": when,
    }
    row.update(overrides)
    return row


def customer_events_first() -> list[dict]:
    """Inserts, updates out of order, deletes (with older updates after them), a key back
    after its delete, a repeated identical event, rows without an id, an address or an
    operation, a delete of a key never seen, and a December date that sorts after March
    ones as text."""
    rows = [
        customer_event(f"c{k}", "APPEND", f"03-0{1 + k % 5}-2022 10:{k:02d}:00", k)
        for k in range(12)
    ]
    rows += [
        customer_event("c1", "UPDATE", "03-09-2022 08:00:00", 101),
        customer_event("c1", "UPDATE", "03-07-2022 08:00:00", 102),
        customer_event("c2", "DELETE", "03-08-2022 09:00:00", 103),
        customer_event("c2", "UPDATE", "03-06-2022 09:00:00", 104),
        customer_event("c3", "DELETE", "03-08-2022 09:00:00", 105),
        customer_event("c3", "APPEND", "03-09-2022 09:00:00", 106),
        customer_event("c4", "UPDATE", "03-08-2022 11:00:00", 107, address=None),
        customer_event(None, "UPDATE", "03-08-2022 11:00:00", 108),
        customer_event("c5", None, "03-08-2022 12:00:00", 109),
        customer_event("c99", "DELETE", "03-08-2022 12:00:00", 110),
        customer_event("c6", "UPDATE", "12-31-2021 23:00:00", 111),
        customer_event("c9", "UPDATE", "03-09-2022 10:00:00", 9),  # the same values again
    ]
    return rows


def customer_events_second() -> list[dict]:
    """Late events (older than what their key reflects), a delete of a key never seen, a
    key updated twice, a new key, a row without an id."""
    return [
        customer_event("c1", "UPDATE", "03-08-2022 08:00:00", 201),
        customer_event("c2", "APPEND", "03-07-2022 09:00:00", 202),
        customer_event("c7", "DELETE", "03-20-2022 09:00:00", 203),
        customer_event("c8", "UPDATE", "03-20-2022 09:00:00", 204),
        customer_event("c8", "UPDATE", "03-21-2022 09:00:00", 205),
        customer_event("c20", "APPEND", "03-20-2022 09:00:00", 206),
        customer_event(None, "DELETE", "03-20-2022 09:00:00", 207),
    ]
