"""MERGE races across the engines: headwater's engine and delta-spark each start a MERGE
(or one a MERGE, the other an append) into one table at the same moment, in two processes,
as the other races in ``test_cross_engine_races.py`` (its barrier, log readers and appends).

A MERGE reads the table, so it is never a blind append: whoever commits second either
finds that the first commit does not touch what it read and commits at the next version,
or fails with its engine's named conflict error (``ConcurrentAppendException``: delta-spark's
``io.delta.exceptions`` class, headwater's ``headwater.errors`` one) and is run again, alone,
on the new version. Rounds alternate MERGEs into the same partition (same keys updated,
one new key inserted by both) and into different ones. Every round must add exactly two
versions, one per engine; the table must equal the serial result of the commits in version
order, as both engines read it; and a MERGE committed after another one into its partition
must have read it.

MERGE against an append runs on a ``delta.isolationLevel = Serializable`` table, which both
engines honour: a MERGE committed after an append into the partition it read must have read
the appended rows, else it fails with ``ConcurrentAppendException`` and runs again.
"""

from __future__ import annotations

from tests.engines.peer import Peer, PeerError
from tests.engines.test_cross_engine_races import (
    ROWS_PER_WRITE,
    append,
    at_once,
    commits,
    create,
    engine_of,
    history,
    meet,
    retried,
    rows_sql,
    sorted_rows_of,
    table,
)

ROUNDS = 8  # twice through the four partitions (each round ~4 s of CI)
SEED = 40  # ids 0..39, ten in each of the four partitions (part = id % 4)

State = dict[int, list]  # id -> [part, engine, touched]


# -- the MERGE, run in the engines' processes --------------------------------------------------


def merge_sql(path: str, ids: list[int], part: int, engine: str) -> str:
    """Upsert ``ids`` (all in partition ``part``) by ``engine``: matched rows are touched
    and take the engine's name, new ids are inserted. The condition names the partition,
    so an engine may limit what the MERGE read to it."""
    values = ", ".join(f"({i})" for i in ids)
    return (
        f"MERGE INTO {table(path)} AS t USING (SELECT CAST(col1 AS BIGINT) AS id, {part} AS part, "
        f"'{engine}' AS engine FROM VALUES {values}) AS s "
        f"ON t.part = {part} AND t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET touched = t.touched + 1, engine = s.engine "
        "WHEN NOT MATCHED THEN INSERT (id, part, engine, touched) "
        "VALUES (s.id, s.part, s.engine, 0)"
    )


def merge(spark, gate: str, parties: int, path: str, ids: list[int], part: int, engine: str):
    statement = merge_sql(path, ids, part, engine)
    meet(gate, parties)
    spark.sql(statement).collect()


# -- here --------------------------------------------------------------------------------------


def apply_merge(state: State, ids: list[int], part: int, engine: str) -> None:
    for i in ids:
        if i in state:
            state[i][1] = engine
            state[i][2] += 1
        else:
            state[i] = [part, engine, 0]


def conflict_name(error: PeerError) -> str | None:
    """The delta-spark exception name of the engine's concurrent-modification error (None:
    another error)."""
    if error.engine == "headwater":
        if "ConcurrentModificationException" not in error.kinds:
            return None
        return error.kinds[0]
    java = error.kinds[-1]
    return java.rsplit(".", 1)[-1] if java.startswith("io.delta.exceptions.") else None


def rerun_loser(results: list, calls: list[tuple[Peer, object, tuple]], r: int) -> list[str]:
    """The losers' conflict names, after running each loser again alone (it must commit)."""
    lost = []
    for result, call in zip(results, calls, strict=True):
        if isinstance(result, PeerError):
            name = conflict_name(result)
            assert name == "ConcurrentAppendException", f"round {r}: {result}"
            lost.append(result.engine)
            assert at_once(call) == [None], f"round {r}: the rerun failed"
    return lost


def new_versions(path: str, before: int, r: int) -> list[tuple[int, dict]]:
    """The round's commits: exactly two, one per engine."""
    infos = commits(path)
    found = list(enumerate(infos))[before:]
    assert len(found) == 2, f"round {r}: {len(found)} new versions"
    assert sorted(engine_of(i) for _, i in found) == ["delta-spark", "headwater"], found
    return found


def check_final(engines: dict[str, Peer], path: str, state: State, versions: int) -> None:
    expected = sorted((i, p, e, t) for i, (p, e, t) in state.items())
    for peer in engines.values():
        assert sorted_rows_of(peer, path) == expected, f"{peer} reads other rows"
        assert [h[0] for h in peer.call(history, path)] == list(range(versions))


def seeded(engines: dict[str, Peer], path: str, properties: str = "") -> State:
    theirs = engines["delta-spark"]
    create(theirs, path, properties)
    theirs.sql(f"INSERT INTO {table(path)} " + rows_sql(range(SEED), "seed"))
    return {i: [i % 4, "seed", 0] for i in range(SEED)}


# -- 1. MERGE against MERGE --------------------------------------------------------------------


def test_merges_by_both_engines_at_once_lose_nothing(engines, tmp_path):
    path = str(tmp_path / "t")
    state = seeded(engines, path)
    lost: list[str] = []
    for r in range(ROUNDS):
        same = r % 2 == 0
        part = r % 4
        parts = {"headwater": part, "delta-spark": part if same else (part + 2) % 4}
        ids = {}
        for k, (name, p) in enumerate(parts.items()):
            # Two seed ids of the partition (the same two for both engines in a shared
            # partition), one new id of the engine's own, one new id both insert.
            ids[name] = [p + 4 * (r % 5), p + 4 * (r % 5 + 5), 1000 + 8 * r + 4 * k + p]
            if same:
                ids[name].append(2000 + 4 * r + p)
        calls = [(engines[n], merge, (path, ids[n], parts[n], n)) for n in parts]
        before = len(commits(path))
        lost += rerun_loser(at_once(*calls), calls, r)
        found = new_versions(path, before, r)
        (first_v, first), (_, second) = found
        if same:  # the second MERGE read the first one's result, or it had failed
            assert second["readVersion"] >= first_v, f"round {r}: {found}"
        for _, info in found:
            name = engine_of(info)
            apply_merge(state, ids[name], parts[name], name)

    check_final(engines, path, state, 2 + 2 * ROUNDS)
    races = retried(commits(path))
    print(f"MERGE vs MERGE: {races} commits retried, conflicts lost by {lost}")
    assert races + len(lost) > 0, "no round raced"


# -- 2. MERGE against an append, Serializable --------------------------------------------------


def test_merge_against_an_append_on_a_serializable_table(engines, tmp_path):
    path = str(tmp_path / "t")
    state = seeded(engines, path, "'delta.isolationLevel' = 'Serializable'")
    lost: list[str] = []
    names = list(engines)
    for r in range(ROUNDS):
        merger, appender = names[r % 2], names[1 - r % 2]
        part = r % 4
        same = (r // 2) % 2 == 0
        appended = [3000 + 40 * r + 4 * k + (part if same else (part + 1) % 4)
                    for k in range(ROWS_PER_WRITE)]  # fmt: skip
        ids = [part + 4 * (r % 10), 5000 + 4 * r + part]
        calls = [
            (engines[merger], merge, (path, ids, part, merger)),
            (engines[appender], append, (path, appended, appender)),
        ]
        before = len(commits(path))
        lost += rerun_loser(at_once(*calls), calls, r)
        found = new_versions(path, before, r)
        version = {("MERGE" if i["operation"] == "MERGE" else "WRITE"): (v, i) for v, i in found}
        (merge_v, merge_info), (append_v, _) = version["MERGE"], version["WRITE"]
        assert merge_info["isolationLevel"] == "Serializable", merge_info
        if same and merge_v > append_v:  # Serializable: the MERGE read the appended rows
            assert merge_info["readVersion"] >= append_v, f"round {r}: {found}"
        apply_merge(state, ids, part, merger)
        for i in appended:
            state[i] = [i % 4, appender, 0]

    check_final(engines, path, state, 2 + 2 * ROUNDS)
    races = retried(commits(path))
    print(f"MERGE vs append (Serializable): {races} commits retried, conflicts lost by {lost}")
    assert races + len(lost) > 0, "no round raced"
