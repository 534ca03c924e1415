"""MERGE's plan decided from values alone (Spark-free): which strategy runs, which target
files it may touch, the output schema after schema evolution, and the clauses in the order
they act. The inputs are built here as a snapshot would give them (its files and their
stats); the planner reaches no Spark session (the last test checks)."""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest
from pyspark.sql.types import LongType, StringType, StructField, StructType

from headwater.delta.dml import merge_plan
from headwater.delta.dml.merge_plan import (
    MergeRequest,
    SourceStats,
    Strategy,
    TargetFacts,
    plan_merge,
    source_keys,
)
from headwater.delta.files import column_values, identity
from headwater.delta.log.delta_log import DataFile
from headwater.delta.schema.merge_clauses import Clause
from headwater.errors import DeltaAnalysisError

TARGET = StructType([StructField("id", LongType()), StructField("v", StringType())])
SOURCE = StructType([StructField("id", LongType()), StructField("v", StringType())])
ON = "t.id = s.id"

UPDATE_ALL = Clause("matched", "update")
DELETE = Clause("matched", "delete", "s.v IS NULL")
INSERT_ALL = Clause("not_matched", "insert")
DELETE_UNMATCHED = Clause("not_matched_by_source", "delete", "t.v = 'old'")


def _target(
    ranges: list[tuple[int, int]],
    rows: list[int | None] | None = None,
    vectors: bool = False,
    schema: StructType = TARGET,
) -> TargetFacts:
    """A target of one file per (min id, max id) range, ``rows`` live rows each."""
    rows = rows if rows is not None else [100] * len(ranges)
    files = tuple(DataFile(f"part-{i}.parquet", 1000) for i in range(len(ranges)))
    stats = pa.table(
        {
            "path": [f.path for f in files],
            "num_records": pa.array(rows, pa.int64()),
            "min.id": pa.array([lo for lo, _ in ranges], pa.int64()),
            "max.id": pa.array([hi for _, hi in ranges], pa.int64()),
            "null_count.id": pa.array([0] * len(ranges), pa.int64()),
        }
    )
    live = {f.path: n for f, n in zip(files, rows, strict=True)}
    return TargetFacts(schema, (), files, stats, vectors, None if vectors else live)


def _request(
    *clauses: Clause,
    target: TargetFacts | None = None,
    source: StructType = SOURCE,
    condition: str = ON,
    evolve: bool = False,
) -> MergeRequest:
    return MergeRequest(
        condition, clauses, target or _target([(0, 9), (10, 19), (20, 29)]), source, "t", evolve
    )


def _names(plan: merge_plan.MergePlan) -> list[str] | None:
    return None if plan.candidates is None else [f.path for f in plan.candidates]


# -- strategy ---------------------------------------------------------------------------------


def test_an_upsert_of_few_keys_rewrites_its_candidates_without_the_touched_files_join():
    request = _request(UPDATE_ALL, INSERT_ALL)
    assert [k.target for k in source_keys(request)] == ["id"]
    plan = plan_merge(request, SourceStats(rows=5, bounds=((12, 14),)))
    assert plan.strategy is Strategy.OPTIMISTIC
    assert _names(plan) == ["part-1.parquet"]  # only its id range overlaps 12..14
    assert plan.reads == plan.candidates
    assert (plan.source_rows, plan.candidate_rows) == (5, 100)


def test_candidates_holding_many_rows_per_source_row_are_found_by_the_join_first():
    big = _target([(0, 9), (10, 19)], rows=[3_000_000, 3_000_000])
    plan = plan_merge(_request(UPDATE_ALL, target=big), SourceStats(10, ((0, 19),)))
    assert plan.strategy is Strategy.REWRITE_TOUCHED
    assert plan.candidate_rows == 6_000_000
    # The same candidates against a source of half their rows: rewriting them is no waste.
    plan = plan_merge(_request(UPDATE_ALL, target=big), SourceStats(3_000_000, ((0, 19),)))
    assert plan.strategy is Strategy.OPTIMISTIC


def test_the_touched_files_join_runs_when_the_log_does_not_count_a_candidates_rows():
    uncounted = _target([(0, 9), (10, 19)], rows=[100, None])
    plan = plan_merge(_request(UPDATE_ALL, target=uncounted), SourceStats(5, ((0, 19),)))
    assert plan.strategy is Strategy.REWRITE_TOUCHED
    assert plan.candidate_rows is None
    # Counted rows in the candidates alone are enough: the uncounted file is pruned.
    plan = plan_merge(_request(UPDATE_ALL, target=uncounted), SourceStats(5, ((0, 5),)))
    assert (plan.strategy, plan.candidate_rows) == (Strategy.OPTIMISTIC, 100)


def test_a_condition_without_equi_keys_measures_nothing_and_reads_every_file():
    request = _request(UPDATE_ALL, condition="t.id < s.id")
    assert source_keys(request) == ()
    plan = plan_merge(request)
    assert plan.strategy is Strategy.REWRITE_TOUCHED  # the source's size is unknown
    assert (plan.candidates, plan.source_rows) == (None, None)
    assert len(plan.reads) == 3


def test_a_merge_that_only_inserts_appends_even_where_deletion_vectors_apply():
    for vectors in (False, True):
        target = _target([(0, 9), (10, 19)], vectors=vectors)
        plan = plan_merge(_request(INSERT_ALL, target=target), SourceStats(3, ((15, 30),)))
        assert plan.strategy is Strategy.INSERT_ONLY
        assert _names(plan) == ["part-1.parquet"]  # the anti join reads these alone
        assert plan.target_columns_read == ()


def test_not_matched_by_source_without_vectors_rewrites_every_file_and_measures_nothing():
    request = _request(UPDATE_ALL, DELETE_UNMATCHED)
    assert source_keys(request) == ()
    plan = plan_merge(request)
    assert plan.strategy is Strategy.REWRITE_ALL
    assert plan.candidates is None and len(plan.reads) == 3
    assert plan.candidate_rows == 300  # the duplicate-match check counts every live row
    assert plan.source_rows is None  # counted for the metrics only


def test_deletion_vectors_carry_changes_to_target_rows_when_the_table_takes_them():
    target = _target([(0, 9), (10, 19), (20, 29)], vectors=True)
    plan = plan_merge(_request(UPDATE_ALL, target=target), SourceStats(4, ((0, 5),)))
    assert plan.strategy is Strategy.DELETION_VECTORS
    assert _names(plan) == ["part-0.parquet"]
    assert plan.broadcast_source
    assert plan.candidate_rows is None  # rows are not weighed: nothing is rewritten
    many = plan_merge(
        _request(UPDATE_ALL, target=target), SourceStats(merge_plan.BROADCAST_ROWS + 1, None)
    )
    assert not many.broadcast_source
    assert many.candidates is None  # the key range could not be evaluated: no pruning


def test_deletion_vectors_with_not_matched_by_source_read_every_file_but_measure_the_source():
    target = _target([(0, 9), (10, 19)], vectors=True)
    request = _request(DELETE, DELETE_UNMATCHED, target=target)
    assert [k.target for k in source_keys(request)] == ["id"]
    plan = plan_merge(request, SourceStats(7, ((0, 5),)))
    assert plan.strategy is Strategy.DELETION_VECTORS
    assert plan.candidates is None and len(plan.reads) == 2
    assert plan.source_rows == 7 and plan.broadcast_source


def test_a_source_without_a_non_null_key_leaves_no_candidate():
    plan = plan_merge(_request(UPDATE_ALL), SourceStats(4, ((None, None),)))
    assert plan.candidates == () and plan.reads == ()
    assert (plan.strategy, plan.candidate_rows) == (Strategy.OPTIMISTIC, 0)


def test_partition_values_prune_candidates_on_a_partition_key():
    files = tuple(
        DataFile(f"d={d}/part.parquet", 10, {"d": str(d)}) for d in (1, 2, 3)
    )  # fmt: skip
    stats = pa.table({"path": [f.path for f in files], "partition.d": [1, 2, 3]})
    schema = StructType([*TARGET.fields, StructField("d", LongType())])
    target = TargetFacts(schema, ("d",), files, stats, False, {f.path: 10 for f in files})
    request = _request(UPDATE_ALL, target=target, condition="t.d = s.d AND t.id = s.id")
    assert [k.target for k in source_keys(request)] == ["d", "id"]
    plan = plan_merge(request, SourceStats(2, ((2, 3), (0, 100))))
    assert _names(plan) == ["d=2/part.parquet", "d=3/part.parquet"]


def test_deletion_vectors_bring_only_the_target_columns_the_clauses_read():
    wide = StructType([*TARGET.fields, StructField("w", StringType())])
    target = _target([(0, 9)], vectors=True, schema=wide)
    # ``v`` is assigned and ``w`` is not, so ``w`` keeps its value: it must be read. (Columns
    # are matched by name whatever their table: an assignment from ``s.v`` would read ``v``.)
    setting_v = Clause("matched", "update", "t.id > 0", {"v": "'new'"})
    plan = plan_merge(_request(setting_v, target=target), SourceStats(1, ((1, 1),)))
    assert plan.target_columns_read == ("id", "w")
    # updateAll keeps the columns the source lacks (``w``).
    plan = plan_merge(_request(UPDATE_ALL, target=target), SourceStats(1, ((1, 1),)))
    assert plan.target_columns_read == ("id", "w")


# -- output schema ----------------------------------------------------------------------------


def test_schema_evolution_appends_the_sources_new_columns_as_nullable():
    source = StructType(
        [
            StructField("ID", LongType()),  # the target's id: names compare case-insensitively
            StructField("extra", StringType(), nullable=False),
            StructField("v", StringType()),
            StructField("more", LongType()),
        ]
    )
    plan = plan_merge(_request(UPDATE_ALL, INSERT_ALL, source=source, evolve=True))
    assert [(f.name, f.nullable) for f in plan.output_schema] == [
        ("id", True),
        ("v", True),
        ("extra", True),
        ("more", True),
    ]
    assert plan.output_schema["more"].dataType == LongType()
    assert plan.changes_schema
    assert plan.target_schema == TARGET


def test_without_schema_evolution_the_output_is_the_targets_schema():
    source = StructType([*SOURCE.fields, StructField("extra", StringType())])
    plan = plan_merge(_request(UPDATE_ALL, INSERT_ALL, source=source))
    assert plan.output_schema == TARGET and not plan.changes_schema
    same = plan_merge(_request(UPDATE_ALL, evolve=True))  # nothing new in the source
    assert not same.changes_schema


def test_generated_columns_a_clause_sets_itself_are_not_recomputed():
    generated = StructField("g", LongType(), True, {column_values.GENERATION: "id * 2"})
    target = _target([(0, 9)], schema=StructType([*TARGET.fields, generated]))
    setting_g = Clause("matched", "update", None, {"t.g": "s.id"})
    plan = plan_merge(_request(setting_g, INSERT_ALL, target=target), SourceStats(1, ((1, 1),)))
    assert plan.generated_given == frozenset({"g"})
    plan = plan_merge(_request(UPDATE_ALL, target=target), SourceStats(1, ((1, 1),)))
    assert plan.generated_given == frozenset()  # the source has no ``g``


# -- clauses ----------------------------------------------------------------------------------


def test_clauses_keep_their_order_within_each_kind_and_are_tried_by_kind():
    first = Clause("matched", "delete", "s.v = 'gone'")
    second = Clause("matched", "update", "s.v <> t.v", {"v": "s.v"})
    insert = Clause("not_matched", "insert", "s.id > 0")
    update_unmatched = Clause("not_matched_by_source", "update", None, {"v": "'stale'"})
    given = (insert, first, update_unmatched, second, DELETE_UNMATCHED)
    plan = plan_merge(_request(*given))
    assert plan.clauses == given  # as given, for the commit's operation parameters
    assert plan.matched == (first, second)
    assert plan.not_matched_by_source == (update_unmatched, DELETE_UNMATCHED)
    assert plan.not_matched == (insert,)
    # matched clauses first, then NOT MATCHED BY SOURCE, then NOT MATCHED; in order within.
    assert plan.labels == ["keep", "m0", "m1", "b0", "b1", "n0"]
    assert plan.codes == {"skip": 0, "keep": 1, "m0": 2, "m1": 3, "b0": 4, "b1": 5, "n0": 6}
    assert (plan.deletes, plan.updates, plan.inserts) == (["m0", "b1"], ["m1", "b0"], ["n0"])


def test_row_metrics_add_up_each_clauses_rows_by_kind_and_action():
    plan = plan_merge(_request(DELETE, UPDATE_ALL, INSERT_ALL, DELETE_UNMATCHED))
    counts = {"keep": 7, "m0": 1, "m1": 2, "b0": 3, "n0": 4}
    assert plan.row_metrics(counts) == {
        "numTargetRowsInserted": 4,
        "numTargetRowsUpdated": 2,
        "numTargetRowsMatchedUpdated": 2,
        "numTargetRowsNotMatchedBySourceUpdated": 0,
        "numTargetRowsDeleted": 4,
        "numTargetRowsMatchedDeleted": 1,
        "numTargetRowsNotMatchedBySourceDeleted": 3,
        "numTargetRowsCopied": 7,
    }


@pytest.mark.parametrize(
    ("clause", "message"),
    [
        (Clause("matched", "insert"), "cannot insert when matched"),
        (Clause("not_matched", "update"), "cannot update when not matched"),
        (Clause("not_matched", "delete"), "cannot delete when not matched"),
        (Clause("not_matched_by_source", "insert"), "cannot insert when not matched by source"),
        (Clause("not_matched_by_source", "update"), "NOT MATCHED BY SOURCE THEN UPDATE needs"),
    ],
)
def test_a_clause_merge_cannot_run_is_refused_by_name(clause, message):
    with pytest.raises(DeltaAnalysisError, match=message):
        plan_merge(_request(UPDATE_ALL, clause))


def test_a_clause_giving_a_generated_always_identity_column_a_value_is_refused():
    ident = identity.declare(StructField("id", LongType()))
    target = _target([(0, 9)], schema=StructType([ident, TARGET["v"]]))
    with pytest.raises(DeltaAnalysisError, match="IDENTITY_COLUMNS_EXPLICIT_INSERT"):
        plan_merge(_request(UPDATE_ALL, INSERT_ALL, target=target))  # insertAll gives id
    by_name = Clause("not_matched", "insert", None, {"v": "s.v"})
    assert plan_merge(_request(by_name, target=target)).strategy is Strategy.INSERT_ONLY


def test_the_plan_is_a_frozen_value_made_without_spark():
    plan = plan_merge(_request(UPDATE_ALL, INSERT_ALL), SourceStats(5, ((12, 14),)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.strategy = Strategy.REWRITE_ALL  # type: ignore[misc]
    assert plan == plan_merge(_request(UPDATE_ALL, INSERT_ALL), SourceStats(5, ((12, 14),)))
    # Made without Spark: the planner's module reaches neither a session nor a DataFrame
    # (the active session is no test of it: another test file of the worker may have one).
    import headwater.delta.dml.merge_plan as module

    assert not {"SparkSession", "DataFrame"} & set(vars(module))
