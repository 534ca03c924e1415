"""The elements of a pipeline's dataflow graph, as definitions declare them.

Kept apart from execution (as ``pyspark.pipelines`` keeps ``output.py`` and ``flow.py``
apart from its runner): loading a pipeline's sources produces these frozen values and
nothing else, so a graph can be analysed, printed or dry-run without touching data.

A *dataset* is where rows end up (a streaming table, a materialized view, a temporary view
or an external sink); a *flow* is a query that writes into one dataset. A dataset defined
with a query (``@dp.table``, ``CREATE ... AS SELECT``) has one implicit flow of the same
name; ``create_streaming_table`` + ``@append_flow`` give a table several flows.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from headwater.catalog.names import parse_parts
from headwater.errors import OptionError, PipelineDefinitionError

DatasetKind = Literal["streaming_table", "materialized_view", "temporary_view", "sink", "table"]
"""``table`` is ``dlt.table``'s: a streaming table when its query is a stream, a
materialized view otherwise, decided when the graph is analysed."""

ExpectationAction = Literal["warn", "drop", "fail", "quarantine"]


QUOTED_PART = re.compile(r"[.`\s]")


def canonical_name(name: str) -> str:
    """A dataset or flow name in one spelling however it was quoted: ```1_db`.t`` and
    ``1_db.t`` are both ``1_db.t``, so flow names, checkpoints, the event log and progress
    lines agree. A part keeps backquotes only where :func:`quoted` says (so the spelling
    reads back as the same parts); text that is no dotted name (a flow named ``my flow``
    in Python) is kept as given."""
    try:
        parts = parse_parts(name)
    except OptionError:
        return name
    if not parts:
        return name
    return ".".join(
        "`" + p.replace("`", "``") + "`" if quoted(p, i, len(parts)) else p
        for i, p in enumerate(parts)
    )


def quoted(part: str, index: int, count: int) -> bool:
    """Whether a name part keeps backquotes: it holds a dot, a backquote or a space, or
    it is a first part ``live`` (unquoted, ``LIVE.`` means "of this pipeline")."""
    return bool(QUOTED_PART.search(part)) or (index == 0 < count - 1 and part.lower() == "live")


def earlier_spellings(name: str) -> Iterator[str]:
    """The spellings a canonical ``name`` had before names were made canonical: each part
    backquoted or not, as a SQL source may have written it (a flow's checkpoint and state
    were keyed by the name as written)."""
    try:
        parts = parse_parts(name)
    except OptionError:
        return
    seen = {name}
    for quoting in itertools.product((False, True), repeat=len(parts)):
        spelt = ".".join(
            "`" + p.replace("`", "``") + "`" if q or quoted(p, i, len(parts)) else p
            for i, (p, q) in enumerate(zip(parts, quoting, strict=True))
        )
        if spelt not in seen:
            seen.add(spelt)
            yield spelt


@dataclass(frozen=True)
class Origin:
    """Where a definition was written: errors and the event log point here."""

    file: str
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass(frozen=True)
class Expectation:
    """A named data-quality rule on a dataset: a SQL boolean expression over the row
    (or a Column). ``quarantine`` is headwater's: the row goes to the dataset's
    quarantine table with the names of the rules it broke."""

    name: str
    constraint: str
    action: ExpectationAction = "warn"
    column: Any = field(default=None, compare=False)  # a Column given instead of SQL text


class RefreshPolicy(str, Enum):
    """``REFRESH POLICY`` / ``refresh_policy=``, as the known platform spells it."""

    AUTO = "auto"
    INCREMENTAL = "incremental"
    INCREMENTAL_STRICT = "incremental_strict"
    FULL = "full"

    @classmethod
    def parse(cls, text: str | None) -> RefreshPolicy:
        if text is None:
            return cls.AUTO
        word = "_".join(str(text).strip().lower().split())
        for policy in cls:
            if policy.value == word:
                return policy
        known = ", ".join(p.value for p in cls)
        raise PipelineDefinitionError(
            f"[PIPELINE_UNKNOWN_REFRESH_POLICY] refresh policy '{text}' is not one of: {known}."
        )


@dataclass(frozen=True)
class Dataset:
    """A dataset of the graph. ``name`` is as written (``t`` or ``db.t``); the graph
    qualifies it with the pipeline's catalog and database."""

    name: str
    kind: DatasetKind
    origin: Origin
    comment: str | None = None
    table_properties: Mapping[str, str] = field(default_factory=dict)
    partition_cols: tuple[str, ...] = ()
    cluster_by: tuple[str, ...] = ()
    schema: StructType | str | None = None
    format: str | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    private: bool = False
    expectations: tuple[Expectation, ...] = ()
    refresh_policy: RefreshPolicy = RefreshPolicy.AUTO  # materialized views only

    @property
    def persisted(self) -> bool:
        return self.kind in ("streaming_table", "materialized_view", "table")


@dataclass(frozen=True)
class AutoCdc:
    """How a flow applies change events to its target (AUTO CDC / APPLY CHANGES).

    Expressions are SQL text, or a Column kept beside it (``*_column``); column lists are
    plain names. ``scd_type`` 1 keeps the newest row per key, 2 keeps its history with
    ``__START_AT`` / ``__END_AT``."""

    source: str
    keys: tuple[str, ...]
    sequence_by: str
    where: str | None = None
    ignore_null_updates: bool = False
    apply_as_deletes: str | None = None
    apply_as_truncates: str | None = None
    column_list: tuple[str, ...] | None = None
    except_column_list: tuple[str, ...] | None = None
    scd_type: int = 1
    track_history_column_list: tuple[str, ...] | None = None
    track_history_except_column_list: tuple[str, ...] | None = None
    unavailable_columns: str | None = None
    """A source column (``ARRAY<STRING>``) naming, per event, the columns the event does not
    carry (Debezium's unavailable TOAST values): they keep the value before the event."""
    columns: Mapping[str, Any] = field(default_factory=dict, compare=False)
    """Columns given instead of text, by field (``sequence_by``, ``apply_as_deletes``...)."""
    from_snapshot: bool = False  # events are the differences between full snapshots
    snapshot_function: Any = field(default=None, compare=False)
    """``next_snapshot_and_version(latest_version)``, when snapshots come from a function."""


@dataclass(frozen=True)
class Flow:
    """A query that writes into ``target``. ``func`` is captured unevaluated: it runs only
    while the graph is analysed (with reads of other datasets resolved by the pipeline)
    and again when the flow starts. ``once`` flows run a single time, then never again
    until a full refresh of their target."""

    name: str
    target: str
    func: Callable[[], DataFrame]
    origin: Origin
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    once: bool = False
    implicit: bool = True
    sql: str | None = None
    auto_cdc: AutoCdc | None = None
