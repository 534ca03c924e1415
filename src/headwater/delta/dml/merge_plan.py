"""MERGE's plan as a value, decided before any row is read.

A MERGE chooses among five ways to run (:class:`Strategy`), which target files it may touch
and what its output looks like. All of that follows from facts: the clauses, the target's
schema, files, stats and properties, the source's schema, and (when files can be pruned by
the merge keys) one aggregate over the source. :func:`plan_merge` turns those facts into a
frozen :class:`MergePlan` with no Spark session and no I/O, so each choice is tested as a
value (``tests/delta/test_merge_plan.py``); :mod:`.merge` gathers the facts and
executes the plan.

The order of planning: :func:`source_keys` says which source key ranges are worth one
aggregate (the executor measures them into :class:`SourceStats`), then :func:`plan_merge`
decides the rest.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark.sql.datasource import Filter, GreaterThanOrEqual, LessThanOrEqual
from pyspark.sql.types import StructField, StructType

from headwater.delta.files import column_values, identity
from headwater.delta.log.delta_log import DataFile
from headwater.delta.read.pruning import EquiKey, equi_keys
from headwater.delta.read.skipping import keep_mask
from headwater.delta.schema.expressions import ExprLike, referenced_columns
from headwater.delta.schema.merge_clauses import Clause
from headwater.errors import DeltaAnalysisError

# Skip the touched-files join when the candidate files hold at most this many rows per
# source row (or at most OPTIMISTIC_MIN_ROWS): rewriting an untouched candidate file in
# vain then costs about what the join would have.
OPTIMISTIC_ROWS_PER_SOURCE_ROW = 2
OPTIMISTIC_MIN_ROWS = 1_000_000

# With deletion vectors: a source of at most this many rows is broadcast to the target's
# scan, and at most this many matched rows are broadcast to the write.
BROADCAST_ROWS = 2_000_000

# The actions each kind of clause may take (as delta-spark's builder and SQL allow them).
_ACTIONS = {
    "matched": ("update", "delete"),
    "not_matched_by_source": ("update", "delete"),
    "not_matched": ("insert",),
}


class Strategy(enum.Enum):
    """How a MERGE runs (see :mod:`.merge` for each path's jobs)."""

    INSERT_ONLY = "insert_only"
    """No clause acts on a target row: source rows without a match are appended."""
    DELETION_VECTORS = "deletion_vectors"
    """Changed target rows are marked in their files' deletion vectors; no file rewritten."""
    REWRITE_ALL = "rewrite_all"
    """NOT MATCHED BY SOURCE clauses without deletion vectors: every file is rewritten."""
    OPTIMISTIC = "optimistic"
    """Candidate files rewritten at once; redone with the touched ones if some was not."""
    REWRITE_TOUCHED = "rewrite_touched"
    """A join finds the files holding matched rows first; only those are rewritten."""


@dataclass(frozen=True)
class TargetFacts:
    """What planning needs of the target's snapshot."""

    schema: StructType
    partition_columns: tuple[str, ...]
    files: tuple[DataFile, ...]
    stats: pa.Table  # one row per file, in ``files``' order (Snapshot.add_actions)
    deletion_vectors: bool  # DML on this table writes deletion vectors (vectors.applies)
    live_rows: Mapping[str, int | None] | None = None  # by file path; None: not counted


@dataclass(frozen=True)
class SourceStats:
    """One aggregate over the source: its rows and each merge key's (min, max) there, in
    :func:`source_keys`' order (``bounds`` None: the keys could not be evaluated)."""

    rows: int
    bounds: tuple[tuple[object, object], ...] | None


@dataclass(frozen=True)
class MergeRequest:
    """A MERGE as stated, with the facts of its target and source."""

    condition: ExprLike
    clauses: tuple[Clause, ...]
    target: TargetFacts
    source_schema: StructType
    alias: str = "target"
    evolve: bool = False  # withSchemaEvolution: source columns the target lacks are added


@dataclass(frozen=True)
class MergePlan:
    """What a MERGE will do, as data."""

    condition: ExprLike
    alias: str
    clauses: tuple[Clause, ...]  # as given, for the commit's operation parameters
    matched: tuple[Clause, ...]  # each kind in the order given: the first that holds acts
    not_matched_by_source: tuple[Clause, ...]
    not_matched: tuple[Clause, ...]
    target_schema: StructType
    output_schema: StructType  # after schema evolution
    source_columns: tuple[str, ...]  # lower-cased
    strategy: Strategy
    keys: tuple[EquiKey, ...]  # the condition's ``target.col = <source expression>`` parts
    candidates: tuple[DataFile, ...] | None  # files a matched row can be in (None: all)
    reads: tuple[DataFile, ...]  # the files read, for the commit's conflict check
    source_rows: int | None  # from the source aggregate (None: not measured)
    candidate_rows: int | None  # live rows of ``reads`` by the log (None: not counted)
    broadcast_source: bool  # deletion vectors: the source is broadcast to the target's scan
    target_columns_read: tuple[str, ...]  # deletion vectors: target columns the clauses read
    generated_given: frozenset[str] = field(default_factory=frozenset)

    @property
    def changes_schema(self) -> bool:
        return self.output_schema != self.target_schema

    def groups(self) -> list[tuple[str, tuple[Clause, ...]]]:
        """(label prefix, clauses) of each kind, in the order a joined row tries them; a
        joined row's label is ``<prefix><index within the kind>``."""
        return [("m", self.matched), ("b", self.not_matched_by_source), ("n", self.not_matched)]

    @property
    def labels(self) -> list[str]:
        """Every label a joined row can get but ``skip``: ``keep`` (a target row no clause
        changes) and one per clause."""
        return ["keep"] + [f"{p}{i}" for p, g in self.groups() for i in range(len(g))]

    @property
    def codes(self) -> dict[str, int]:
        """Each label's integer code (cheaper than strings to compare on every row)."""
        return {label: code for code, label in enumerate(["skip", *self.labels])}

    def labels_of(self, prefixes: str, action: str) -> list[str]:
        """Labels of the clauses of the kinds in ``prefixes`` that take ``action``."""
        return [
            f"{p}{i}"
            for p, g in self.groups()
            if p in prefixes
            for i, c in enumerate(g)
            if c.action == action
        ]

    @property
    def deletes(self) -> list[str]:
        return self.labels_of("mb", "delete")

    @property
    def updates(self) -> list[str]:
        return self.labels_of("mb", "update")

    @property
    def inserts(self) -> list[str]:
        return self.labels_of("n", "insert")

    def row_metrics(self, counts: Mapping[str, int]) -> dict[str, int]:
        """MERGE's row metrics from the rows counted under each label."""

        def total(prefixes: str, action: str) -> int:
            return sum(counts.get(label, 0) for label in self.labels_of(prefixes, action))

        return {
            "numTargetRowsInserted": total("n", "insert"),
            "numTargetRowsUpdated": total("mb", "update"),
            "numTargetRowsMatchedUpdated": total("m", "update"),
            "numTargetRowsNotMatchedBySourceUpdated": total("b", "update"),
            "numTargetRowsDeleted": total("mb", "delete"),
            "numTargetRowsMatchedDeleted": total("m", "delete"),
            "numTargetRowsNotMatchedBySourceDeleted": total("b", "delete"),
            "numTargetRowsCopied": counts.get("keep", 0),
        }


def source_keys(request: MergeRequest) -> tuple[EquiKey, ...]:
    """The merge keys whose range in the source the plan needs measured (with the source's
    rows), or none: a MERGE that rewrites every file prunes nothing and counts the source
    only for its metrics."""
    if _acts_on_unmatched_target(request) and not _uses_vectors(request):
        return ()
    return tuple(equi_keys(request.condition, request.target.schema, request.alias))


def plan_merge(request: MergeRequest, source: SourceStats | None = None) -> MergePlan:
    """The plan of ``request``; ``source`` is the aggregate over :func:`source_keys` (None
    when there were none to measure).

    Refuses clauses MERGE cannot run (a kind/action pair delta-spark does not have, an
    update of unmatched target rows without assignments, a value given to a GENERATED
    ALWAYS identity column).
    """
    _check(request)
    target = request.target
    by_kind = {kind: tuple(c for c in request.clauses if c.kind == kind) for kind in _ACTIONS}
    source_columns = tuple(f.name.lower() for f in request.source_schema)
    output = _output_schema(target.schema, request.source_schema, request.evolve)
    keys = source_keys(request)
    measured = source if keys else None
    strategy = _strategy(request, by_kind)
    candidates = None  # every target row can act on a NOT MATCHED BY SOURCE clause
    if not by_kind["not_matched_by_source"]:
        candidates = _candidates(target, keys, measured)
    reads = target.files if candidates is None else candidates
    source_rows = None if measured is None else measured.rows
    candidate_rows = _live_rows(target, reads)
    if strategy is Strategy.REWRITE_TOUCHED and _optimistic(candidate_rows, source_rows):
        strategy = Strategy.OPTIMISTIC
    vectors = strategy is Strategy.DELETION_VECTORS
    return MergePlan(
        condition=request.condition,
        alias=request.alias,
        clauses=request.clauses,
        matched=by_kind["matched"],
        not_matched_by_source=by_kind["not_matched_by_source"],
        not_matched=by_kind["not_matched"],
        target_schema=target.schema,
        output_schema=output,
        source_columns=source_columns,
        strategy=strategy,
        keys=keys,
        candidates=candidates,
        reads=reads,
        source_rows=source_rows,
        candidate_rows=candidate_rows,
        broadcast_source=vectors and source_rows is not None and source_rows <= BROADCAST_ROWS,
        target_columns_read=_target_columns_read(request, source_columns) if vectors else (),
        generated_given=frozenset(
            column_values.given_by_clauses(request.clauses, source_columns, output)
        ),
    )


def _check(request: MergeRequest) -> None:
    source_columns = [f.name.lower() for f in request.source_schema]
    for c in request.clauses:
        if c.action not in _ACTIONS.get(c.kind, ()):
            raise DeltaAnalysisError(
                f"A MERGE clause cannot {c.action} when {c.kind.replace('_', ' ')}; use "
                "update or delete for (not) matched by source rows, insert for not matched."
            )
        if c.kind == "not_matched_by_source" and c.action == "update" and c.assignments is None:
            raise DeltaAnalysisError(
                "WHEN NOT MATCHED BY SOURCE THEN UPDATE needs assignments (there is no source "
                "row to take values from); name the columns it sets."
            )
        if c.action in ("update", "insert"):  # a GENERATED ALWAYS identity takes no value
            names = column_values.assigned_names(c.assignments, source_columns)
            identity.refuse_explicit(names, request.target.schema, f"MERGE's {c.action} clause")


def _acts_on_unmatched_target(request: MergeRequest) -> bool:
    return any(c.kind == "not_matched_by_source" for c in request.clauses)


def _uses_vectors(request: MergeRequest) -> bool:
    """Deletion vectors carry the MERGE when the table takes them and a clause acts on
    target rows (a MERGE that only inserts changes no file)."""
    acts_on_target = any(c.kind != "not_matched" for c in request.clauses)
    return acts_on_target and request.target.deletion_vectors


def _strategy(request: MergeRequest, by_kind: Mapping[str, tuple[Clause, ...]]) -> Strategy:
    """The strategy before the source's size is weighed (REWRITE_TOUCHED may still become
    OPTIMISTIC)."""
    if _uses_vectors(request):
        return Strategy.DELETION_VECTORS
    if by_kind["not_matched_by_source"]:
        return Strategy.REWRITE_ALL
    if not by_kind["matched"]:
        return Strategy.INSERT_ONLY
    return Strategy.REWRITE_TOUCHED


def _output_schema(target: StructType, source: StructType, evolve: bool) -> StructType:
    """The target's schema, with schema evolution the source's columns it lacks (nullable,
    in the source's order, names compared case-insensitively)."""
    if not evolve:
        return target
    names = {f.name.lower() for f in target}
    extra = [f for f in source if f.name.lower() not in names]
    return StructType(list(target.fields) + [StructField(f.name, f.dataType, True) for f in extra])


def _candidates(
    target: TargetFacts, keys: tuple[EquiKey, ...], source: SourceStats | None
) -> tuple[DataFile, ...] | None:
    """The files whose key ranges overlap the source's (None: no pruning). A MERGE without
    NOT MATCHED BY SOURCE clauses reads only these: other files cannot hold a match."""
    if source is None or source.bounds is None:
        return None
    filters: list[Filter] = []
    for k, (low, high) in zip(keys, source.bounds, strict=True):
        if low is None:  # no non-null key in the source: nothing can match
            return ()
        filters += [GreaterThanOrEqual((k.target,), low), LessThanOrEqual((k.target,), high)]
    if not target.files:
        return target.files
    mask = keep_mask(target.stats, filters, list(target.partition_columns)).to_pylist()
    return tuple(f for f, keep in zip(target.files, mask, strict=True) if keep)


def _live_rows(target: TargetFacts, files: tuple[DataFile, ...]) -> int | None:
    """Live rows in ``files`` by the log (None: a file's rows are not counted)."""
    if target.live_rows is None:
        return None
    rows = [target.live_rows.get(f.path) for f in files]
    return None if any(r is None for r in rows) else sum(r for r in rows if r is not None)


def _optimistic(candidate_rows: int | None, source_rows: int | None) -> bool:
    if candidate_rows is None or source_rows is None:
        return False
    limit = max(OPTIMISTIC_ROWS_PER_SOURCE_ROW * source_rows, OPTIMISTIC_MIN_ROWS)
    return candidate_rows <= limit


def _target_columns_read(request: MergeRequest, source_columns: tuple[str, ...]) -> tuple[str, ...]:
    """Target columns the condition and the clauses acting on target rows read, or keep as
    they are (an update that assigns only some columns); all of them when that cannot be
    told. With deletion vectors only these are brought from the target's matched rows."""
    schema = request.target.schema
    by_lower = {f.name.lower(): f.name for f in schema}
    needed: set[str] = set()
    acting = [c for c in request.clauses if c.kind != "not_matched"]
    exprs = [request.condition, *[c.condition for c in acting if c.condition is not None]]
    for c in acting:
        if c.action != "update":
            continue
        if c.assignments is None:  # updateAll: columns the source lacks keep their value
            needed |= {n for n in by_lower if n not in source_columns}
        else:
            assigned = {k.split(".")[-1].strip("`").lower() for k in c.assignments}
            needed |= {n for n in by_lower if n not in assigned}
            exprs += list(c.assignments.values())
    for e in exprs:
        refs = referenced_columns(e)
        if refs is None:
            return tuple(f.name for f in schema)
        needed |= refs & by_lower.keys()
    return tuple(f.name for f in schema if f.name.lower() in needed)
