"""A database table's change history as Debezium writes it to Kafka, two ways of
delivering it, and the SCD1/SCD2 tables it should give, computed here from the history
alone (never from a pipeline's output).

Events are Debezium's envelope with ``value.converter.schemas.enable=false``: the
payload without its schema, ``before``/``after`` rows, ``op`` (``r`` snapshot read, ``c``,
``u``, ``d``, ``t`` truncate), ``ts_ms`` and ``source.lsn`` (Postgres' log position: the
order the database committed the changes in; every row of the initial snapshot shares
one). A delete is followed by a tombstone (a record with a null value) for log compaction,
as Debezium does by default.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

SNAPSHOT = 1000


@dataclass(frozen=True)
class Change:
    op: str
    lsn: int
    id: int | None = None
    name: str | None = None
    city: str | None = None
    before: tuple[str | None, str | None] | None = None  # (name, city) before an update


def history() -> list[Change]:
    """Users 1-9: a snapshot, inserts, updates (one that changes nothing), deletes, a key
    that comes back after its delete, a truncate, and changes after it."""
    rows = {1: ("Ana", "Lima"), 2: ("Ben", "Oslo"), 3: ("Cy", "Rome"), 4: ("Di", "Kyiv")}
    out = [Change("r", SNAPSHOT, i, *row) for i, row in rows.items()]
    steps = [
        ("c", 5, "Ed", "Pune"),
        ("u", 1, "Ana", "Lisbon"),
        ("u", 2, "Ben", "Oslo"),  # an UPDATE that set the same values
        ("d", 3, None, None),
        ("c", 6, "Flo", "Nice"),
        ("u", 5, "Ed", "Goa"),
        ("u", 1, "Ann", "Lisbon"),
        ("c", 3, "Cy", "Milan"),  # back after its delete
        ("d", 4, None, None),
        ("t", None, None, None),  # TRUNCATE users
        ("c", 7, "Gus", "Bern"),
        ("c", 1, "Ana", "Porto"),
        ("u", 7, "Gus", "Basel"),
        ("c", 8, "Hal", "Riga"),
        ("d", 8, None, None),
        ("u", 1, "Ana", "Faro"),
        ("c", 2, "Ben", "Bergen"),
        ("c", 9, "Ivy", "Oslo"),
        ("u", 9, "Ivy", "Bonn"),
    ]
    for n, (op, key, name, city) in enumerate(steps, start=1):
        before = rows.get(key) if key is not None else None
        out.append(Change(op, SNAPSHOT + 10 * n, key, name, city, before))
        if op in ("c", "u"):
            rows[key] = (name, city)
        elif op == "d":
            rows.pop(key, None)
        else:
            rows.clear()
    return out


def envelope(change: Change) -> str:
    """The record's value as Debezium's JSON converter writes it without schemas."""

    def row(values):
        return None if values is None else {"id": change.id, "name": values[0], "city": values[1]}

    after = None if change.op in ("d", "t") else (change.name, change.city)
    before = change.before if change.op in ("u", "d") else None
    return json.dumps(
        {
            "before": row(before),
            "after": row(after),
            "source": {
                "version": "3.0.0.Final", "connector": "postgresql", "name": "shop",
                "ts_ms": 1_700_000_000_000 + change.lsn, "snapshot": str(change.op == "r").lower(),
                "db": "shop", "schema": "public", "table": "users",
                "txId": 500 + change.lsn // 10, "lsn": change.lsn,
            },
            "op": change.op,
            "ts_ms": 1_700_000_000_100 + change.lsn,
            "transaction": None,
        }
    )  # fmt: skip


def records(changes: list[Change]) -> list[tuple[str | None, str | None]]:
    """(key, value) records: each change, and a tombstone after each delete."""
    out: list[tuple[str | None, str | None]] = []
    for change in changes:
        key = None if change.id is None else json.dumps({"id": change.id})
        out.append((key, envelope(change)))
        if change.op == "d":
            out.append((key, None))
    return out


def in_order(changes: list[Change], parts: int) -> list[list[Change]]:
    """The history once, in order, cut into ``parts`` consecutive deliveries."""
    size = -(-len(changes) // parts)
    return [changes[i : i + size] for i in range(0, len(changes), size)]


def shuffled(changes: list[Change], parts: int, seed: int = 7) -> list[list[Change]]:
    """The history shuffled, some events repeated (in the same delivery and in a later
    one), cut into ``parts`` deliveries: many events arrive after newer ones of their key,
    some in a later update than those.

    The truncate comes in the first delivery, early: changes older than it arrive in later
    updates, some of keys the flow has not seen, and must stay out (the flow's state keeps
    the newest truncate it applied, ``headwater.pipelines.cdc.events``)."""
    rng = random.Random(seed)
    order = list(changes)
    rng.shuffle(order)
    size = -(-len(order) // parts)
    deliveries = [order[i : i + size] for i in range(0, len(order), size)]
    truncates = [c for c in order if c.op == "t"]
    deliveries = [[c for c in d if c.op != "t"] for d in deliveries]
    deliveries[0].extend(truncates)  # see the note above
    for i, delivery in enumerate(deliveries):
        seen = [c for d in deliveries[: i + 1] for c in d]
        delivery.extend(rng.sample(seen, 4))  # replays of this and earlier deliveries
        rng.shuffle(delivery)
    return deliveries


def late(deliveries: list[list[Change]]) -> tuple[int, int]:
    """How many events arrive after a newer event of their key (or after a newer
    truncate), and how many of those in a later delivery than that newer event."""
    newest: dict[int | None, tuple[int, int]] = {}  # key -> (lsn, delivery)
    after_newer = across = 0
    for n, delivery in enumerate(deliveries):
        for c in delivery:
            for key in {c.id, None}:  # the key's own events, and truncates
                if key in newest and newest[key][0] > c.lsn:
                    after_newer += 1
                    across += newest[key][1] < n
                    break
            key = c.id if c.op != "t" else None
            if key not in newest or newest[key][0] < c.lsn:
                newest[key] = (c.lsn, n)
    return after_newer, across


def scd1(changes: list[Change]) -> list[tuple]:
    """Each live key's newest row, applying the history in ``lsn`` order."""
    rows: dict[int, tuple] = {}
    for c in sorted(set(changes), key=lambda c: c.lsn):
        if c.op == "t":
            rows.clear()
        elif c.op == "d":
            rows.pop(c.id, None)  # type: ignore[arg-type]
        else:
            rows[c.id] = (c.id, c.name, c.city)  # type: ignore[index]
    return sorted(rows.values())


def scd2(changes: list[Change]) -> list[tuple]:
    """Every version of every key with ``__START_AT``/``__END_AT`` (lsn): a change of
    values opens a version, a repeat of the same values adds nothing, a delete closes the
    open one. A truncate is no change of any key's history."""
    versions: list[list] = []
    open_: dict[int, list] = {}
    for c in sorted(set(changes), key=lambda c: c.lsn):
        if c.op == "t":
            continue
        current = open_.get(c.id)  # type: ignore[arg-type]
        if c.op == "d" or current is None or (current[1], current[2]) != (c.name, c.city):
            if current is not None:
                current[4] = c.lsn
                del open_[c.id]  # type: ignore[arg-type]
            if c.op != "d":
                open_[c.id] = [c.id, c.name, c.city, c.lsn, None]  # type: ignore[index]
                versions.append(open_[c.id])  # type: ignore[index]
    return sorted(tuple(v) for v in versions)
