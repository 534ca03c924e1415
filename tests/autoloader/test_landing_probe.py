"""A listing stream on a local folder (no file events): an idle trigger watches the landing
folder's directory times and lists as soon as a file lands, so the file's batch starts at
once instead of at the next trigger; the wait never reaches the next trigger."""

from __future__ import annotations

import os
import threading
import time

import pytest
from pyspark.sql.streaming.datasource import ReadMaxFiles

from headwater.autoloader import landing_probe
from headwater.autoloader.landing_probe import LandingProbe
from headwater.autoloader.notifications import IdleWait
from tests.autoloader.test_notifications import _land, _read_paths, _reader, woken_by_a_landing

LIMIT = ReadMaxFiles(1000)


def idle_triggers(reader, offset: dict) -> None:
    """Idle triggers 0.5 s apart, as Spark's 500 ms trigger runs them, the first of them
    late (after a batch that ran past the interval): the reader learns the interval."""
    for gap in (0.3, 0.5, 0.5):
        assert reader.latestOffset(offset, LIMIT) == offset
        time.sleep(gap)


def test_a_landing_file_ends_an_idle_listing_trigger_at_once(tmp_path):
    land, ckpt = str(tmp_path / "land"), str(tmp_path / "ckpt")
    os.makedirs(os.path.join(land, "day=1"))
    _land(land, "a.json", 1)
    reader = _reader(land, ckpt, notifications="false")
    start = reader.initialOffset()
    first = reader.latestOffset(start, LIMIT)
    assert _read_paths(reader, start, first) == [os.path.join(land, "a.json")]
    idle_triggers(reader, first)
    # A file lands in a subfolder 150 ms into the next idle trigger, written under a
    # hidden name first (a change that lists nothing new: the trigger keeps waiting).
    sub = os.path.join(land, "day=1")
    threading.Timer(0.1, lambda: open(os.path.join(sub, ".b.json"), "w").close()).start()
    woken = woken_by_a_landing(reader, first, sub, "b.json")
    # A folder made while idle is probed from then on.
    threading.Timer(0.05, os.makedirs, (os.path.join(land, "day=2"),)).start()
    began = time.monotonic()
    assert reader.latestOffset(woken, LIMIT) == woken  # nothing: the wait ends by itself
    assert 0.3 < time.monotonic() - began < 0.5  # within 80% of the interval
    time.sleep(0.1)
    threading.Timer(0.1, _land, (os.path.join(land, "day=2"), "c.json", 3)).start()
    last = reader.latestOffset(woken, LIMIT)
    assert _read_paths(reader, woken, last) == [os.path.join(land, "day=2", "c.json")]
    every = _read_paths(reader, start, last)
    assert len(every) == len(set(every)) == 3


def test_availablenow_lists_once_and_never_waits(tmp_path):
    land, ckpt = str(tmp_path / "land"), str(tmp_path / "ckpt")
    os.makedirs(land)
    _land(land, "a.json", 1)
    reader = _reader(land, ckpt, notifications="false")
    start = reader.initialOffset()
    reader.prepareForTriggerAvailableNow()
    end = reader.latestOffset(start, LIMIT)
    time.sleep(0.3)
    threading.Timer(0.1, _land, (land, "b.json", 2)).start()
    began = time.monotonic()
    assert reader.latestOffset(end, LIMIT) == end  # its files are those of its one listing
    assert time.monotonic() - began < 0.1


def test_a_folder_with_too_many_directories_is_not_probed(tmp_path, monkeypatch):
    monkeypatch.setattr(landing_probe, "MAX_DIRS", 3)
    for name in ("a", "b", "_hidden", ".x"):
        os.makedirs(tmp_path / name)
    probe = LandingProbe(str(tmp_path))
    assert probe.mark()  # the root, a and b: hidden folders are not listed
    (tmp_path / "_hidden" / "f").write_text("x")
    assert not probe.changed()
    (tmp_path / "b" / "f").write_text("x")
    assert probe.changed()
    os.makedirs(tmp_path / "c")
    assert not probe.mark()  # four: the stream waits for its triggers, as before
    assert not probe.wait(0.05)


def test_the_interval_is_learnt_once_so_waits_in_turn_do_not_grow():
    """In a query reading two streams, the second's idle trigger starts after the first's
    wait, and the next trigger after both: the gaps then hold the waits. Learnt from them,
    the waits would grow at each trigger (to the 1 s cap, a trigger every 2 s)."""
    idle = IdleWait()
    for now in (10.0, 10.2):  # the first idle trigger late: a gap of 0.2 s
        assert idle.seconds(now) == 0.0  # nothing learnt yet: no wait
        idle.idle(now)
    assert idle.seconds(10.7) == pytest.approx(0.4)  # 80% of the longest gap, 500 ms
    idle.idle(10.7)
    assert idle.seconds(11.5) == pytest.approx(0.4)  # a gap of 0.8 s: still 0.4
