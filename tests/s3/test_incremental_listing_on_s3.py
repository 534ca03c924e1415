"""Incremental listing (``cloudFiles.useIncrementalListing``) on a real S3 store: after the
first full listing only keys after the last one seen are listed; a full listing still runs
on ``cloudFiles.backfillInterval``."""

from __future__ import annotations

import pytest

from headwater import storage
from headwater.autoloader.options import CloudFilesOptions
from headwater.autoloader.source import CloudFilesStreamReader
from headwater.errors import OptionError


def reader(folder: str, location: str, **options: str) -> CloudFilesStreamReader:
    given = {"cloudFiles.format": "json", "cloudFiles.schemaLocation": location, **options}
    return CloudFilesStreamReader(folder, CloudFilesOptions.parse(given, user_schema=True), None)


def land(folder: str, name: str) -> None:
    storage.write_bytes(storage.join(folder, name), b'{"a": 1}\n')


def test_incremental_listing_lists_only_after_the_last_key(s3_root, tmp_path):
    folder = f"{s3_root}/landing"
    for i in range(20):
        land(folder, f"2026/11/24/{i:04d}.json")
    source = reader(folder, str(tmp_path / "state"), **{"cloudFiles.useIncrementalListing": "true"})
    assert source.discover() == 20  # the first listing of a run is full
    land(folder, "2026/11/24/0020.json")
    land(folder, "2026/11/23/late.json")  # sorts before the last key: not listed now
    assert source.discover() == 1
    assert source.state.last_path() == f"{folder}/2026/11/24/0020.json"
    source.state.close()

    restarted = reader(
        folder, str(tmp_path / "state"), **{"cloudFiles.useIncrementalListing": "true"}
    )
    assert restarted.discover() == 1  # a new run starts with a full listing: the late file
    restarted.state.close()


def test_backfill_interval_forces_a_full_listing(s3_root, tmp_path):
    folder = f"{s3_root}/landing"
    for i in range(3):
        land(folder, f"{i:04d}.json")
    source = reader(
        folder,
        str(tmp_path / "state"),
        **{"cloudFiles.useIncrementalListing": "true", "cloudFiles.backfillInterval": "0 ms"},
    )
    assert source.discover() == 3
    land(folder, "0000-late.json")
    assert source.discover() == 1  # every listing is a backfill with a zero interval
    source.state.close()


def test_auto_lists_incrementally_only_when_names_follow_arrival(s3_root, tmp_path):
    folder = f"{s3_root}/landing"
    for i in range(12):
        land(folder, f"{i:04d}.json")
    ordered = reader(folder, str(tmp_path / "ordered"))
    ordered.discover()
    assert ordered.listing_start(1) == f"{folder}/0011.json"
    ordered.state.close()

    shuffled_folder = f"{s3_root}/shuffled"
    shuffled = reader(shuffled_folder, str(tmp_path / "shuffled"))
    for first in (6, 0):  # names 0006-0011 land first, then 0000-0005
        for i in range(first, first + 6):
            land(shuffled_folder, f"{i:04d}.json")
        assert shuffled.discover() == 6
    assert shuffled.listing_start(1) is None  # stays on full listings
    shuffled.state.close()


def test_incremental_listing_option_values_are_checked(tmp_path):
    with pytest.raises(OptionError, match="useIncrementalListing.*auto, true or false"):
        reader("/x", str(tmp_path), **{"cloudFiles.useIncrementalListing": "sometimes"})
