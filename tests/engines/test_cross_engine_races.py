"""Races across the engines: headwater's engine and delta-spark commit to one table at the
same moment, in two processes (``tests/engines/peer.py``), and no commit is lost.

Each kind is repeated in rounds (20 or more), small tables, so a rare interleaving has
chances to show. In a round both engines' processes prepare their operation, meet at a
barrier of files (:func:`meet`) and then write at once; whoever commits second finds its
version taken and, as Delta's optimistic concurrency says, retries on the next one or
fails with the named conflict error (delta-spark's exception names, headwater's
``headwater.errors.ConcurrentModificationException`` family). Afterwards the log must hold
every commit (one JSON version per operation, no gap, each engine's count), every row once,
and both engines must read the same rows.

That the writers really raced is checked, not assumed: a commit whose ``readVersion`` is
not the version just before it was made on an older snapshot and retried past the other
engine's commit.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.engines.peer import Peer, PeerError

# Every combination of the DML rounds' appender, operation and partition once (r % 2,
# r % 3, r % 4: 12 rounds); appends race in nearly every round (both start at a barrier).
ROUNDS = 12
ROWS_PER_WRITE = 5
MEET_TIMEOUT = 120  # seconds for the other engine's process to reach the barrier


def table(path: str) -> str:
    return f"delta.`{path}`"


# -- the barrier, run in the engines' processes ------------------------------------------------


def meet(gate: str, parties: int) -> None:
    """Wait until ``parties`` processes have reached ``gate`` (a folder): each leaves a file
    and polls for the others', so the operations after it start within a millisecond or two
    of each other."""
    Path(gate, uuid.uuid4().hex).touch()
    deadline = time.monotonic() + MEET_TIMEOUT
    while len(os.listdir(gate)) < parties:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the other engine never reached the barrier {gate}")
        time.sleep(0.001)


def at_once(*calls: tuple[Peer, Any, tuple]) -> list[Any]:
    """Run each ``(peer, fn, args)`` as ``fn(spark, gate, parties, *args)`` in its engine's
    process, all at once (``fn`` calls :func:`meet` right before it writes). Returns each
    call's result, or the :class:`PeerError` it raised."""
    gate = tempfile.mkdtemp(prefix="race-gate-")

    def one(peer: Peer, fn: Any, args: tuple) -> Any:
        try:
            return peer.call(fn, gate, len(calls), *args)
        except PeerError as error:
            return error

    with ThreadPoolExecutor(len(calls)) as pool:
        futures = [pool.submit(one, peer, fn, args) for peer, fn, args in calls]
        results = [f.result() for f in futures]
    for name in os.listdir(gate):
        os.unlink(os.path.join(gate, name))
    os.rmdir(gate)
    return results


# -- operations, run in the engines' processes -------------------------------------------------


def rows_sql(ids: list[int] | range, engine: str) -> str:
    """The table's rows for ``ids``, as written by ``engine``."""
    source = (
        f"range({ids.start}, {ids.stop})"
        if isinstance(ids, range)
        else f"(SELECT explode(array({', '.join(map(str, ids))})) AS id)"
    )
    return (
        f"SELECT CAST(id AS BIGINT) AS id, CAST(id % 4 AS INT) AS part, '{engine}' AS engine, "
        f"0 AS touched FROM {source}"
    )


def append(spark, gate: str, parties: int, path: str, ids: list[int], engine: str):
    """Append the rows of ``ids`` (planned before the barrier, written after it)."""
    df = spark.sql(rows_sql(ids, engine))
    meet(gate, parties)
    df.write.format("delta").mode("append").save(path)


def sorted_rows(spark, path: str) -> list[tuple]:
    return spark.read.format("delta").load(path).orderBy("id").collect()


def history(spark, path: str) -> list[tuple]:
    found = spark.sql(f"DESCRIBE HISTORY {table(path)}")
    return found.select("version", "operation", "readVersion").orderBy("version").collect()


# -- the log, read here ------------------------------------------------------------------------


def commits(path: str) -> list[dict]:
    """Each version's commitInfo, in version order; the versions must run 0, 1, 2, ... with
    no gap (a gap or a missing commitInfo would be a torn or overwritten commit)."""
    found = sorted(Path(path, "_delta_log").glob("*.json"))
    versions = [int(p.name.split(".")[0]) for p in found]
    assert versions == list(range(len(versions))), f"versions with a gap: {versions}"
    infos = []
    for commit in found:
        actions = [json.loads(line) for line in commit.read_text().splitlines() if line]
        (info,) = [a["commitInfo"] for a in actions if "commitInfo" in a]
        infos.append(info)
    return infos


def engine_of(info: dict) -> str:
    """Which engine made a commit, from its ``engineInfo``."""
    return "headwater" if info.get("engineInfo", "").startswith("headwater/") else "delta-spark"


def retried(infos: list[dict]) -> int:
    """Commits made on a snapshot older than the version before them: the writer lost the
    race for its first version and committed past the other engine's commit."""
    return sum(1 for v, info in enumerate(infos) if v and info.get("readVersion", v - 1) < v - 1)


def create(peer: Peer, path: str, properties: str = "") -> None:
    props = f" TBLPROPERTIES ({properties})" if properties else ""
    peer.sql(
        f"CREATE TABLE {table(path)} (id BIGINT, part INT, engine STRING, touched INT) "
        f"USING DELTA PARTITIONED BY (part){props}"
    )


# -- 1. blind appends against blind appends ----------------------------------------------------


def test_concurrent_appends_by_both_engines_all_land(engines, tmp_path):
    ours, theirs = engines["headwater"], engines["delta-spark"]
    path = str(tmp_path / "t")
    create(theirs, path)
    expected = []
    for round_ in range(ROUNDS):
        base = round_ * 2 * ROWS_PER_WRITE
        spans = {"headwater": base, "delta-spark": base + ROWS_PER_WRITE}
        results = at_once(
            *(
                (peer, append, (path, list(range(start, start + ROWS_PER_WRITE)), peer.name))
                for peer, start in ((ours, spans["headwater"]), (theirs, spans["delta-spark"]))
            )
        )
        assert results == [None, None], f"round {round_}: {results}"
        for name, start in spans.items():
            expected += [(i, i % 4, name, 0) for i in range(start, start + ROWS_PER_WRITE)]
        # Both commits of the round landed, one version each.
        infos = commits(path)
        assert len(infos) == 1 + 2 * (round_ + 1), f"round {round_}: {len(infos)} versions"
        assert sorted(engine_of(i) for i in infos[-2:]) == ["delta-spark", "headwater"]

    infos = commits(path)
    assert [engine_of(i) for i in infos[1:]].count("headwater") == ROUNDS
    assert all(i["operation"] == "WRITE" for i in infos[1:])
    assert all(i.get("isBlindAppend") for i in infos[1:])
    expected.sort()
    for peer in (ours, theirs):
        assert sorted_rows_of(peer, path) == expected, f"{peer} reads other rows"
        assert [h[0] for h in peer.call(history, path)] == list(range(1 + 2 * ROUNDS))
    races = retried(infos)
    print(f"appends: {races} of {ROUNDS} rounds raced for the same version")
    assert races > 0, "no round had both engines commit from the same snapshot"


def sorted_rows_of(peer: Peer, path: str) -> list[tuple]:
    return [tuple(r) for r in peer.call(sorted_rows, path)]


# -- 2. an append against DELETE, UPDATE or OPTIMIZE on the other engine ----------------------

SEED = 400  # ids 0..399: round r's DELETE or UPDATE matches the 20 seed ids = r (mod 20)
DML = ("DELETE", "UPDATE", "OPTIMIZE")


def change(spark, gate: str, parties: int, path: str, operation: str, part: int, residue: int):
    """Round ``residue``'s data-changing operation; DELETE and UPDATE read one partition."""
    where = f"part = {part} AND id % 20 = {residue}"
    statement = {
        "DELETE": f"DELETE FROM {table(path)} WHERE {where}",
        "UPDATE": f"UPDATE {table(path)} SET touched = touched + 1 WHERE {where}",
        "OPTIMIZE": f"OPTIMIZE {table(path)}",
    }[operation]
    meet(gate, parties)
    spark.sql(statement).collect()


def is_conflict(error: PeerError) -> bool:
    """The engine's named concurrent-modification error: headwater's
    ``ConcurrentModificationException`` family, delta-spark's ``io.delta.exceptions``."""
    if error.engine == "headwater":
        return {"ConcurrentAppendException", "ConcurrentModificationException"} <= set(error.kinds)
    return error.kinds[-1].endswith(".ConcurrentAppendException")


def apply(state: dict[int, list], operation: str, part: int, residue: int, seen: set[int]):
    """The rows after the operation, which saw only the ids in ``seen``."""
    hit = [i for i in seen if i in state and state[i][0] == part and i % 20 == residue]
    for i in hit:
        if operation == "DELETE":
            del state[i]
        elif operation == "UPDATE":
            state[i][2] += 1


def test_append_against_dml_on_the_other_engine_loses_nothing(engines, tmp_path):
    ours, theirs = engines["headwater"], engines["delta-spark"]
    path = str(tmp_path / "t")
    create(theirs, path)
    theirs.sql(f"INSERT INTO {table(path)} " + rows_sql(range(SEED), "seed"))
    state = {i: [i % 4, "seed", 0] for i in range(SEED)}
    conflicts: dict[str, int] = {"headwater": 0, "delta-spark": 0}
    for r in range(ROUNDS):
        appender, changer = (ours, theirs) if r % 2 == 0 else (theirs, ours)
        operation = DML[r % 3]
        part = r % 4
        # Half the rounds append into the partition DELETE/UPDATE reads (one new row matches
        # its predicate), half into another one.
        same = (r // 2) % 2 == 0
        base = 1000 + 100 * r + r + (0 if same else 1)
        new = [base + 4 * k for k in range(ROWS_PER_WRITE)]
        before = len(commits(path))
        results = at_once(
            (appender, append, (path, new, appender.name)),
            (changer, change, (path, operation, part, r)),
        )
        assert results[0] is None, f"round {r}: the blind append failed: {results[0]}"
        if isinstance(results[1], PeerError):
            assert is_conflict(results[1]), f"round {r}: not a conflict error: {results[1]}"
            conflicts[changer.name] += 1
            # The loser runs again, alone, on the new version.
            assert at_once((changer, change, (path, operation, part, r))) == [None]
        infos = commits(path)
        assert len(infos) == before + 2, f"round {r}: {len(infos) - before} new versions"
        by_op = {("WRITE" if i["operation"] == "WRITE" else "DML"): (v, i)
                 for v, i in enumerate(infos) if v >= before}  # fmt: skip
        (append_version, _), (dml_version, dml_info) = by_op["WRITE"], by_op["DML"]
        assert engine_of(dml_info) == changer.name
        # What the operation read: the append's rows when its snapshot had them.
        saw_append = dml_info["readVersion"] >= append_version
        if changer.name == "delta-spark" and same and operation != "OPTIMIZE":
            # delta-spark's Serializable isolation: a DELETE/UPDATE committed after an
            # append into the partition it read must have read it (or failed and rerun).
            assert saw_append or dml_version < append_version, f"round {r}: {dml_info}"
        seen = set(state) | (set(new) if saw_append else set())
        for i in new:
            state[i] = [i % 4, appender.name, 0]
        if operation != "OPTIMIZE":
            apply(state, operation, part, r, seen)

    expected = sorted((i, p, e, t) for i, (p, e, t) in state.items())
    for peer in (ours, theirs):
        assert sorted_rows_of(peer, path) == expected, f"{peer} reads other rows"
        assert [h[0] for h in peer.call(history, path)] == list(range(2 + 2 * ROUNDS))
    races = retried(commits(path))
    print(f"append vs DML: {races} commits retried, conflicts raised {conflicts}")
    assert races + sum(conflicts.values()) > 0, "no round raced"


# -- 3. a stream on one engine over a table the other engine appends to -----------------------

STREAM_APPENDS = 20
STREAMS: dict[str, Any] = {}  # in an engine's process: its running queries, by sink path


def start_stream(spark, source: str, sink: str, checkpoint: str) -> None:
    """Stream the ``delta`` table at ``source`` into the ``delta`` table at ``sink``,
    polling often, until :func:`finish_stream`."""
    STREAMS[sink] = (
        spark.readStream.format("delta")
        .load(source)
        .writeStream.format("delta")
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="200 milliseconds")
        .start(sink)
    )


def finish_stream(spark, sink: str) -> list[int]:
    """Let the stream catch up with its source, stop it; the input rows of its batches."""
    query = STREAMS.pop(sink)
    query.processAllAvailable()
    query.stop()
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]


def append_one_by_one(spark, gate: str, parties: int, path: str, start: int, engine: str):
    """``STREAM_APPENDS`` appends, one commit each, while the other engine streams them."""
    meet(gate, parties)
    for k in range(STREAM_APPENDS):
        first = start + k * ROWS_PER_WRITE
        spark.sql(rows_sql(range(first, first + ROWS_PER_WRITE), engine)).write.format(
            "delta"
        ).mode("append").save(path)
        time.sleep(0.05)


def test_a_stream_on_one_engine_reads_every_commit_the_other_engine_appends(engines, tmp_path):
    """Both directions at once: each engine streams the table the other one appends to."""
    peers = (engines["headwater"], engines["delta-spark"])
    source = {p.name: str(tmp_path / f"written-by-{p.name}") for p in peers}
    sink = {p.name: str(tmp_path / f"streamed-by-{p.name}") for p in peers}
    for writer in peers:
        create(writer, source[writer.name])
        writer.sql(f"INSERT INTO {table(source[writer.name])} " + rows_sql(range(3), writer.name))
    ours, theirs = peers
    for reader, writer in ((ours, theirs), (theirs, ours)):
        reader.call(start_stream, source[writer.name], sink[reader.name],
                    str(tmp_path / f"checkpoint-{reader.name}"))  # fmt: skip
    starts = {"headwater": 1000, "delta-spark": 2000}
    results = at_once(
        *((w, append_one_by_one, (source[w.name], starts[w.name], w.name)) for w in peers)
    )
    assert results == [None, None], results
    for reader, writer in ((ours, theirs), (theirs, ours)):
        batches = reader.call(finish_stream, sink[reader.name])
        infos = commits(source[writer.name])
        assert len(infos) == 2 + STREAM_APPENDS
        assert [engine_of(i) for i in infos] == [writer.name] * len(infos)
        expected = sorted(
            (i, i % 4, writer.name, 0)
            for i in [*range(3), *range(starts[writer.name],
                                        starts[writer.name] + STREAM_APPENDS * ROWS_PER_WRITE)]
        )  # fmt: skip
        for peer in peers:  # every row exactly once, as both engines read the sink
            assert sorted_rows_of(peer, sink[reader.name]) == expected, (
                f"{reader} streaming {writer}'s table: {peer} reads other rows in the sink"
            )
        assert sum(batches) == len(expected)
        # The stream ran while the writer wrote: the commits came in more than one batch.
        print(f"{reader} streamed {writer}'s {len(infos)} commits in {len(batches)} batches")
        assert len(batches) > 1, f"{reader} read {writer}'s commits in one batch: {batches}"
        # One sink commit per batch with rows, after the sink's creation by the stream.
        assert len(commits(sink[reader.name])) == len(batches)
