"""The backlog a pipeline's progress shows (``backlog_files``) counts the files no batch
has read yet. Spark marks a batch's files committed only when it plans the next batch, so
between a batch's commit to the table and that moment the files it wrote must not count as
waiting (a progress line said 40 files waiting when 38 were)."""

from __future__ import annotations

from headwater.autoloader import backlog
from headwater.autoloader.state import FileState


def test_the_files_of_the_batch_being_read_are_not_waiting(tmp_path):
    location = str(tmp_path / "state")
    state = FileState(location)
    try:
        state.record([(f"/landing/{i}.json", 100, 1_000 + i) for i in range(40)], False)
        assert backlog(location) == (40, 4_000)
        first = state.admit(0, 2, None)  # Spark plans a batch of 2 files ...
        state.note_reading(first)  # ... and reads them (what the source's partitions does)
        assert backlog(location) == (38, 3_800)  # its commit to the table is next
        state.mark_committed(first)  # planning the next batch commits this one's files
        second = state.admit(first, 2, None)
        state.note_reading(second)
        assert backlog(location) == (36, 3_600)
        state.mark_committed(state.admit(second, None, None))
        assert backlog(location) == (0, 0)
    finally:
        state.close()
