"""A stream's checkpoint as a killed first batch leaves it, made fit to start again.

Spark writes each batch's offsets as a hidden temporary file renamed into place
(``offsets/.0.<uuid>.tmp`` → ``offsets/0``). A process killed between the two leaves a
checkpoint that holds no batch but whose ``offsets`` folder is not empty, and Spark 4 then
refuses to start the query at all (``STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY``, from its
check ``spark.sql.streaming.verifyCheckpointDirectoryEmptyOnStart``): the rerun after a
crash fails where exactly-once wants it to run the first batch again. The leftovers are
temporary files of a batch never written, so removing them is what a rerun needs and loses
nothing; Spark's check still guards every checkpoint that holds anything else.
"""

from __future__ import annotations

from headwater.errors import StorageError
from headwater.storage import delete_file, list_files
from headwater.storage.paths import join, parse


def clear_unwritten_first_batch(checkpoint: str) -> list[str]:
    """Remove what a killed first batch left in ``checkpoint``'s ``offsets`` folder when
    that folder holds no batch (no file named by a number, as Spark names its batch files);
    the files removed. Checkpoints on stores headwater does not reach itself (``hdfs:``,
    say) are left to Spark."""
    location = parse(checkpoint)
    if not (location.is_local or location.is_s3):
        return []
    offsets = join(checkpoint, "offsets")
    try:
        files = list_files(offsets, recursive=False)
    except (StorageError, OSError):
        return []
    if not files or any(f.base_name.isdigit() for f in files):
        return []
    for f in files:
        delete_file(f.path)
    return [f.path for f in files]
