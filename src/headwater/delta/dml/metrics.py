"""The ``operationMetrics`` of DELETE, UPDATE and MERGE besides their row counts, with
delta-spark's names and meanings: bytes written and removed, change files, deletion
vectors added, removed and updated, and the times the operation took.

Row counts come from each operation's own jobs; what is here comes from the actions the
commit stages (:func:`files_changed`, :func:`vectors_changed`) and from a :class:`Clock`
started with the operation. MERGE names them ``numTarget...``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from headwater.delta.log.actions import AddCDCFile, AddFile, RemoveFile


class Clock:
    """An operation's times: ``scanTimeMs`` until :meth:`scanned` (finding the files or
    rows it touches; 0 when it writes in the same pass), ``rewriteTimeMs`` from then to the
    commit, ``executionTimeMs`` in all."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.scan_end: float | None = None

    def scanned(self) -> None:
        if self.scan_end is None:
            self.scan_end = time.monotonic()

    def times(self) -> dict[str, int]:
        now = time.monotonic()
        scan_end = self.started if self.scan_end is None else self.scan_end
        return {
            "executionTimeMs": _ms(now - self.started),
            "scanTimeMs": _ms(scan_end - self.started),
            "rewriteTimeMs": _ms(now - scan_end),
        }


def _ms(seconds: float) -> int:
    return int(seconds * 1000)


@dataclass(frozen=True)
class FileMetrics:
    """What a DML's commit does to files, beyond how many it adds and removes."""

    added_bytes: int = 0
    removed_bytes: int = 0
    change_files: int = 0
    vectors_added: int = 0
    vectors_removed: int = 0
    vectors_updated: int = 0

    def named(self, merge: bool = False) -> dict[str, int]:
        """As DELETE and UPDATE log them, or (``merge``) MERGE."""
        if merge:
            return {
                "numTargetBytesAdded": self.added_bytes,
                "numTargetBytesRemoved": self.removed_bytes,
                "numTargetChangeFilesAdded": self.change_files,
                "numTargetDeletionVectorsAdded": self.vectors_added,
                "numTargetDeletionVectorsRemoved": self.vectors_removed,
                "numTargetDeletionVectorsUpdated": self.vectors_updated,
            }
        return {
            "numAddedBytes": self.added_bytes,
            "numRemovedBytes": self.removed_bytes,
            "numAddedChangeFiles": self.change_files,
            "numDeletionVectorsAdded": self.vectors_added,
            "numDeletionVectorsRemoved": self.vectors_removed,
            "numDeletionVectorsUpdated": self.vectors_updated,
        }


def files_changed(
    removes: Iterable[RemoveFile], adds: Iterable[AddFile], cdc: Iterable[AddCDCFile]
) -> FileMetrics:
    """Files rewritten: the bytes of the new files and of those they replace; the deletion
    vectors that go with the replaced files."""
    removes = list(removes)
    return FileMetrics(
        added_bytes=sum(a.size for a in adds),
        removed_bytes=sum(r.size or 0 for r in removes),
        change_files=len(list(cdc)),
        vectors_removed=sum(r.deletion_vector is not None for r in removes),
    )


def vectors_changed(
    marked: Iterable[tuple[AddFile, bool]], dropped: Iterable[AddFile], new: Iterable[AddFile]
) -> FileMetrics:
    """Rows marked deleted in vectors (delta-spark's ``processUnmodifiedData``): each
    ``marked`` file with whether it had a vector before (a vector added, or updated),
    ``dropped`` files whose every row went (removed whole: their vector, if any, goes too),
    and the ``new`` files of updated and inserted rows."""
    marked = list(marked)
    return FileMetrics(
        added_bytes=sum(a.size for a in new),
        vectors_added=sum(not had for _, had in marked),
        vectors_updated=sum(had for _, had in marked),
        vectors_removed=sum(a.deletion_vector is not None for a in dropped),
    )
