"""The load record: committed with the data, checked against intervening commits, cached."""

from __future__ import annotations

import os

import pytest

from headwater.copyinto import copy_into, loaded_files, record
from headwater.copyinto.execute import _load
from headwater.copyinto.plan import plan_files
from headwater.copyinto.spec import parse
from headwater.copyinto.target import resolve
from headwater.delta.log.commit import Transaction
from headwater.delta.log.delta_log import DeltaLog
from headwater.delta.log.operations import Operation
from tests.copyinto.helpers import land, rows, table, versions
from tests.engine_marks import ON_DELTA_SPARK, headwater_engine_only


def _stale_load(spark, target, src, **kw):
    """Plan a load now; return a function that writes and commits it later."""
    spec = parse(str(src), "JSON", **kw)
    tgt = resolve(spark, target)
    loaded = record.loaded_files(tgt.root, tgt.version, tgt.table_id())
    plan = plan_files(spec, loaded)
    return lambda: _load(spark, spec, tgt, plan)


def test_a_load_planned_before_a_concurrent_load_of_the_same_files_conflicts(spark, tmp_path):
    src, path = tmp_path / "src", tmp_path / "t"
    land(src, 3)
    target = table(spark, path)
    late = _stale_load(spark, target, src)
    copy_into(spark, target, str(src), "JSON", files=["f001.json"])  # lands first
    data_files = set(os.listdir(path))
    with pytest.raises(record.LoadConflictError, match=r"f001\.json"):
        late()
    assert set(os.listdir(path)) == data_files  # the loser's written files are deleted
    assert len(rows(path)) == 3
    # copy_into itself plans again and loads the rest
    copy_into(spark, target, str(src), "JSON")
    assert sorted(r["id"] // 100 for r in rows(path)) == [0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_a_load_planned_before_a_concurrent_load_of_other_files_commits(spark, tmp_path):
    src, path = tmp_path / "src", tmp_path / "t"
    land(src, 3)
    target = table(spark, path)
    late = _stale_load(spark, target, src, files=["f000.json", "f001.json"])
    copy_into(spark, target, str(src), "JSON", files=["f002.json"])
    if ON_DELTA_SPARK:
        # delta-spark's commit cannot be checked file by file: a load planned at the version
        # another load committed on is planned again (copy_into does so), and loads the rest
        with pytest.raises(record.LoadConflictError):
            late()
        copy_into(spark, target, str(src), "JSON")
    else:
        late()
    assert len(rows(path)) == 9 and versions(path) == 2


@headwater_engine_only("stages its own Transaction with requirements")
def test_commit_requirements_see_every_commit_in_between(spark, tmp_path):
    src, path = tmp_path / "src", tmp_path / "t"
    land(src, 2)
    target = table(spark, path)
    dlog = DeltaLog(str(path))
    snap = dlog.snapshot()
    copy_into(spark, target, str(src), "JSON", files=["f000.json"])  # version 1
    copy_into(spark, target, str(src), "JSON", files=["f001.json"])  # version 2
    seen = []

    class Refuse:
        def check(self, winner):
            seen.append(winner.version)
            raise RuntimeError("no")

    class Accept:
        def check(self, winner):
            seen.append(winner.version)

    refused = Transaction(dlog, snap, Operation("TEST"))
    refused.require(Refuse())
    with pytest.raises(RuntimeError):
        refused.commit()
    assert seen == [1] and versions(path) == 2

    seen.clear()
    accepted = Transaction(dlog, snap, Operation("TEST"))
    accepted.require(Accept())
    assert accepted.commit() == 3
    assert seen == [1, 2]
    theirs = record.loaded_in(str(path), range(1, 3))
    assert theirs == {str(src / "f000.json"), str(src / "f001.json")}


def test_cache_keeps_the_record_fast_and_survives_log_cleanup(spark, tmp_path, monkeypatch):
    monkeypatch.setattr(record, "CACHE_AFTER_COMMITS", 3)
    monkeypatch.setattr(record, "CACHE_AFTER_AGE_S", 3600)
    src, path = tmp_path / "src", tmp_path / "t"
    land(src, 4)
    target = table(spark, path)
    for i in range(4):
        copy_into(spark, target, str(src), "JSON", files=[f"f{i:03d}.json"])
    expected = {str(src / f"f{i:03d}.json") for i in range(4)}
    assert set(loaded_files(spark, target)) == expected
    # written once 3 commits were scanned; later scans start from it
    cache = sorted((path / record.CACHE_DIR).glob("*.jsonz"))
    assert [c.name[-26:] for c in cache] == ["00000000000000000002.jsonz"]
    # a record older than CACHE_AFTER_AGE_S is cached at once (before log cleanup comes)
    monkeypatch.setattr(record, "CACHE_AFTER_AGE_S", 0)
    assert set(loaded_files(spark, target)) == expected
    cache = sorted((path / record.CACHE_DIR).glob("*.jsonz"))
    assert cache[-1].name.endswith("-00000000000000000004.jsonz") and len(cache) == 2
    # another engine's log cleanup removes the old commits (after a checkpoint)
    from deltalake import DeltaTable as RsTable

    RsTable(str(path)).create_checkpoint()
    for v in range(4):
        os.remove(path / "_delta_log" / f"{v:020d}.json")
    assert set(loaded_files(spark, target)) == expected
    assert copy_into(spark, target, str(src), "JSON").first()[0] == 0
    # an unreadable cache is ignored (the log, what is left of it, is scanned instead)
    for c in cache:
        c.write_bytes(b"garbage")
    assert set(loaded_files(spark, target)) == {str(src / "f003.json")}


def test_record_is_relative_to_the_source_and_names_corrupt_files():
    entry = record.entry("/land", ["/land/a.json", "/land/d=1/b.json"], ["/land/c.json"])
    assert entry == {"source": "/land", "files": ["a.json", "d=1/b.json"], "corrupt": ["c.json"]}
    assert sorted(record._paths(entry)) == ["/land/a.json", "/land/c.json", "/land/d=1/b.json"]


def test_the_record_is_read_from_either_engines_commit():
    entry = record.entry("/land", ["/land/a.json"], ["/land/b.json"])
    assert record.of_commit({record.RECORD_KEY: entry}) == entry  # headwater's commitInfo
    assert record.of_commit({"userMetadata": record.user_metadata(entry)}) == entry  # delta-spark
    assert record.of_commit({"userMetadata": "a note of the user's"}) is None
    assert record.of_commit({"userMetadata": '{"headwaterCopyInto": 1}'}) is None
    # a load on headwater's engine checks a delta-spark load that committed first
    from headwater.delta.log.actions import Commit, CommitInfo

    winner = Commit(1, info=CommitInfo({"userMetadata": record.user_metadata(entry)}))
    with pytest.raises(record.LoadConflictError, match=r"a\.json"):
        record.NotLoadedConcurrently({"/land/a.json"}).check(winner)


def test_a_lost_commit_of_either_engine_is_a_conflict_and_nothing_else_is():
    from headwater.engines.door import is_conflict
    from headwater.errors import ConcurrentTransactionException

    class ConcurrentAppendException(Exception):  # delta-spark's Python exception's name
        pass

    assert is_conflict(ConcurrentTransactionException("headwater's"))
    assert is_conflict(ConcurrentAppendException("delta-spark's"))
    assert is_conflict(RuntimeError("[DELTA_CONCURRENT_TRANSACTION] This error occurs when"))
    assert not is_conflict(RuntimeError("[DELTA_MISSING_DELTA_TABLE] not a Delta table"))
    assert not is_conflict(ValueError("Concurrent"))
