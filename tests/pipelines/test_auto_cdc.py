"""AUTO CDC as users write it (``dlt.create_auto_cdc_flow``, ``dlt.apply_changes``,
``dp.create_auto_cdc_flow``, SQL ``AUTO CDC INTO`` / ``APPLY CHANGES INTO``), checked
against the exact tables of the known system's documented example (users 123-126) and
against late events arriving in later updates."""

from __future__ import annotations

import pytest

from headwater.errors import PipelineDefinitionError
from tests.pipelines.auto_cdc_cases import (
    EXAMPLE,
    SCD1,
    SCD2,
    SCD2_CITY_UNTRACKED,
    USERS,
    cdc,
    ordered,
    progress,
    target,
)

# A whole file of pipeline updates (minutes in CI): with the crash and benchmark files, it
# runs in one of the three parts scripts/test.sh takes in turn, a part per commit.
pytestmark = pytest.mark.slow


def test_documented_example_scd1(project):
    project.source("p.py", cdc(1))
    project.land("1.json", EXAMPLE, folder="users")
    result = project.run()
    assert result.ok, result.failed()
    assert target(project) == ordered(SCD1)
    assert project.spark.table(f"{project.database}.target").columns == ["userId", "name", "city"]
    metrics = progress(result)
    assert metrics["num_upserted_rows"] == 3 and metrics["num_deleted_rows"] == 0


def test_documented_example_scd2(project):
    project.source("p.py", cdc(2, call="apply_changes"))
    project.land("1.json", EXAMPLE, folder="users")
    result = project.run()
    assert result.ok, result.failed()
    assert target(project) == ordered(SCD2)


def test_documented_example_scd2_with_untracked_city(project):
    project.source("p.py", cdc(2, 'track_history_except_column_list=["city"],'))
    project.land("1.json", EXAMPLE, folder="users")
    result = project.run()
    assert result.ok, result.failed()
    assert target(project) == ordered(SCD2_CITY_UNTRACKED)


SQL_FORMS = {
    "auto_cdc": """
CREATE OR REFRESH STREAMING TABLE target;
CREATE FLOW users_cdc AS AUTO CDC INTO target
FROM STREAM(users)
KEYS (userId)
APPLY AS DELETE WHEN operation = "DELETE"
SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation, sequenceNum)
STORED AS SCD TYPE {scd};
""",
    "apply_changes": """
CREATE OR REFRESH STREAMING TABLE target;
APPLY CHANGES INTO LIVE.target
FROM STREAM(LIVE.users)
KEYS (userId)
APPLY AS DELETE WHEN operation = "DELETE"
SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation, sequenceNum)
STORED AS SCD TYPE {scd};
""",
}


SQL_FORMS["track_history"] = """
CREATE OR REFRESH STREAMING TABLE target;
CREATE FLOW users_cdc AS AUTO CDC INTO target FROM STREAM(users) KEYS (userId)
APPLY AS DELETE WHEN operation = "DELETE" SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation, sequenceNum) STORED AS SCD TYPE {scd}
TRACK HISTORY ON * EXCEPT (city);
"""
SQL_FORMS["scd1_columns_nulls_truncate"] = """
CREATE OR REFRESH STREAMING TABLE target;
APPLY CHANGES INTO LIVE.target FROM STREAM(LIVE.users) WHERE userId <> 126 OR userId IS NULL
KEYS (userId) IGNORE NULL UPDATES
APPLY AS DELETE WHEN operation = "DELETE" APPLY AS TRUNCATE WHEN operation = "TRUNCATE"
SEQUENCE BY sequenceNum COLUMNS userId, city;
"""
SQL_EXPECTED = {
    "auto_cdc": SCD2,
    "apply_changes": SCD2,
    "track_history": SCD2_CITY_UNTRACKED,
    # 126 filtered out; a null city keeps the old one; the truncate at 3 empties the
    # table, then the events after it apply (123's delete at 6 wins over 5)
    "scd1_columns_nulls_truncate": [(124, "Oaxaca"), (125, "Guadalajara")],
}


@pytest.mark.parametrize("form", sorted(SQL_FORMS))
def test_sql_forms(project, form):
    project.source("users.py", USERS)
    project.source("cdc.sql", SQL_FORMS[form].format(scd=2))
    events = EXAMPLE
    if form == "scd1_columns_nulls_truncate":
        null_city = {"userId": 124, "name": "Raul", "city": None, "operation": "UPDATE"}
        truncate = {"userId": None, "name": None, "city": None, "operation": "TRUNCATE"}
        events = [
            *EXAMPLE,
            {**truncate, "sequenceNum": 3},
            {**EXAMPLE[0], "sequenceNum": 4},
            {**null_city, "sequenceNum": 7},
        ]
    project.land("1.json", events, folder="users")
    result = project.run()
    assert result.ok, result.failed()
    assert target(project) == ordered(SQL_EXPECTED[form])


def test_sdp_create_auto_cdc_flow(project):
    project.source("users.py", USERS)
    project.source(
        "cdc.py",
        """
from pyspark import pipelines as dp

dp.create_streaming_table("target")
dp.create_auto_cdc_flow(
    target="target", source="users", keys=["userId"], sequence_by="sequenceNum",
    apply_as_deletes="operation = 'DELETE'", except_column_list=["operation", "sequenceNum"],
    stored_as_scd_type=1,
)
""",
    )
    project.land("1.json", EXAMPLE, folder="users")
    result = project.run()
    assert result.ok, result.failed()
    assert target(project) == ordered(SCD1)


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        ('keys=["nope"], sequence_by="sequenceNum"', "PIPELINE_AUTO_CDC_UNKNOWN_COLUMN"),
        ('keys=["userId"], sequence_by="nope + 1"', "PIPELINE_AUTO_CDC_INVALID"),
        (
            'keys=["userId"], sequence_by="sequenceNum", track_history_column_list=["city"]',
            "PIPELINE_AUTO_CDC_INVALID",
        ),
    ],
)
def test_bad_arguments_are_named_errors_before_anything_runs(project, extra, error):
    project.source(
        "p.py",
        USERS
        + f"""
dlt.create_streaming_table("target")
dlt.create_auto_cdc_flow(target="target", source="users", {extra})
""",
    )
    with pytest.raises(PipelineDefinitionError, match=error):
        project.run()


def test_null_sequence_value_is_a_named_error(project):
    project.source("p.py", cdc(1))
    project.land("1.json", [{**EXAMPLE[0], "sequenceNum": None}], folder="users")
    result = project.run()
    assert not result.ok
    assert "PIPELINE_AUTO_CDC_NULL_SEQUENCE" in str(result.failed()[0].error)


def test_downstream_reads_the_target_in_batch_and_as_a_stream_skipping_change_commits(project):
    project.source(
        "p.py",
        cdc(1)
        + """
@dlt.table
def per_city():  # a materialized view over the target
    return spark.read.table("target").groupBy("city").count()


@dlt.table
def inserted():  # a stream of the target's appends; MERGE commits are skipped
    return spark.readStream.option("skipChangeCommits", "true").table("target")
""",
    )
    project.land("1.json", EXAMPLE[:4], folder="users")
    assert project.run().ok
    project.land("2.json", EXAMPLE[4:], folder="users")
    result = project.run()
    assert result.ok, result.failed()
    assert sorted(project.rows("per_city")) == [("Cancun", 1), ("Guadalajara", 1), ("Oaxaca", 1)]
    # the first batch into the empty target only inserted (read); the second rewrote rows
    # (a change commit, skipped)
    assert sorted(r[0] for r in project.rows("inserted")) == [123, 124, 125, 126]


def test_full_refresh_rebuilds_the_target_from_the_source(project):
    project.source("p.py", cdc(2))
    project.land("1.json", EXAMPLE, folder="users")
    assert project.run().ok
    result = project.run(full_refresh=["target"])
    assert result.ok, result.failed()
    assert target(project) == ordered(SCD2)


def test_sequence_by_a_struct_orders_by_its_fields(project):
    project.source(
        "p.py",
        USERS
        + """
from pyspark.sql.functions import struct

dlt.create_streaming_table("target")
dlt.create_auto_cdc_flow(
    target="target", source="users", keys=["userId"],
    sequence_by=struct("sequenceNum", "city"), except_column_list=["operation"],
    stored_as_scd_type=1,
)
""",
    )
    rows = [
        {"userId": 1, "name": "a", "city": "b", "operation": "U", "sequenceNum": 1},
        {"userId": 1, "name": "b", "city": "c", "operation": "U", "sequenceNum": 1},  # wins
        {"userId": 1, "name": "c", "city": "a", "operation": "U", "sequenceNum": 1},
    ]
    project.land("1.json", rows, folder="users")
    assert project.run().ok
    assert target(project) == [(1, "b", "c", 1)]


def test_null_key_is_a_named_error(project):
    project.source("p.py", cdc(1))
    project.land("1.json", [{**EXAMPLE[0], "userId": None}], folder="users")
    result = project.run()
    assert not result.ok
    assert "PIPELINE_AUTO_CDC_NULL_KEY" in str(result.failed()[0].error)
