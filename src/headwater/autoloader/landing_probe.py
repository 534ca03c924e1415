"""Between triggers, a listing stream on a local or mounted folder notices that a file
landed by the modification times of its directories, without listing it.

A directory's modification time changes whenever a name is added to it (a file created or
renamed in, a subfolder made), so a ``stat`` of each directory of the landing folder tells
whether a listing would find anything new: microseconds, against a listing's cost per
name (:mod:`headwater.storage.dir_times`). An idle trigger's ``latestOffset`` polls them
for a share of the trigger interval (:class:`headwater.autoloader.notifications.IdleWait`)
and lists as soon as one changed, so a file landing then starts its batch at once instead
of at the next trigger, as with file events but with no watch to set up.

The probe only decides *when* to list: what is new is still what the listing and the file
state say, so a change it does not see (a file rewritten in place, a folder with more
than :data:`MAX_DIRS` directories, which is not probed) waits for the next trigger, as
before. Object stores have no directory times: their streams list at each trigger.
"""

from __future__ import annotations

import time

from headwater.storage import dir_times

MAX_DIRS = 64  # directories probed at most (each poll stats them all)
POLL_S = 0.005  # between two polls while a trigger waits
REWALK_S = 60.0  # a folder with too many directories is walked again after this long


class LandingProbe:
    """Whether any directory of a local landing folder changed since :meth:`mark`."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._dirs: list[str] | None = None  # None: walked again at the next mark
        self._marked: list[int | None] = []
        self._too_many_until = 0.0  # monotonic time before which the folder is not walked

    def mark(self) -> bool:
        """Record the directories' times now (before a listing, so what lands while it
        runs is a change); False when the folder is not probed (too many directories)."""
        if self._dirs is None and time.monotonic() >= self._too_many_until:
            self._dirs = dir_times.directories(self.root, MAX_DIRS)
            if self._dirs is None:
                self._too_many_until = time.monotonic() + REWALK_S
        self._marked = dir_times.times(self._dirs) if self._dirs is not None else []
        return self._dirs is not None

    def changed(self) -> bool:
        if self._dirs is None:
            return False
        if dir_times.times(self._dirs) != self._marked:
            self._dirs = None  # a folder may have been made or removed: walked again
            return True
        return False

    def wait(self, timeout_s: float) -> bool:
        """Until a directory changes or ``timeout_s`` passes; True when one changed."""
        deadline = time.monotonic() + timeout_s
        while not self.changed():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(POLL_S, left))
        return True
