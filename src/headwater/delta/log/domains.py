"""Metadata domains as of a version: the newest ``domainMetadata`` action of a named domain.

A domain (``delta.clustering``, ``delta.rowTracking``, a writer's own) is replaced whole by
each action naming it, so its state at a version is the newest such action: found by
reading the JSON commits newest first down to the newest checkpoint, then that
checkpoint's domain metadata.
"""

from __future__ import annotations

from headwater import storage
from headwater.delta.log.delta_log import DeltaLog


def latest(dlog: DeltaLog, version: int, domain: str) -> dict | None:
    """The newest ``domainMetadata`` action of ``domain`` at ``version`` (a removed one
    included: ``removed`` is true), None when no commit named it."""
    checkpoint = _newest_checkpoint(dlog, version)
    for v in range(version, checkpoint, -1):
        for action in reversed(dlog.commit_actions(v)):
            d = action.get("domainMetadata")
            if d and d.get("domain") == domain:
                return dict(d)
    if checkpoint >= 0:
        for d in _checkpoint_domains(dlog, checkpoint):
            if d.get("domain") == domain:
                return dict(d)
    return None


def _newest_checkpoint(dlog: DeltaLog, version: int) -> int:
    found = -1
    for info in storage.list_files(dlog.log_dir, recursive=False):
        name = info.base_name
        if ".checkpoint" in name and name[:20].isdigit():
            v = int(name[:20])
            if found < v <= version:
                found = v
    return found


def _checkpoint_domains(dlog: DeltaLog, version: int) -> list[dict]:
    import pyarrow.parquet as pq

    out: list[dict] = []
    for info in storage.list_files(dlog.log_dir, recursive=False):
        name = info.base_name
        if not (name.startswith(f"{version:020d}.checkpoint") and name.endswith(".parquet")):
            continue
        fs, inner = storage.filesystem(info.path)
        if "domainMetadata" not in pq.read_schema(inner, filesystem=fs).names:
            continue
        table = pq.read_table(inner, columns=["domainMetadata"], filesystem=fs)
        out += [d for d in table.column("domainMetadata").to_pylist() if d is not None]
    return out
