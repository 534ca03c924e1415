"""AUTO CDC with ``unavailable_columns``: an event that does not carry some columns (a
database's TOASTed values Debezium leaves out of an update) keeps their value from before
it, in SCD1 and SCD2, across batches and within one, and in the SQL form."""

from __future__ import annotations

import pytest

from headwater.errors import PipelineDefinitionError
from tests.pipelines.auto_cdc_cases import ordered, target

# A whole file of pipeline updates (minutes in CI): with the crash and benchmark files, it
# runs in one of the three parts scripts/test.sh takes in turn, a part per commit.
pytestmark = pytest.mark.slow

PEOPLE = """
import dlt


@dlt.table
def people():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .schema("id bigint, name string, bio string, op string, seq bigint, "
                "_unavailable array<string>")
        .load(spark.conf.get("source_dir") + "/people")
    )
"""


def flow(scd: int, extra: str = "") -> str:
    return (
        PEOPLE
        + f"""
dlt.create_streaming_table("target")
dlt.apply_changes(
    target="target", source="people", keys=["id"], sequence_by="seq",
    apply_as_deletes="op = 'd'", except_column_list=["op", "seq"],
    stored_as_scd_type={scd}, unavailable_columns="_unavailable", {extra}
)
"""
    )


def event(id_, seq, name=None, bio=None, lacks=(), op="u"):
    return {"id": id_, "name": name, "bio": bio, "op": op, "seq": seq, "_unavailable": [*lacks]}


def test_scd1_keeps_the_values_an_update_does_not_carry(project):
    project.source("p.py", flow(1))
    project.land("1.json", [event(1, 1, "Ana", "long bio"), event(2, 1, "Bo", "bio B")], "people")
    assert project.run().ok
    assert project.spark.table(f"{project.database}.target").columns == ["id", "name", "bio"]
    project.land(
        "2.json",
        [
            event(1, 3, "Anna", lacks=["bio"]),  # both lack bio: it carries through them
            event(1, 2, "Ann", lacks=["bio"]),
            event(2, 2, "Bob", "bio B2"),
            event(2, 3, "Bobby", lacks=["BIO"]),  # the batch's own older value, any case
            event(3, 1, "Cy", "bio C"),  # inserted and updated in one batch
            event(3, 2, "Cyd", lacks=["bio"]),
            event(4, 1, "Di", "bio D"),
            event(4, 2, op="d"),  # deleted, then back without its bio: none to keep
            event(4, 3, "Dee", lacks=["bio"]),
            event(5, 1, "Ed", lacks=["bio"]),  # new, and never had one
        ],
        "people",
    )
    assert project.run().ok
    assert target(project) == ordered(
        [
            (1, "Anna", "long bio"),
            (2, "Bobby", "bio B2"),
            (3, "Cyd", "bio C"),
            (4, "Dee", None),
            (5, "Ed", None),
        ]
    )


def test_scd1_with_ignore_null_updates_treats_an_unavailable_value_as_unchanged(project):
    project.source("p.py", flow(1, "ignore_null_updates=True"))
    project.land("1.json", [event(1, 1, "Ana", "long bio")], "people")
    assert project.run().ok
    project.land("2.json", [event(1, 2, None, "x", lacks=["bio"])], "people")
    assert project.run().ok
    assert target(project) == [(1, "Ana", "long bio")]


def test_scd2_opens_no_version_for_unavailable_columns_and_rebuilds_with_late_events(project):
    project.source("p.py", flow(2))
    project.land("1.json", [event(1, 10, "Ana", "bio 1")], "people")
    assert project.run().ok
    project.land(
        "2.json",
        [event(1, 20, "Ana", lacks=["bio"]), event(1, 30, "Ann", lacks=["bio"])],
        "people",
    )
    assert project.run().ok
    # 20 differs only by its unavailable bio: no version; 30 keeps bio 1
    assert target(project) == ordered([(1, "Ana", "bio 1", 10, 30), (1, "Ann", "bio 1", 30, None)])
    project.land("3.json", [event(1, 25, "Ann", "bio 2")], "people")  # late, before 30
    assert project.run().ok
    # 30 now carries 25's bio forward: it changes nothing, so it opens no version
    assert target(project) == ordered([(1, "Ana", "bio 1", 10, 25), (1, "Ann", "bio 2", 25, None)])


def test_sql_form(project):
    project.source("people.py", PEOPLE)
    project.source(
        "cdc.sql",
        """
CREATE OR REFRESH STREAMING TABLE target;
CREATE FLOW f AS AUTO CDC INTO target FROM STREAM(people) KEYS (id)
APPLY AS DELETE WHEN op = 'd' SEQUENCE BY seq COLUMNS * EXCEPT (op, seq)
UNAVAILABLE COLUMNS IN _unavailable STORED AS SCD TYPE 1;
""",
    )
    project.land("1.json", [event(1, 1, "Ana", "long bio")], "people")
    project.land("2.json", [event(1, 2, "Ann", lacks=["bio"])], "people")
    assert project.run().ok
    assert target(project) == [(1, "Ann", "long bio")]


def test_a_column_that_is_not_an_array_of_names_is_a_named_error(project):
    project.source(
        "p.py", flow(1).replace('unavailable_columns="_unavailable"', 'unavailable_columns="bio"')
    )
    with pytest.raises(PipelineDefinitionError, match="must be an ARRAY<STRING>"):
        project.run()
