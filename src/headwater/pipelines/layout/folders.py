"""Where a pipeline keeps what is not a table, under its spec's ``storage``.

    <storage>/checkpoints/<flow>/           one Structured Streaming checkpoint per flow
    <storage>/checkpoints/<flow>/autoloader/N  Auto Loader schema + file state of source N
    <storage>/checkpoints/<flow>/cdc        an AUTO CDC flow's key state (a Delta table)
    <storage>/system/events                 the event log (a Delta table)
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
