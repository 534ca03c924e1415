"""Auto Loader's file state with ``cloudFiles.schemaLocation`` on S3: a log of changes
there, SQLite only a local cache of it."""

from __future__ import annotations

import shutil

from headwater import storage
from headwater.autoloader import backlog, cloud_files_state, state_log
from headwater.autoloader.state import FileState


def test_file_state_on_s3_survives_the_loss_of_its_local_cache(
    s3_spark, s3_root, tmp_path, monkeypatch
):
    monkeypatch.setenv(state_log.CACHE_ENV, str(tmp_path / "cache"))
    location = f"{s3_root}/schema"
    state = FileState(location)
    assert state.record([(f"{s3_root}/in/{i}.json", 5, 1000 + i) for i in range(4)], False) == 4
    state.mark_committed(3)
    state.close()
    assert backlog(location) == (1, 5)  # read from this machine's cache, without writing

    shutil.rmtree(tmp_path / "cache")
    assert backlog(location) is None  # no cache here: nothing known locally
    rows = cloud_files_state(location, s3_spark).orderBy("path").collect()
    assert [r.path.rsplit("/", 1)[1] for r in rows] == ["0.json", "1.json", "2.json", "3.json"]
    assert [r.commit_time is not None for r in rows] == [True, True, True, False]
    entries = storage.list_files(f"{location}/_headwater_file_state")
    assert sorted(e.path.rsplit("/", 1)[1] for e in entries) == [
        f"{1:020d}.json",
        f"{2:020d}.json",
        "state_id",
    ]
