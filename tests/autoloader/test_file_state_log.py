"""The file state kept as a durable log with SQLite as a cache (what object stores get),
exercised on local folders: no Spark. The same code runs on S3 in ``tests/s3/``."""

from __future__ import annotations

import os
import shutil

import pytest

from headwater.autoloader import state_log
from headwater.autoloader.state import FileState
from headwater.errors import StorageError


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    """Each test's caches in its own folder (the default is ``~/.cache``)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv(state_log.CACHE_ENV, str(folder))
    return folder


def files(*names: str, size: int = 10) -> list[tuple[str, int, int]]:
    return [(f"/landing/{n}", size, 1000 + i) for i, n in enumerate(names)]


def snapshot(state: FileState) -> list[tuple]:
    return state._db.execute("SELECT * FROM files ORDER BY seq").fetchall()


def test_a_lost_cache_is_rebuilt_from_the_log_with_the_same_sequence_numbers(tmp_path, cache):
    location = str(tmp_path / "schema")
    state = FileState(location, durable_log=True)
    assert state.record(files("a", "b", "c"), allow_overwrites=False) == 3
    state.mark_committed(2)
    state.record(files("c", "d"), allow_overwrites=False)
    state.mark_archived([1])
    before, state_id = snapshot(state), state.state_id
    state.close()

    shutil.rmtree(cache)  # a new machine: only the log remains
    rebuilt = FileState(location, durable_log=True)
    assert snapshot(rebuilt) == before
    assert rebuilt.state_id == state_id
    assert rebuilt.record(files("e"), allow_overwrites=False) == 1
    assert rebuilt.max_seq() == 5  # numbering goes on where the log left it
    rebuilt.close()


def test_a_stale_cache_applies_only_the_changes_written_since(tmp_path, cache, monkeypatch):
    location = str(tmp_path / "schema")
    first = FileState(location, durable_log=True)
    first.record(files("a"), allow_overwrites=False)
    first.close()

    monkeypatch.setenv(state_log.CACHE_ENV, str(tmp_path / "other-machine"))
    elsewhere = FileState(location, durable_log=True)
    elsewhere.record(files("b", "c"), allow_overwrites=False)
    elsewhere.mark_committed(3)
    expected = snapshot(elsewhere)
    elsewhere.close()

    monkeypatch.setenv(state_log.CACHE_ENV, str(cache))
    back = FileState(location, durable_log=True)
    assert snapshot(back) == expected
    back.close()


def test_snapshots_bound_the_log_and_rebuild_the_cache(tmp_path, cache, monkeypatch):
    monkeypatch.setattr(state_log, "CHECKPOINT_INTERVAL", 4)
    monkeypatch.setattr("headwater.autoloader.state.CHECKPOINT_INTERVAL", 4)
    location = str(tmp_path / "schema")
    state = FileState(location, durable_log=True)
    for i in range(15):  # 15 adds and 15 commits: versions 1..30
        state.record([(f"/landing/f{i:02d}", 10, 1000 + i)], allow_overwrites=False)
        state.mark_committed(i + 1)
    state.forget_older_than(1003, 15)  # drops f00..f02 (committed, older than maxFileAge)
    expected = snapshot(state)
    state.close()

    log_dir = tmp_path / "schema" / "_headwater_file_state" / "log"
    names = sorted(os.listdir(log_dir))
    assert [n for n in names if n.endswith(".parquet")] == [
        "00000000000000000024.checkpoint.parquet",
        "00000000000000000028.checkpoint.parquet",
    ]
    assert min(names) == "00000000000000000024.checkpoint.parquet"  # older changes removed
    shutil.rmtree(cache)
    rebuilt = FileState(location, durable_log=True)
    assert snapshot(rebuilt) == expected
    assert [r[1] for r in expected][:2] == ["/landing/f03", "/landing/f04"]
    rebuilt.close()


def test_a_change_is_committed_to_the_cache_only_once_it_is_in_the_log(tmp_path, cache):
    location = str(tmp_path / "schema")
    state = FileState(location, durable_log=True)
    state.record(files("a"), allow_overwrites=False)
    # Another process writes the next version first: this writer's change must not stay.
    other = state_log.StateLog(state.dir)
    other.append(2, [("commit", [[1, 1]])])
    with pytest.raises(StorageError, match="Two streams share this cloudFiles.schemaLocation"):
        state.record(files("b"), allow_overwrites=False)
    assert [r[1] for r in snapshot(state)] == ["/landing/a"]
    state.close()


def test_a_gap_in_the_log_is_named(tmp_path, cache):
    location = str(tmp_path / "schema")
    state = FileState(location, durable_log=True)
    for name in "abc":
        state.record(files(name), allow_overwrites=False)
    state.close()
    os.remove(tmp_path / "schema" / "_headwater_file_state" / "log" / f"{2:020d}.json")
    shutil.rmtree(cache)
    with pytest.raises(StorageError, match="change 2 is missing"):
        FileState(location, durable_log=True)


def test_a_recreated_state_location_replaces_the_cache(tmp_path, cache):
    location = str(tmp_path / "schema")
    state = FileState(location, durable_log=True)
    state.record(files("a", "b"), allow_overwrites=False)
    old_id = state.state_id
    state.close()
    shutil.rmtree(tmp_path / "schema")  # the user deleted the schema location
    fresh = FileState(location, durable_log=True)
    assert fresh.state_id != old_id
    assert snapshot(fresh) == []
    fresh.close()
