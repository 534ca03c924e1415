"""File notification mode (``cloudFiles.useNotifications``) on local and mounted folders.

The known platform subscribes to the cloud's file events; here the operating system's own
(inotify on Linux, through ``watchdog``) tell the stream which files landed, so a trigger
finds them without listing the folder, and :meth:`FileEvents.wait` lets the stream's
``latestOffset`` return as soon as a file lands instead of at the next trigger.

Events are a fast path, never the record: the first discovery of every run is a full
listing (files that landed while the stream was down), and a listing runs again every
``cloudFiles.backfillInterval`` (one minute by default in this mode) and whenever the
events may be incomplete (a folder created or moved in, the watch lost). What is new is
still decided by the file state, so an event and a listing naming the same file add it once.

A file counts when it is closed after writing or renamed into the folder: a file still
being written is not announced half-way (a listing might still see one, as before).
Object stores (``s3://``...) have no notification service here: they keep listing.
"""

from __future__ import annotations

import logging
import os
import sys
import threading

from watchdog.events import (
    DirCreatedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver

log = logging.getLogger(__name__)

SAFETY_LISTING_MS = 60_000  # the listing interval in this mode without backfillInterval
MAX_WAIT_S = 1.0  # the longest latestOffset holds the query thread (and so query.stop())
WAIT_SHARE = 0.8  # of the trigger interval seen between idle triggers
LEARN_GAPS = 2  # gaps between idle triggers the interval is learnt from

# Linux announces a finished write (close after writing); other systems only changes.
_WRITTEN: tuple[type[FileSystemEvent], ...] = (
    (FileClosedEvent,)
    if sys.platform.startswith("linux")
    else (FileCreatedEvent, FileModifiedEvent)
)
_EVENTS = [*_WRITTEN, FileMovedEvent, DirCreatedEvent, DirMovedEvent]


class FileEvents(FileSystemEventHandler):
    """The files announced under one folder since the last :meth:`take`."""

    def __init__(self, root: str) -> None:
        super().__init__()
        self.root = root
        self._lock = threading.Lock()
        self._landed: dict[str, None] = {}  # in arrival order, each once
        self._relist = False
        self._arrived = threading.Event()
        self._observer: BaseObserver | None = None
        self._failed = False

    # -- the watch -------------------------------------------------------------------------

    def start(self) -> bool:
        """Watch the folder (and its subfolders); False when it cannot be watched (missing,
        or the system's watch limit reached): the stream lists instead."""
        if self._observer is not None or self._failed:
            return self.watching
        observer = Observer()
        try:
            observer.schedule(self, self.root, recursive=True, event_filter=_EVENTS)
            observer.daemon = True
            observer.start()
        except OSError as e:
            log.info("cloudFiles.useNotifications: cannot watch %s (%s); listing", self.root, e)
            self._failed = True
            return False
        self._observer = observer
        return True

    @property
    def watching(self) -> bool:
        return self._observer is not None and self._observer.is_alive()

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer = None

    def on_any_event(self, event: FileSystemEvent) -> None:
        if isinstance(event, (DirCreatedEvent, DirMovedEvent)):
            # files written into a folder before its watch is set up have no event
            with self._lock:
                self._relist = True
            self._arrived.set()
            return
        path = event.dest_path if isinstance(event, FileMovedEvent) else event.src_path
        path = os.fsdecode(path)
        if any(p.startswith(("_", ".")) for p in os.path.relpath(path, self.root).split(os.sep)):
            return  # hidden files (temporary names before a rename) are never read
        with self._lock:
            self._landed[path] = None
        self._arrived.set()

    # -- what the stream asks --------------------------------------------------------------

    def take(self) -> tuple[list[str], bool]:
        """The paths announced since the last call, and whether a listing is needed too."""
        with self._lock:
            landed, relist = list(self._landed), self._relist
            self._landed, self._relist = {}, False
            self._arrived.clear()
        if not self.watching:
            relist = True
        return landed, relist

    def pending(self) -> bool:
        return self._arrived.is_set()

    def wait(self, timeout_s: float) -> bool:
        """Until a file lands or ``timeout_s`` passes; True when one landed."""
        return self._arrived.wait(timeout_s) if timeout_s > 0 else self._arrived.is_set()


class IdleWait:
    """How long an idle ``latestOffset`` may wait for a file: a share of the trigger
    interval, learnt from the time between two triggers that found nothing (Spark starts
    triggers on multiples of the interval), so the wait ends before the next trigger is
    due and never delays one. Capped at :data:`MAX_WAIT_S`, the longest ``query.stop()``
    can wait for it. Nothing is waited until the interval is known, and it is learnt once,
    from the first :data:`LEARN_GAPS` gaps, in which no source waited (a query reading
    several streams waits in each in turn, so later gaps would hold the waits and grow with
    them), the longest of them (an idle trigger that started late, after a batch ran past
    the interval, is followed by a short gap)."""

    def __init__(self) -> None:
        self._last_idle_start: float | None = None
        self._gaps: list[float] = []
        self.interval_s: float | None = None

    def seconds(self, now: float) -> float:
        """The wait of an idle trigger that started at ``now``, counted from ``now``."""
        if self.interval_s is None and self._last_idle_start is not None:
            self._gaps.append(now - self._last_idle_start)
            if len(self._gaps) == LEARN_GAPS:
                self.interval_s = max(self._gaps)
        if self.interval_s is None:
            return 0.0
        return min(MAX_WAIT_S, WAIT_SHARE * self.interval_s)

    def idle(self, started: float) -> None:
        """The trigger that started at ``started`` found nothing."""
        self._last_idle_start = started

    def busy(self) -> None:
        """A trigger found files: the next gap is not an interval."""
        self._last_idle_start = None
