"""The AUTO CDC rules over plain values (no Spark): SCD2's history and the events its
state must log, checked against in-order application."""

from __future__ import annotations

import random

import pytest

from headwater.pipelines.cdc.scd2 import Event, Version, history, kept_in_log
from tests.pipelines.cdc_oracle import VALUES, random_events, scd2, split

TRACKINGS = {"all": ("a", "b", "c"), "list": ("a", "b"), "except b": ("a", "c"), "none": ()}


def as_events(events: list[dict], key: int) -> list[Event]:
    return [
        Event(e["seq"], e["op"] == "D", tuple(e[c] for c in VALUES))
        for e in events
        if e["id"] == key
    ]


def rows(key: int, versions: list[Version]) -> list[tuple]:
    return [(key, *v.values, v.start, v.end) for v in versions]


def test_history_follows_the_documented_example():
    events = [  # key 125 of the documented example: city untracked
        Event(2, False, ("Mercedes", "Tijuana")),
        Event(6, False, ("Mercedes", "Guadalajara")),
        Event(5, False, ("Mercedes", "Mexicali")),
        Event(3, False, ("Mercedes", "Ensenada")),
    ]
    assert history(events, tracked=[0]) == [Version(2, None, ("Mercedes", "Guadalajara"))]
    assert history(events, tracked=[0, 1]) == [
        Version(2, 3, ("Mercedes", "Tijuana")),
        Version(3, 5, ("Mercedes", "Ensenada")),
        Version(5, 6, ("Mercedes", "Mexicali")),
        Version(6, None, ("Mercedes", "Guadalajara")),
    ]
    # the open version was made by 2, 6, 5 and 3: all are logged; a lone version is not
    assert [e.seq for e in kept_in_log(events, tracked=[0])] == [2, 3, 5, 6]
    assert kept_in_log(events[:1], tracked=[0]) == []


@pytest.mark.parametrize("seed", range(60))
@pytest.mark.parametrize("tracking", sorted(TRACKINGS))
@pytest.mark.parametrize("nulls", [False, True])
def test_target_and_log_rebuild_in_order_history_whatever_the_arrival(seed, tracking, nulls):
    """Batch by batch as the applier does: the known events are the log's, the target's
    rows (a version as the event opening it) and the batch's; the target becomes their
    history and the log keeps what the target cannot give back. After every batch the
    target equals the history of every event so far, in sequence order."""
    rng = random.Random(seed)
    events = random_events(rng, 40, keys=3)
    tracked = [VALUES.index(c) for c in TRACKINGS[tracking]]
    log: dict[int, list[Event]] = {}
    target: dict[int, list[Version]] = {}
    arrived: list[dict] = []
    for batch in split(rng, events, rng.randint(2, 8)):
        arrived += batch
        for key in {e["id"] for e in batch}:
            held = [Event(v.start, False, v.values) for v in target.get(key, [])]
            known = [*log.get(key, []), *held, *as_events(batch, key)]
            target[key] = history(known, tracked, nulls)
            logged = {(e.seq, e.delete) for e in log.get(key, [])}
            new = [e for e in kept_in_log(known, tracked, nulls) if (e.seq, e.delete) not in logged]
            log.setdefault(key, []).extend(new)
        got = sorted((r for k, vs in target.items() for r in rows(k, vs)), key=str)
        assert got == scd2(arrived, TRACKINGS[tracking], nulls)
