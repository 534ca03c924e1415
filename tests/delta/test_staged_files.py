"""Which files of a staging folder a write places (Spark-free): the committed job's Parquet
files, never a failed task attempt's, left under the committer's folder."""

from __future__ import annotations

from headwater.delta.files.data_files import COMMITTER_DIRS, staged_files


def test_files_left_under_the_committers_folder_are_never_placed(tmp_path):
    staging = tmp_path / "_headwater_staging" / "abc"
    attempt = staging.joinpath(*COMMITTER_DIRS, "attempt_202612021400_0001_m_000000_1")
    attempt.mkdir(parents=True)
    (attempt / "part-00000-a.c000.snappy.parquet").write_bytes(b"half")  # failed attempt
    (staging / "k=1").mkdir()
    for name in ("k=1/part-00000-b.c000.snappy.parquet", "part-00001-c.c000.snappy.parquet"):
        (staging / name).write_bytes(b"PAR1")
    for name in ("_SUCCESS", ".part-00001-c.c000.snappy.parquet.crc", "k=1/_x.parquet"):
        (staging / name).write_bytes(b"")
    placed = sorted(f.path[len(str(staging)) + 1 :] for f in staged_files(str(staging)))
    assert placed == ["k=1/part-00000-b.c000.snappy.parquet", "part-00001-c.c000.snappy.parquet"]
