"""The facts a view's refresh plan is made from, read from the Delta logs and from Spark's
analysed plan of its query.

A refresh records, in the view's own commit (``userMetadata``, which every Delta engine
writes and keeps), the versions of the inputs it read and a digest of its definition; the
next refresh reads that record back from the view's log and classifies each input's
commits since then by their actions: none that change data, appends only, or rows removed
or rewritten. What the query reads is checked on its analysed plan: every leaf relation
must be one of the pipeline inputs' reads (or constant rows), and the plan deterministic.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
from collections.abc import Sequence

from pyspark.sql import DataFrame

from headwater.delta.log.delta_log import DeltaLog
from headwater.pipelines.define.elements import Flow
from headwater.pipelines.refresh.plan import Change, Recorded

MARKER = "headwater.materializedView"
LOOK_BACK = 100  # commits searched for the last refresh's record
MAX_CLASSIFIED = 1000  # commits of one input classified; more counts as UPDATES
CONSTANT_LEAVES = ("LocalRelation", "OneRowRelation", "Range")
# Deterministic to Spark (one value per query), but not across refreshes: a view that
# reads the clock must be recomputed even when its inputs did not change.
CLOCK = re.compile(
    r"\b(current_timestamp|current_date|current_time|now|localtimestamp|unix_timestamp)\(\)",
    re.IGNORECASE,
)


def definition_digest(flow: Flow, schema_json: str) -> str:
    """A digest of what the view computes: its SQL or its function's source, and its
    schema. A changed definition resets the view's incremental state."""
    try:
        text = flow.sql or inspect.getsource(flow.func)
    except (OSError, TypeError):
        text = f"{flow.func.__module__}.{flow.func.__qualname__}"
    return hashlib.sha256(f"{text}\n{schema_json}".encode()).hexdigest()[:16]


def user_metadata(inputs: dict[str, int], definition: str) -> str:
    """What a refresh records in the view's commit."""
    return json.dumps({MARKER: {"inputs": inputs, "definition": definition}}, sort_keys=True)


def last_recorded(location: str) -> tuple[Recorded | None, int | None]:
    """The view's last refresh record (with the version it made) and its latest version;
    (None, None) when there is no table yet."""
    log = DeltaLog(location)
    if not log.exists():
        return None, None
    latest = log.latest_version()
    for version in range(latest, max(-1, latest - LOOK_BACK), -1):
        try:
            info = log.read_commit(version).info
        except Exception:  # a commit cleaned from the log: nothing older to find
            break
        found = _record(info.values.get("userMetadata") if info is not None else None)
        if found is not None:
            return Recorded(found["inputs"], found["definition"], version), latest
    return None, latest


def _record(text: object) -> dict | None:
    if not isinstance(text, str) or MARKER not in text:
        return None
    try:
        found = json.loads(text)[MARKER]
        inputs = {str(k): int(v) for k, v in dict(found["inputs"]).items()}
        return {"inputs": inputs, "definition": str(found["definition"])}
    except (ValueError, KeyError, TypeError):
        return None


def latest_version(location: str) -> int | None:
    log = DeltaLog(location)
    return log.latest_version() if log.exists() else None


def change_between(location: str, since: int, now: int) -> Change:
    """How an input changed from version ``since`` to ``now``, by its commits' actions."""
    if now == since:
        return Change.NONE
    if now < since or now - since > MAX_CLASSIFIED:
        return Change.RESET if now < since else Change.UPDATES
    log = DeltaLog(location)
    found = Change.NONE
    try:
        schema = log.snapshot(since).schema
        for version in range(since + 1, now + 1):
            commit = log.read_commit(version)
            if commit.metadata is not None and log.snapshot(version).schema != schema:
                return Change.RESET
            if any(r.data_change for r in commit.removes):
                found = Change.UPDATES
            elif found == Change.NONE and any(a.data_change for a in commit.adds):
                found = Change.APPENDS
    except Exception:  # history no longer readable (cleaned up): start over
        return Change.RESET
    return found


def query_facts(df: DataFrame, inputs: Sequence[DataFrame]) -> tuple[bool, tuple[str, ...]]:
    """Whether the query gives the same rows on the same inputs (deterministic, and
    reading no clock), and the leaves of its analysed plan that are
    neither one of ``inputs``' reads nor constant rows (named by their node)."""
    plan = df._jdf.queryExecution().analyzed()
    known = [leaf for d in inputs for leaf in _leaves(d._jdf.queryExecution().analyzed())]
    unversioned = []
    for leaf in _leaves(plan):
        name = leaf.nodeName()
        if name in CONSTANT_LEAVES or any(leaf.sameResult(k) for k in known):
            continue
        unversioned.append(str(leaf.simpleString(60)))
    deterministic = bool(plan.deterministic()) and not CLOCK.search(str(plan.toString()))
    return deterministic, tuple(unversioned)


def _leaves(plan: object) -> list:
    seq = plan.collectLeaves()  # type: ignore[attr-defined]
    return [seq.apply(i) for i in range(seq.size())]
