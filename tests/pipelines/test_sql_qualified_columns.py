"""Columns qualified by their table's name in pipeline SQL (``weekly_stats.week`` after
``FROM LIVE.weekly_stats``, ``LIVE.x.col``, ``db.x.col``), as the known platform's tutorials
write them: the view a read becomes keeps the names the query qualifies its columns with,
in SQL files and in ``spark.sql`` inside Python definitions."""

from __future__ import annotations

from pipeline_rows import RAW_TABLE, orders

from headwater.pipelines.sql_files.queries import parse_query


def rendered(text: str) -> str:
    query = parse_query(text, "f.sql")
    return query.render({ref: f"v_{ref.name.replace('.', '_')}" for ref in query.references})


def test_a_read_without_alias_is_aliased_as_its_name():
    assert rendered(
        "SELECT weekly_stats.week, flagged_rides.n FROM LIVE.flagged_rides "
        "LEFT JOIN LIVE.weekly_stats ON weekly_stats.week = flagged_rides.week"
    ) == (
        "SELECT weekly_stats.week, flagged_rides.n FROM v_flagged_rides AS flagged_rides "
        "LEFT JOIN v_weekly_stats AS weekly_stats ON weekly_stats.week = flagged_rides.week"
    )


def test_live_and_database_qualified_columns_become_table_qualified():
    assert rendered("SELECT LIVE.a.x, db.b.y, b.z FROM LIVE.a JOIN db.b ON a.k = db.b.k") == (
        "SELECT a.x, b.y, b.z FROM v_a AS a JOIN v_db_b AS b ON a.k = b.k"
    )


def test_the_pipeline_database_qualifies_a_live_read():
    query = parse_query("SELECT sales.t.x FROM LIVE.t", "f.sql")
    assert query.render({query.references[0]: "v"}, "Sales") == "SELECT t.x FROM v AS t"


def test_a_given_alias_is_kept_and_no_other_is_added():
    assert rendered("SELECT o.id FROM STREAM(LIVE.orders) o JOIN STREAM c ON o.c = c.id") == (
        "SELECT o.id FROM v_orders AS o JOIN v_c AS c ON o.c = c.id"
    )


def test_a_struct_column_of_another_name_is_left_alone():
    assert rendered("SELECT s.inner.leaf FROM LIVE.t") == ("SELECT s.inner.leaf FROM v_t AS t")


def qualified_sql(database: str) -> str:
    return f"""
    CREATE OR REFRESH MATERIALIZED VIEW flagged_rides
    AS SELECT id, region, amount > 20 AS big FROM LIVE.raw;

    CREATE OR REFRESH MATERIALIZED VIEW weekly_stats
    AS SELECT region, max(amount) AS top FROM raw GROUP BY region;

    CREATE OR REFRESH MATERIALIZED VIEW tutorial
    AS SELECT weekly_stats.region, flagged_rides.id, LIVE.weekly_stats.top, flagged_rides.big
       FROM LIVE.flagged_rides
       LEFT JOIN LIVE.weekly_stats ON weekly_stats.region = flagged_rides.region;

    CREATE OR REFRESH MATERIALIZED VIEW plain_join
    AS SELECT flagged_rides.id, weekly_stats.top
       FROM flagged_rides JOIN weekly_stats ON flagged_rides.region = weekly_stats.region;

    CREATE OR REFRESH MATERIALIZED VIEW by_database
    AS SELECT {database}.weekly_stats.top, w.region
       FROM {database}.weekly_stats JOIN weekly_stats w ON w.region = weekly_stats.region;
    """


def test_sql_files_qualify_columns_by_table_name(project):
    project.source("a_raw.py", RAW_TABLE)
    project.source("b_gold.sql", qualified_sql(project.database))
    project.land("1.json", orders(0, 3) + orders(5, 1, "us"))
    result = project.run()
    assert result.ok, result.failed()
    assert project.rows("tutorial", "id") == [
        ("eu", 0, 20, False),
        ("eu", 1, 20, False),
        ("eu", 2, 20, False),
        ("us", 5, 50, True),
    ]
    assert project.rows("plain_join", "id") == [(0, 20), (1, 20), (2, 20), (5, 50)]
    assert project.rows("by_database", "region") == [(20, "eu"), (50, "us")]


def test_spark_sql_in_python_qualifies_columns_by_table_name(project):
    database = project.database
    project.source(
        "defs.py",
        RAW_TABLE
        + f"""
@dp.materialized_view
def weekly_stats():
    return spark.sql("SELECT region, max(amount) AS top FROM raw GROUP BY region")

@dp.materialized_view
def tutorial():
    return spark.sql(
        "SELECT weekly_stats.region, raw.id, LIVE.weekly_stats.top, {database}.raw.amount "
        "FROM LIVE.raw LEFT JOIN {database}.weekly_stats ON weekly_stats.region = raw.region"
    )

@dp.materialized_view
def plain_join():
    return spark.sql(
        "SELECT raw.id, weekly_stats.top FROM raw JOIN weekly_stats "
        "ON raw.region = weekly_stats.region"
    )
""",
    )
    project.land("1.json", orders(0, 2) + orders(5, 1, "us"))
    result = project.run()
    assert result.ok, result.failed()
    assert project.rows("tutorial", "id") == [
        ("eu", 0, 10, 0),
        ("eu", 1, 10, 10),
        ("us", 5, 50, 50),
    ]
    assert project.rows("plain_join", "id") == [(0, 10), (1, 10), (5, 50)]
