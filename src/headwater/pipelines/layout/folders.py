"""Where a pipeline keeps what is not a table, under its spec's ``storage``.

    <storage>/checkpoints/<flow>/           one Structured Streaming checkpoint per flow
    <storage>/checkpoints/<flow>/autoloader/N  Auto Loader schema + file state of source N
    <storage>/checkpoints/<flow>/cdc        an AUTO CDC flow's key state (a Delta table)
    <storage>/system/events                 the event log (a Delta table)
    <storage>/system/logs/run-<t>-<pid>.log  a command's stack traces (Spark's log)
    <storage>/state/<name>.json             small records: once flows done, refresh epochs

Per flow, never per table: two flows into one table must each keep their own progress
and their own Delta transaction id, or one would take the other's rows as already written.
Auto Loader state lives inside its flow's checkpoint, so resetting a flow resets both.
All access goes through :mod:`headwater.storage`.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from headwater import event_log_format as event_format
from headwater import storage

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def path_part(name: str) -> str:
    """A flow or dataset name as one safe path component."""
    return _UNSAFE.sub("_", name)


@dataclass(frozen=True)
class Layout:
    root: str

    def checkpoint(self, flow: str) -> str:
        return storage.join(self.root, "checkpoints", path_part(flow))

    def source_state(self, flow: str, index: int) -> str:
        return storage.join(self.checkpoint(flow), "autoloader", str(index))

    def cdc_state(self, flow: str) -> str:
        return storage.join(self.checkpoint(flow), "cdc")

    @property
    def event_log(self) -> str:
        return event_format.location(self.root)

    @property
    def logs(self) -> str:
        """Where ``headwater pipelines run`` keeps each run's stack traces."""
        return storage.join(self.root, "system", "logs")

    def state_path(self, name: str) -> str:
        return storage.join(self.root, "state", path_part(name) + ".json")

    def read_state(self, name: str) -> dict[str, Any]:
        try:
            return dict(json.loads(storage.read_bytes(self.state_path(name))))
        except FileNotFoundError:
            return {}

    def write_state(self, name: str, value: dict[str, Any]) -> None:
        """Replace a record whole: written aside, then moved over the old one."""
        path = self.state_path(name)
        aside = f"{path}.{uuid.uuid4().hex}.tmp"
        storage.write_bytes(aside, json.dumps(value, sort_keys=True).encode())
        storage.move(aside, path)

    def reset_flow(self, flow: str) -> None:
        """Forget a flow's progress and its sources' state."""
        storage.delete_dir(self.checkpoint(flow))

    def adopt(self, flow: str, earlier: Iterable[str]) -> str | None:
        """A flow's progress kept under an earlier spelling of its name (its checkpoint,
        with its sources' and AUTO CDC state, and its once-flow records) moved to
        ``flow``'s when ``flow`` has none: a flow renamed by spelling alone (SQL's
        ```bronze``` is ``bronze`` now) continues where it was, rather than reading its
        sources again. Returns the spelling adopted, if any."""
        target = self.checkpoint(flow)
        if storage.exists(target):
            return None
        for name in earlier:
            source = self.checkpoint(name)
            if source == target or not storage.is_dir(source):
                continue
            if not storage.is_remote(source):
                storage.move(source, target)
            else:  # an object store moves objects, one at a time
                for info in storage.list_files(source):
                    storage.move(
                        info.path, storage.join(target, storage.relative(info.path, source))
                    )
                storage.delete_dir(source)
            once = self.read_state("once")
            moved = {
                f"{flow}@{key.split('@', 1)[1]}": done
                for key, done in once.items()
                if key.split("@", 1)[0] == name
            }
            if moved:
                self.write_state("once", {**once, **moved})
            return name
        return None
