"""AUTO CDC applied in sequence order, in plain Python: what every target must equal
whatever order the events arrive in. Events are dicts (``id``, value columns, ``op``
``"U"``/``"D"``, ``seq``); an event delivered twice counts once."""

from __future__ import annotations

import random
from collections.abc import Sequence

VALUES = ("a", "b", "c")


def in_sequence(events: list[dict]) -> dict[int, list[dict]]:
    """Each key's distinct events by sequence value (an upsert before a delete)."""
    seen = {(e["id"], e["seq"], e["op"]): e for e in reversed(events)}  # first seen wins
    by_key: dict[int, list[dict]] = {}
    for e in sorted(seen.values(), key=lambda e: (e["seq"], e["op"] == "D")):
        by_key.setdefault(e["id"], []).append(e)
    return by_key


def scd1(events: list[dict], ignore_nulls: bool = False) -> list[tuple]:
    out = []
    for key, evs in in_sequence(events).items():
        live: list | None = None
        for e in evs:
            if e["op"] == "D":
                live = None
                continue
            values = [e[c] for c in VALUES]
            if ignore_nulls and live is not None:
                values = [v if v is not None else was for v, was in zip(values, live, strict=True)]
            live = values
        if live is not None:
            out.append((key, *live))
    return sorted(out, key=str)


def scd2(events: list[dict], tracked: Sequence[str], ignore_nulls: bool = False) -> list[tuple]:
    """Versions: a tracked change opens one (the others update it in place), a delete
    closes it; with ``ignore_nulls`` a null keeps the value before it since a delete."""
    out = []
    for key, evs in in_sequence(events).items():
        live: list | None = None
        version: list | None = None  # [values, start]
        for e in evs:
            if e["op"] == "D":
                if version is not None:
                    out.append((key, *version[0], version[1], e["seq"]))
                version, live = None, None
                continue
            values = [e[c] for c in VALUES]
            if ignore_nulls and live is not None:
                values = [v if v is not None else was for v, was in zip(values, live, strict=True)]
            live = values
            same = version is not None and all(
                values[VALUES.index(c)] == version[0][VALUES.index(c)] for c in tracked
            )
            if version is not None and same:
                version[0] = values
                continue
            if version is not None:
                out.append((key, *version[0], version[1], e["seq"]))
            version = [values, e["seq"]]
        if version is not None:
            out.append((key, *version[0], version[1], None))
    return sorted(out, key=str)


def random_events(rng: random.Random, n: int, keys: int = 5) -> list[dict]:
    """``n`` events over ``keys`` keys: few distinct values (so repeats and untracked-only
    changes happen), nulls, 15% deletes, each sequence value once, some delivered twice."""
    seqs = rng.sample(range(1, 10 * n), n)
    events = []
    for seq in seqs:
        op = "D" if rng.random() < 0.15 else "U"
        event = {"id": rng.randrange(keys), "op": op, "seq": seq}
        for c, size in zip(VALUES, (2, 3, 2), strict=True):
            event[c] = None if op == "D" or rng.random() < 0.15 else rng.randrange(size)
        events.append(event)
    events += [dict(e) for e in rng.sample(events, n // 8)]  # delivered again
    rng.shuffle(events)
    return events


def split(rng: random.Random, items: list, parts: int) -> list[list]:
    """``items`` cut at random places into ``parts`` non-empty runs."""
    cuts = sorted(rng.sample(range(1, len(items)), parts - 1))
    return [items[i:j] for i, j in zip([0, *cuts], [*cuts, len(items)], strict=True)]
