"""The modification times of a local folder's directories: a directory's time changes
whenever a name is added to or removed from it, so comparing them tells whether a listing
would see anything new, for a ``stat`` per directory instead of a listing's cost per name
(:mod:`headwater.autoloader.landing_probe`). Local and mounted folders only: object stores
have no directory times."""

from __future__ import annotations

import os


def directories(root: str, limit: int) -> list[str] | None:
    """``root`` and its subdirectories, hidden ones (``_``/``.`` prefix) and what is under
    them left out, as listings leave them out; None when there are more than ``limit``."""
    found, pending = [root], [root]
    while pending:
        try:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    if entry.name.startswith(("_", ".")) or not entry.is_dir():
                        continue
                    if len(found) >= limit:
                        return None
                    found.append(entry.path)
                    pending.append(entry.path)
        except OSError:
            continue  # gone since: its parent's time changed with it
    return found


def times(dirs: list[str]) -> list[int | None]:
    """Each directory's modification time in ns (None: gone or unreadable)."""
    found: list[int | None] = []
    for d in dirs:
        try:
            found.append(os.stat(d).st_mtime_ns)
        except OSError:
            found.append(None)
    return found
