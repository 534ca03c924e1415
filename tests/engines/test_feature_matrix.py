"""Tables shared both ways, the rest of the feature matrix: liquid clustering, identity,
generated and default columns, CHECK and NOT NULL constraints, type widening and column
mapping by id (the features headwater's engine writes), then v2 checkpoints, row tracking
and in-commit timestamps (features it reads but does not write:
test_feature_matrix_read_only.py).

Each test runs in both directions (``pair``): the first engine creates the table with the
feature on and writes it, the other reads it (the same schema and rows), writes to it (an
append and the DML where the feature matters), and the first reads the result back. The
log is checked too, so a test cannot pass by an engine quietly dropping the feature. One
table per feature and direction, peer calls batched, to keep the tier's time modest.
"""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest

from tests.engines.peer import Peer, PeerError
from tests.engines.test_shared_tables import assert_same_table, log_actions, table

# How each engine names a rejected row: its error class, then what the message says.
VIOLATION = {
    "headwater": "ConstraintViolationError",
    "delta-spark": "org.apache.spark.sql.delta.schema.DeltaInvariantViolationException",
}


def latest(path: str) -> int:
    """The table's newest version, from its log's commit files."""
    return max(int(p.name.split(".")[0]) for p in Path(path, "_delta_log").glob("*.json"))


def refused(peer: Peer, path: str, statement: str, *markers: str) -> PeerError:
    """``statement`` fails on ``peer`` with an error naming one of ``markers``, and the
    table's log gained no version."""
    before = latest(path)
    with pytest.raises(PeerError) as caught:
        peer.sql(statement)
    text = " ".join([*caught.value.kinds, caught.value.message])
    assert any(m in text for m in markers), f"{peer} failed otherwise: {caught.value}"
    assert latest(path) == before, f"{peer} committed a version despite the error"
    return caught.value


def violation(peer: Peer, path: str, statement: str, says: str) -> None:
    """``statement`` breaks a constraint: ``peer`` refuses it with its named error, whose
    message ``says`` which, and commits nothing."""
    error = refused(peer, path, statement, says)
    assert named(error, VIOLATION[peer.name]), error


def named(error: PeerError, kind: str) -> bool:
    """Whether the engine raised ``kind``: its class, or, as headwater's SQL reports the
    error of a statement, the class its message starts from."""
    return kind in error.kinds or f"] {kind}: " in error.message


def insert(path: str, columns: str, select: str) -> str:
    return f"INSERT INTO {table(path)} ({columns}) {select}"


def metadata(path: str) -> dict:
    return [a["metaData"] for a in log_actions(path) if "metaData" in a][-1]


def fields(path: str) -> dict[str, dict]:
    return {f["name"]: f for f in json.loads(metadata(path)["schemaString"])["fields"]}


def features(path: str) -> set[str]:
    protocol = [a["protocol"] for a in log_actions(path) if "protocol" in a][-1]
    return set(protocol.get("writerFeatures") or [])


# Liquid clustering.


def detail(spark, path: str) -> tuple:
    found = spark.sql(f"DESCRIBE DETAIL {table(path)}").collect()[0]
    return tuple(found["clusteringColumns"]), found["numFiles"]


def test_liquid_clustering(pair, tmp_path):
    first, second = pair
    path = str(tmp_path / "t")
    rows = "SELECT id, CAST(id % 7 AS INT) AS k, concat('v', id) AS v FROM range({}, {})"
    first.sql(
        f"CREATE TABLE {table(path)} (id BIGINT, k INT, v STRING) USING DELTA CLUSTER BY (k)",
        insert(path, "id, k, v", rows.format(0, 40)),
        insert(path, "id, k, v", rows.format(40, 60)),
    )
    assert_same_table(first, second, path)
    second.sql(
        insert(path, "id, k, v", rows.format(60, 80)),
        f"UPDATE {table(path)} SET v = 'updated' WHERE id % 5 = 0",
        f"OPTIMIZE {table(path)}",
    )
    first.sql(insert(path, "id, k, v", rows.format(80, 90)))
    found = assert_same_table(second, first, path)
    assert sorted(r[0] for r in found) == list(range(90))
    assert {r[2] for r in found if r[0] % 5 == 0 and r[0] < 80} == {"updated"}
    # Both see the table clustered by k; the OPTIMIZE clustered it into one file.
    assert first.call(detail, path)[0] == second.call(detail, path)[0] == ("k",)
    domains = [a["domainMetadata"] for a in log_actions(path) if "domainMetadata" in a]
    assert json.loads(domains[-1]["configuration"])["clusteringColumns"] == [["k"]]
    assert {"clustering", "domainMetadata"} <= features(path)
    assert_same_table(first, second, path, versionAsOf=2)  # before the other engine's OPTIMIZE


# Identity columns.


def test_identity_values_keep_increasing_across_engines(pair, tmp_path):
    first, second = pair
    path = str(tmp_path / "t")
    rows = "SELECT id AS v FROM range({}, {})"
    first.sql(
        f"CREATE TABLE {table(path)} (id BIGINT GENERATED ALWAYS AS IDENTITY "
        "(START WITH 1 INCREMENT BY 1), v BIGINT) USING DELTA",
        insert(path, "v", rows.format(0, 10)),
    )
    assert_same_table(first, second, path)
    merge = (
        f"MERGE INTO {table(path)} t USING ({rows.format(15, 25)}) s ON t.v = s.v "
        "WHEN NOT MATCHED THEN INSERT (v) VALUES (s.v)"
    )
    second.sql(insert(path, "v", rows.format(10, 20)), merge)
    first.sql(insert(path, "v", rows.format(25, 30)))
    second.sql(insert(path, "v", rows.format(30, 35)))
    for peer in (first, second):  # an explicit value is refused by both engines
        refused(
            peer,
            path,
            f"INSERT INTO {table(path)} VALUES (1000, 1000)",
            "DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED",
        )
    found = assert_same_table(second, first, path)
    assert sorted(r[1] for r in found) == list(range(35))
    by_v = dict((v, i) for i, v in found)
    assert len(set(by_v.values())) == 35, "an identity value was given twice"
    # Each commit's values lie above every earlier commit's: the high-water mark is shared.
    batches = [range(0, 10), range(10, 20), range(20, 25), range(25, 30), range(30, 35)]
    for earlier, later in pairwise(batches):
        assert max(by_v[v] for v in earlier) < min(by_v[v] for v in later)
    high = fields(path)["id"]["metadata"]["delta.identity.highWaterMark"]
    assert high >= max(by_v.values())


# Generated columns.


def test_generated_columns_are_computed_by_either_engine(pair, tmp_path):
    first, second = pair
    path = str(tmp_path / "t")
    rows = "SELECT id, id * 3 AS v FROM range({}, {})"
    first.sql(
        f"CREATE TABLE {table(path)} (id BIGINT, v BIGINT, "
        "g BIGINT GENERATED ALWAYS AS (v * 2)) USING DELTA",
        insert(path, "id, v", rows.format(0, 10)),
    )
    assert_same_table(first, second, path)
    second.sql(
        insert(path, "id, v", rows.format(10, 20)),
        f"UPDATE {table(path)} SET v = v + 100 WHERE id % 3 = 0",
    )
    for peer in (first, second):  # a value that contradicts the expression is refused
        violation(
            peer, path, f"INSERT INTO {table(path)} VALUES (99, 1, 5)", "CHECK constraint Generated"
        )
    first.sql(insert(path, "id, v", rows.format(20, 25)))
    found = assert_same_table(second, first, path)
    assert sorted(r[0] for r in found) == list(range(25))
    assert all(g == v * 2 for _, v, g in found)
    assert {v for i, v, _ in found if i % 3 == 0 and i < 20} == {
        i * 3 + 100 for i in range(0, 20, 3)
    }
    assert fields(path)["g"]["metadata"]["delta.generationExpression"] == "v * 2"


# Default columns.


def test_default_columns_fill_what_a_write_leaves_out(pair, tmp_path):
    first, second = pair
    path = str(tmp_path / "t")
    first.sql(
        f"CREATE TABLE {table(path)} (id BIGINT, c STRING DEFAULT 'dflt', n INT DEFAULT 7) "
        "USING DELTA TBLPROPERTIES ('delta.feature.allowColumnDefaults' = 'supported')",
        insert(path, "id", "SELECT id FROM range(0, 3)"),
    )
    assert_same_table(first, second, path)
    second.sql(
        insert(path, "id", "SELECT id FROM range(3, 5)"),
        insert(path, "id, c", "VALUES (5, 'given')"),
        f"MERGE INTO {table(path)} t USING (SELECT 6 AS id) s ON t.id = s.id "
        "WHEN NOT MATCHED THEN INSERT (id) VALUES (s.id)",
    )
    first.sql(insert(path, "id, n", "VALUES (7, 70)"))
    found = assert_same_table(second, first, path)
    assert sorted(found) == [(i, "dflt", 7) for i in range(5)] + [
        (5, "given", 7),
        (6, "dflt", 7),
        (7, "dflt", 70),
    ]
    assert "allowColumnDefaults" in features(path)
    assert fields(path)["c"]["metadata"]["CURRENT_DEFAULT"] == "'dflt'"


# CHECK and NOT NULL constraints.


def same_but_nullability(first: Peer, second: Peer, path: str) -> list[tuple]:
    """Both engines read the same columns, types and rows. Nullability differs: delta-spark's
    reader gives every column as nullable, headwater's a NOT NULL column as not null."""
    (schema, rows), (other_schema, other_rows) = first.read(path), second.read(path)
    assert [c[:2] for c in other_schema] == [c[:2] for c in schema]
    assert sorted(other_rows) == sorted(rows)
    return sorted(rows)


def test_constraints_are_enforced_by_both_engines(pair, tmp_path):
    first, second = pair
    path = str(tmp_path / "t")
    rows = "SELECT id, CAST(id + 1 AS INT) AS v FROM range({}, {})"
    first.sql(
        f"CREATE TABLE {table(path)} (id BIGINT NOT NULL, v INT) USING DELTA",
        f"ALTER TABLE {table(path)} ADD CONSTRAINT positive CHECK (v > 0)",
        insert(path, "id, v", rows.format(0, 10)),
    )
    same_but_nullability(first, second, path)
    second.sql(
        insert(path, "id, v", rows.format(10, 20)),
        f"UPDATE {table(path)} SET v = v * 10 WHERE id % 4 = 0",
    )
    for peer in (second, first):
        check = "CHECK constraint positive (v > 0) violated"
        violation(peer, path, f"INSERT INTO {table(path)} VALUES (100, -1)", check)
        violation(peer, path, f"INSERT INTO {table(path)} VALUES (NULL, 1)", "NOT NULL")
        violation(peer, path, f"UPDATE {table(path)} SET v = -v WHERE id = 3", check)
        merge = "USING (SELECT 3 AS id) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = 0"
        violation(peer, path, f"MERGE INTO {table(path)} t {merge}", check)
    first.sql(insert(path, "id, v", rows.format(20, 25)))
    found = same_but_nullability(second, first, path)
    assert sorted(found) == [(i, (i + 1) * (10 if i % 4 == 0 and i < 20 else 1)) for i in range(25)]
    assert metadata(path)["configuration"]["delta.constraints.positive"] == "v > 0"
    assert fields(path)["id"]["nullable"] is False


# Type widening.


def test_widened_columns_read_with_the_wide_type(pair, tmp_path):
    first, second = pair
    path = str(tmp_path / "t")
    first.sql(
        f"CREATE TABLE {table(path)} (id BIGINT, s SMALLINT, i INT) USING DELTA "
        "TBLPROPERTIES ('delta.enableTypeWidening' = 'true')",
        insert(path, "id, s, i", "SELECT id, CAST(id AS SMALLINT), CAST(id AS INT) FROM range(5)"),
        f"ALTER TABLE {table(path)} ALTER COLUMN s TYPE INT",
        insert(path, "id, s, i", "VALUES (5, 100000, 5)"),
    )
    schema, _ = second.read(path)
    assert schema[1] == ("s", "int", True)
    assert_same_table(first, second, path)
    second.sql(
        insert(path, "id, s, i", "VALUES (6, 200000, 6)"),
        f"ALTER TABLE {table(path)} ALTER COLUMN i TYPE BIGINT",
        insert(path, "id, s, i", "VALUES (7, 7, 1099511627776)"),
        f"UPDATE {table(path)} SET i = i + 4294967296 WHERE id = 1",
    )
    first.sql(insert(path, "id, s, i", "VALUES (8, 300000, 8)"))
    found = assert_same_table(second, first, path)
    assert first.read(path)[0][1:] == [("s", "int", True), ("i", "bigint", True)]
    assert sorted(found)[:2] == [(0, 0, 0), (1, 1, 4294967297)]
    assert {r[1] for r in found} >= {100000, 200000, 300000}
    changes = {name: f["metadata"].get("delta.typeChanges") for name, f in fields(path).items()}
    assert changes["s"] == [{"fromType": "short", "toType": "integer"}]
    assert changes["i"] == [{"fromType": "integer", "toType": "long"}]
    for version in (1, 4):  # before each widening, read with the type of the time
        assert_same_table(first, second, path, versionAsOf=version)


# Column mapping by id.


def test_column_mapping_by_id(pair, tmp_path):
    first, second = pair
    path = str(tmp_path / "t")
    rows = "SELECT id, concat('n', id) AS name, named_struct('a', id) AS st FROM range({}, {})"
    first.sql(
        f"CREATE TABLE {table(path)} (id BIGINT, name STRING, st STRUCT<a: BIGINT>) "
        "USING DELTA TBLPROPERTIES ('delta.columnMapping.mode' = 'id')",
        insert(path, "id, name, st", rows.format(0, 10)),
    )
    assert_same_table(first, second, path)
    second.sql(
        insert(path, "id, name, st", rows.format(10, 20)),
        f"DELETE FROM {table(path)} WHERE id % 4 = 1",
        f"UPDATE {table(path)} SET name = 'updated' WHERE id % 4 = 2",
    )
    first.sql(insert(path, "id, name, st", rows.format(20, 25)))
    found = assert_same_table(second, first, path)
    assert sorted(r[0] for r in found) == [i for i in range(25) if i >= 20 or i % 4 != 1]
    assert metadata(path)["configuration"]["delta.columnMapping.mode"] == "id"
    assert all("delta.columnMapping.id" in f["metadata"] for f in fields(path).values())
    assert_same_table(first, second, path, versionAsOf=3)  # between the other's DELETE and UPDATE
