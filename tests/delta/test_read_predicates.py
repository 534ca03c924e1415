"""What a DML records as read for the conflict check, without Spark: the partition part of
its condition (delta-spark's read predicates), and the check that then lets commits into
other partitions through.

delta-spark records, for UPDATE and DELETE, the conjuncts of the condition that read
partition columns alone, and for MERGE those of the merge condition that read the target's
partition columns alone (``t.date = '2024-01-01' AND t.id = s.id`` read one date); no such
conjunct means the whole table was read.
"""

from __future__ import annotations

import pytest
from pyspark.sql.types import LongType, StringType, StructField, StructType

from headwater.delta.log.actions import AddFile, encode_path, now_ms
from headwater.delta.log.commit import Transaction
from headwater.delta.log.delta_log import DeltaLog
from headwater.delta.log.operations import Operation
from headwater.delta.read.pruning import read_predicate
from headwater.delta.write.create import create_table
from headwater.errors import ConcurrentAppendException

PARTS = ["date", "region"]


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ("date = '2024-01-01' AND value > 5", "(`date` = '2024-01-01')"),
        ("DATE = '2024-01-01'", "(`date` = '2024-01-01')"),  # names as the table spells them
        (
            "date >= '2024-01-01' AND (value > 5 OR id = 1) AND region IN ('eu', 'us')",
            "(`date` >= '2024-01-01') AND (`region` IN ('eu', 'us'))",
        ),
        ("value > 5", None),  # data columns alone: every partition
        ("date = '2024-01-01' OR value > 5", None),  # a disjunction reads data columns
        ("date IN (SELECT d FROM days) AND value > 5", None),
        (None, None),
    ],
)
def test_update_and_delete_record_the_partition_part_of_their_condition(condition, expected):
    assert read_predicate(condition, PARTS) == expected


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ("t.date = '2024-01-01' AND t.id = s.id", "(`date` = '2024-01-01')"),
        ("t.id = s.id AND T.REGION = 'eu' AND s.value > 0", "(`region` = 'eu')"),
        ("t.id = s.id", None),  # no partition predicate: the whole table
        ("t.date = s.date AND t.id = s.id", None),  # reads the source: not the target alone
        ("s.date = '2024-01-01' AND t.id = s.id", None),  # the source's column
        ("region = 'eu' AND t.id = s.id", "(`region` = 'eu')"),  # unqualified, target's only
        ("date = '2024-01-01' AND t.id = s.id", None),  # unqualified, the source has it too
    ],
)
def test_merge_records_the_target_partition_part_of_its_condition(condition, expected):
    source_columns = ["id", "date", "value"]
    assert read_predicate(condition, PARTS, "t", source_columns) == expected


def test_a_table_without_partitions_records_the_whole_table():
    assert read_predicate("date = '2024-01-01'", []) is None


SCHEMA = StructType([StructField("id", LongType()), StructField("date", StringType())])


def _add(date: str, name: str) -> AddFile:
    rel = f"date={date}/{name}"
    return AddFile(encode_path(rel), {"date": date}, 1, now_ms(), True, '{"numRecords": 1}')


def _merge_into(root: str, condition: str) -> Transaction:
    """A MERGE that read the table at its current version, staged but not committed. Its
    read partitions are the partition values its read predicate names (a comparison of the
    one partition column with a literal, enough for this check without Spark)."""
    dlog = DeltaLog(root)
    txn = Transaction(dlog, dlog.snapshot(), Operation.merge(condition, []))
    predicate = read_predicate(condition, ["date"], "t", ["id", "date"])
    wanted = None if predicate is None else predicate.split("'")[1]
    txn.read_files(
        [],
        None if wanted is None else lambda values: [v.get("date") == wanted for v in values],
    )
    txn.add_files([_add(wanted or "2024-01-01", "ours.parquet")])
    return txn


def _merged_elsewhere(root: str, date: str) -> None:
    """A MERGE into ``date`` that commits first (not a blind append: it read the table)."""
    dlog = DeltaLog(root)
    txn = Transaction(dlog, dlog.snapshot(), Operation.merge("t.id = s.id", []))
    txn.read_files([])
    txn.add_files([_add(date, "theirs.parquet")])
    txn.commit()


def test_merges_into_different_partitions_commit_and_the_same_one_conflicts(tmp_path):
    root = str(tmp_path / "t")
    create_table(root, SCHEMA, ["date"])
    narrowed = _merge_into(root, "t.date = '2024-01-01' AND t.id = s.id")
    _merged_elsewhere(root, "2024-01-02")
    assert narrowed.commit() == 2  # past the other MERGE, not run again
    same = _merge_into(root, "t.date = '2024-01-01' AND t.id = s.id")
    _merged_elsewhere(root, "2024-01-01")
    with pytest.raises(ConcurrentAppendException, match=r"partition \{'date': '2024-01-01'\}"):
        same.commit()
    whole = _merge_into(root, "t.id = s.id")
    _merged_elsewhere(root, "2024-01-02")
    with pytest.raises(ConcurrentAppendException):
        whole.commit()
