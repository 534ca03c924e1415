"""Pipeline SQL files parse into datasets, flows and AUTO CDC flows without Spark: every
statement form DLT users write, the reads of their queries, and errors that name the file,
the line and the column."""

from __future__ import annotations

import textwrap

import pytest

from headwater.errors import PipelineDefinitionError
from headwater.pipelines.define.elements import Expectation, Origin
from headwater.pipelines.sql_files.definitions import (
    FileSource,
    Reference,
    SqlDefinitions,
    parse_query,
    parse_sql_file,
)


def parse(text: str, configuration: dict[str, str] | None = None) -> SqlDefinitions:
    return parse_sql_file(textwrap.dedent(text), "pipeline.sql", configuration or {})


def fails(text: str, error_class: str, line: int, configuration=None) -> PipelineDefinitionError:
    with pytest.raises(PipelineDefinitionError) as e:
        parse(text, configuration)
    assert e.value.error_class == error_class, str(e.value)
    assert e.value.file == "pipeline.sql", str(e.value)
    assert e.value.line == line, str(e.value)
    assert f"pipeline.sql:{line}:" in str(e.value)
    return e.value


def one_dataset(text: str):
    parsed = parse(text)
    assert len(parsed.datasets) == 1 and not parsed.flows and not parsed.auto_cdc
    return parsed.datasets[0]


# -- statement forms ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "head",
    [
        "CREATE OR REFRESH STREAMING TABLE",
        "CREATE STREAMING TABLE",
        "create or refresh streaming table",
        "CREATE STREAMING LIVE TABLE",
        "CREATE OR REFRESH STREAMING LIVE TABLE",
        "CREATE INCREMENTAL LIVE TABLE",
        "CREATE OR REFRESH INCREMENTAL LIVE TABLE",
    ],
)
def test_streaming_table_forms_declare_a_streaming_table(head):
    item = one_dataset(f"{head} orders AS SELECT * FROM STREAM(raw)")
    assert item.dataset.name == "orders"
    assert item.dataset.kind == "streaming_table"
    assert item.query is not None
    assert item.query.references == (Reference("raw", streaming=True),)


@pytest.mark.parametrize(
    "head",
    [
        "CREATE OR REFRESH MATERIALIZED VIEW",
        "CREATE MATERIALIZED VIEW",
        "CREATE LIVE TABLE",
        "CREATE OR REFRESH LIVE TABLE",
    ],
)
def test_materialized_view_forms_declare_a_materialized_view(head):
    item = one_dataset(f"{head} daily AS SELECT region, count(*) AS n FROM orders GROUP BY region")
    assert item.dataset.kind == "materialized_view"
    assert item.query is not None and item.query.references == (Reference("orders"),)


def test_the_keyword_decides_the_kind_not_the_query():
    item = one_dataset("CREATE LIVE TABLE t AS SELECT * FROM STREAM(LIVE.s)")
    assert item.dataset.kind == "materialized_view"


@pytest.mark.parametrize(
    "head",
    [
        "CREATE TEMPORARY VIEW",
        "CREATE OR REPLACE TEMPORARY VIEW",
        "CREATE TEMPORARY LIVE VIEW",
        "CREATE TEMPORARY STREAMING LIVE VIEW",
        "CREATE LIVE VIEW",
    ],
)
def test_temporary_view_forms_declare_a_temporary_view(head):
    item = one_dataset(f"{head} v AS SELECT * FROM t")
    assert item.dataset.kind == "temporary_view"
    assert not item.dataset.persisted


@pytest.mark.parametrize(
    "head", ["CREATE PRIVATE MATERIALIZED VIEW", "CREATE TEMPORARY LIVE TABLE"]
)
def test_private_and_older_temporary_tables_are_private_datasets(head):
    item = one_dataset(f"{head} p AS SELECT 1 AS x")
    assert item.dataset.kind == "materialized_view"
    assert item.dataset.private


def test_a_streaming_table_without_a_query_is_fed_only_by_flows():
    item = one_dataset("CREATE OR REFRESH STREAMING TABLE target")
    assert item.query is None
    assert item.dataset.kind == "streaming_table"


def test_names_may_be_qualified_backquoted_and_live_prefixed():
    parsed = parse(
        """
        CREATE STREAMING TABLE LIVE.a AS SELECT 1 AS x;
        CREATE STREAMING TABLE db.b AS SELECT 1 AS x;
        CREATE STREAMING TABLE `cat`.db.`my table` AS SELECT 1 AS x;
        CREATE STREAMING TABLE live.db.c AS SELECT 1 AS x;
        """
    )
    # One spelling per name: backquotes stay only where a part needs them (a space).
    assert [d.name for d in parsed.datasets] == ["a", "db.b", "cat.db.`my table`", "db.c"]


@pytest.mark.parametrize(
    "clauses",
    [
        "COMMENT 'orders' TBLPROPERTIES ({props}) CLUSTER BY (region, day) PARTITIONED BY (day)",
        "PARTITIONED BY (day) CLUSTER BY (region, day) TBLPROPERTIES ({props}) COMMENT 'orders'",
    ],
)
def test_clauses_are_read_in_any_order(clauses):
    props = "'quality' = 'gold', delta.appendOnly = true, 'n' = 5"
    text = f"CREATE STREAMING TABLE t\n{clauses.format(props=props)}\nAS SELECT * FROM STREAM(s)"
    dataset = one_dataset(text).dataset
    assert dataset.comment == "orders"
    assert dataset.table_properties == {"quality": "gold", "delta.appendOnly": "true", "n": "5"}
    assert dataset.partition_cols == ("day",)
    assert dataset.cluster_by == ("region", "day")


def test_a_flow_inserts_into_its_target_by_name():
    parsed = parse(
        """
        CREATE STREAMING TABLE target;
        CREATE FLOW from_eu COMMENT 'eu orders' AS INSERT INTO target BY NAME
          SELECT * FROM STREAM(LIVE.eu);
        """
    )
    (flow,) = parsed.flows
    assert (flow.name, flow.target, flow.once, flow.comment) == (
        "from_eu",
        "target",
        False,
        "eu orders",
    )
    assert flow.origin == Origin("pipeline.sql", 3)
    assert flow.query.references == (Reference("eu", streaming=True, live=True),)
    assert flow.text.startswith("CREATE FLOW from_eu") and flow.text.endswith("STREAM(LIVE.eu)")


def test_insert_into_once_makes_a_once_flow():
    parsed = parse(
        """
        CREATE FLOW backfill AS INSERT INTO ONCE LIVE.target BY NAME SELECT * FROM old;
        CREATE FLOW also AS INSERT ONCE INTO target BY NAME SELECT * FROM old;
        """
    )
    assert [(f.target, f.once) for f in parsed.flows] == [("target", True), ("target", True)]


def test_auto_cdc_reads_every_clause():
    parsed = parse(
        """
        CREATE STREAMING TABLE users;
        CREATE FLOW users_cdc COMMENT 'from the feed' AS AUTO CDC INTO users
        FROM STREAM(LIVE.feed)
        KEYS (userId, `org id`)
        IGNORE NULL UPDATES
        APPLY AS DELETE WHEN operation = 'DELETE'
        APPLY AS TRUNCATE WHEN operation = 'TRUNCATE'
        SEQUENCE BY struct(sequenceNum, ts)
        COLUMNS * EXCEPT (operation, sequenceNum)
        STORED AS SCD TYPE 2
        TRACK HISTORY ON * EXCEPT (city);
        """
    )
    (cdc,) = parsed.auto_cdc
    assert cdc.name == "users_cdc" and cdc.target == "users" and cdc.comment == "from the feed"
    assert (cdc.changes.source, cdc.source_streaming) == ("feed", True)
    assert cdc.changes.keys == ("userId", "org id")
    assert cdc.changes.ignore_null_updates
    assert cdc.changes.apply_as_deletes == "operation = 'DELETE'"
    assert cdc.changes.apply_as_truncates == "operation = 'TRUNCATE'"
    assert cdc.changes.sequence_by == "struct(sequenceNum, ts)"
    assert (cdc.changes.column_list, cdc.changes.except_column_list) == (
        None,
        ("operation", "sequenceNum"),
    )
    assert cdc.changes.scd_type == 2
    assert cdc.changes.track_history_column_list is None
    assert cdc.changes.track_history_except_column_list == ("city",)
    assert cdc.origin == Origin("pipeline.sql", 3)


def test_older_apply_changes_is_named_after_its_target_and_defaults_to_scd1():
    parsed = parse(
        """
        APPLY CHANGES INTO LIVE.users FROM STREAM LIVE.feed WHERE region = 'eu'
        SEQUENCE BY seq KEYS (id) COLUMNS a, b TRACK HISTORY ON (a)
        """
    )
    (cdc,) = parsed.auto_cdc
    assert (cdc.name, cdc.target, cdc.changes.source, cdc.source_streaming) == (
        "users",
        "users",
        "feed",
        True,
    )
    assert cdc.changes.where == "region = 'eu'"
    assert cdc.changes.keys == ("id",) and cdc.changes.sequence_by == "seq"
    assert cdc.changes.scd_type == 1 and not cdc.changes.ignore_null_updates
    assert cdc.changes.apply_as_deletes is None and cdc.changes.apply_as_truncates is None
    assert (cdc.changes.column_list, cdc.changes.except_column_list) == (("a", "b"), None)
    assert cdc.changes.track_history_column_list == ("a",)


def test_auto_cdc_without_sequence_by_is_an_error():
    error = fails("\nAPPLY CHANGES INTO t FROM STREAM(s)\nKEYS (id)", "PIPELINE_SQL_PARSE_ERROR", 3)
    assert "SEQUENCE BY" in str(error)


def test_set_records_conf_and_feeds_later_substitutions():
    parsed = parse(
        """
        SET pipelines.trigger.interval = 10 seconds;
        SET landing='/data/landing';
        SET quoted = "a b";
        CREATE MATERIALIZED VIEW m AS SELECT * FROM read_files('${landing}/orders');
        """
    )
    assert parsed.conf == {
        "pipelines.trigger.interval": "10 seconds",
        "landing": "/data/landing",
        "quoted": "a b",
    }
    assert parsed.datasets[0].query.file_sources[0].path == "/data/landing/orders"


@pytest.mark.parametrize(
    "statement",
    [
        "DROP TABLE x",
        "INSERT INTO t SELECT 1",
        "SELECT 1",
        "CREATE TABLE t AS SELECT 1",
        "CREATE VIEW v AS SELECT 1",
    ],
)
def test_other_statements_are_refused_naming_the_accepted_forms(statement):
    error = fails(
        f"CREATE STREAMING TABLE t;\n\n{statement};", "PIPELINE_SQL_UNSUPPORTED_STATEMENT", 3
    )
    assert statement.split()[0] in str(error)
    assert "CREATE FLOW" in str(error) and "MATERIALIZED VIEW" in str(error)


def test_location_is_refused_because_the_pipeline_manages_storage():
    error = fails(
        "CREATE STREAMING TABLE t\n  LOCATION '/somewhere'\nAS SELECT 1 AS x",
        "PIPELINE_SQL_UNSUPPORTED_CLAUSE",
        2,
    )
    assert "LOCATION" in str(error)


# -- constraints and columns ----------------------------------------------------------------


def test_constraints_become_expectations_with_their_actions_and_columns_a_schema():
    dataset = one_dataset(
        """
        CREATE OR REFRESH STREAMING TABLE orders (
          id BIGINT NOT NULL COMMENT 'the id, unique',
          tags STRUCT<a: MAP<STRING, INT>, b: ARRAY<STRING>>,
          amount DECIMAL(10, 2),
          CONSTRAINT kept EXPECT (amount >= 0),
          CONSTRAINT valid_id EXPECT (id IS NOT NULL) ON VIOLATION DROP ROW,
          CONSTRAINT `valid ts` EXPECT (ts > '2020-01-01') ON VIOLATION FAIL UPDATE,
          CONSTRAINT odd EXPECT (  (id % 2) =  1 ) ON VIOLATION QUARANTINE
        ) AS SELECT * FROM STREAM(raw)
        """
    ).dataset
    assert dataset.expectations == (
        Expectation("kept", "amount >= 0", "warn"),
        Expectation("valid_id", "id IS NOT NULL", "drop"),
        Expectation("valid ts", "ts > '2020-01-01'", "fail"),
        Expectation("odd", "(id % 2) =  1", "quarantine"),
    )
    assert dataset.schema == (
        "id BIGINT NOT NULL COMMENT 'the id, unique', "
        "tags STRUCT<a: MAP<STRING, INT>, b: ARRAY<STRING>>, amount DECIMAL(10, 2)"
    )


def test_a_constraint_list_without_columns_leaves_the_schema_open():
    dataset = one_dataset(
        "CREATE TEMPORARY VIEW v (CONSTRAINT c EXPECT (x > 0)) COMMENT 'checked' AS SELECT 1 AS x"
    ).dataset
    assert dataset.schema is None
    assert dataset.comment == "checked"
    assert dataset.expectations == (Expectation("c", "x > 0"),)


def test_a_duplicate_constraint_name_names_both_lines():
    error = fails(
        """
        CREATE STREAMING TABLE t (
          CONSTRAINT positive EXPECT (x > 0),
          CONSTRAINT other EXPECT (y > 0),
          CONSTRAINT Positive EXPECT (x >= 0)
        )
        """,
        "PIPELINE_DUPLICATE_EXPECTATION",
        5,
    )
    assert "lines 3 and 5" in str(error)


# -- substitution ---------------------------------------------------------------------------


def test_placeholders_take_configuration_values_in_names_and_strings():
    parsed = parse(
        "CREATE MATERIALIZED VIEW m AS SELECT * FROM ${db}.events WHERE kind = '${kind}'",
        {"db": "raw", "kind": "click"},
    )
    query = parsed.datasets[0].query
    assert query.references == (Reference("raw.events"),)
    assert "kind = 'click'" in query.text


def test_an_undefined_placeholder_names_the_key_file_and_line():
    error = fails(
        """
        SET a = 1;
        CREATE MATERIALIZED VIEW m AS
          SELECT * FROM ${missing_db}.t
        """,
        "PIPELINE_UNDEFINED_PARAMETER",
        4,
    )
    assert "missing_db" in str(error)


def test_a_doubled_dollar_keeps_a_literal_placeholder():
    parsed = parse(
        "CREATE MATERIALIZED VIEW m AS SELECT '$${not_a_key}' AS x, '${k}' AS y", {"k": "v"}
    )
    assert parsed.datasets[0].query.text == "SELECT '${not_a_key}' AS x, 'v' AS y"


# -- queries --------------------------------------------------------------------------------


def test_references_cover_stream_forms_live_prefix_joins_and_subqueries():
    query = parse_query(
        """
        SELECT * FROM STREAM(LIVE.orders) o
        JOIN STREAM customers c ON o.cid = c.id
        JOIN LIVE.regions r ON r.id = c.region
        LEFT JOIN cat.db.external e ON e.id = o.id
        WHERE o.id IN (SELECT id FROM (SELECT id FROM LIVE.allowed))
        """,
        "f.sql",
    )
    assert query.references == (
        Reference("orders", streaming=True, live=True),
        Reference("customers", streaming=True),
        Reference("regions", live=True),
        Reference("cat.db.external"),
        Reference("allowed", live=True),
    )


def test_cte_names_are_not_references():
    query = parse_query(
        "WITH recent AS (SELECT * FROM events WHERE ts > now() - INTERVAL 1 DAY) "
        "SELECT * FROM recent JOIN LIVE.recent_users u USING (id)",
        "f.sql",
    )
    assert query.references == (Reference("events"), Reference("recent_users", live=True))


def test_references_are_deduplicated_by_name_and_streaming():
    query = parse_query(
        "SELECT * FROM a JOIN LIVE.a ON 1 = 1 JOIN STREAM(a) ON 1 = 1 UNION ALL SELECT * FROM A",
        "f.sql",
    )
    assert query.references == (Reference("a", live=True), Reference("a", streaming=True))


def test_read_files_options_are_extracted_with_the_format_apart():
    query = parse_query(
        "SELECT * FROM STREAM read_files('/landing/orders', format => 'json', "
        "inferColumnTypes => true, maxFilesPerTrigger => 10, schemaHints => 'id BIGINT')",
        "f.sql",
    )
    assert query.references == ()
    assert query.file_sources == (
        FileSource(
            "read_files",
            "/landing/orders",
            "json",
            (
                ("inferColumnTypes", "true"),
                ("maxFilesPerTrigger", "10"),
                ("schemaHints", "id BIGINT"),
            ),
            streaming=True,
        ),
    )


def test_cloud_files_takes_a_format_and_an_options_map_and_always_streams():
    query = parse_query(
        "SELECT * FROM STREAM(cloud_files('/in', 'csv', map('header', 'true', 'sep', ';'))) AS f "
        "UNION ALL SELECT * FROM cloud_files('/old', 'parquet')",
        "f.sql",
    )
    assert query.file_sources == (
        FileSource("cloud_files", "/in", "csv", (("header", "true"), ("sep", ";")), True),
        FileSource("cloud_files", "/old", "parquet", (), True),
    )


def test_read_files_without_a_format_leaves_it_to_the_reader():
    query = parse_query("SELECT * FROM read_files('/p')", "f.sql")
    assert query.file_sources == (FileSource("read_files", "/p"),)


def test_a_file_source_without_a_literal_path_is_an_error():
    with pytest.raises(PipelineDefinitionError) as e:
        parse_query("SELECT 1 AS x\nUNION ALL SELECT * FROM read_files(col)", "f.sql")
    assert e.value.line == 2 and "path" in str(e.value)


def test_render_replaces_reads_removes_stream_and_keeps_aliases():
    query = parse_query(
        "SELECT o.id, c.name FROM STREAM(LIVE.orders) AS o "
        "JOIN STREAM customers c ON o.cid = c.id "
        "JOIN LIVE.untouched u ON u.id = o.id "
        "JOIN STREAM(read_files('/p', format => 'json')) f ON f.id = o.id",
        "f.sql",
    )
    orders, customers, _untouched = query.references
    names = {orders: "v_orders", customers: "v_customers", query.file_sources[0]: "v_files"}
    rendered = query.render(names)
    assert rendered == (
        "SELECT o.id, c.name FROM v_orders AS o JOIN v_customers AS c ON o.cid = c.id "
        "JOIN untouched AS u ON u.id = o.id JOIN v_files AS f ON f.id = o.id"
    )


def test_render_leaves_missing_references_as_written_minus_live_and_stream():
    query = parse_query("SELECT * FROM STREAM(LIVE.db.a) JOIN b ON 1 = 1", "f.sql")
    assert query.render({}) == "SELECT * FROM db.a JOIN b ON 1 = 1"


def test_render_does_not_change_the_stored_query():
    query = parse_query("SELECT * FROM STREAM(LIVE.a) x", "f.sql")
    before = query.tree.sql()
    query.render({query.references[0]: "v"})
    assert query.tree.sql() == before
    assert query.render({}) == "SELECT * FROM a AS x"


def test_render_keeps_cte_names_and_replaces_reads_inside_ctes():
    query = parse_query("WITH c AS (SELECT * FROM LIVE.src) SELECT * FROM c", "f.sql")
    assert query.render({Reference("src", live=True): "v1"}) == (
        "WITH c AS (SELECT * FROM v1 AS src) SELECT * FROM c"
    )


def test_a_query_syntax_error_points_at_the_line_and_column_in_the_file():
    error = fails(
        """
        -- a comment
        CREATE STREAMING TABLE ok AS SELECT 1 AS x;

        CREATE MATERIALIZED VIEW broken AS
        SELECT a,
               b FROM t WHERE (
        """,
        "PIPELINE_SQL_PARSE_ERROR",
        7,
    )
    assert "column 23" in str(error)  # the "(" after WHERE


def test_parse_query_offsets_errors_by_its_starting_line():
    with pytest.raises(PipelineDefinitionError) as e:
        parse_query("SELECT *\nFROM t WHERE", "defs.py", line=20)
    assert (e.value.file, e.value.line) == ("defs.py", 21)


# -- a whole file ---------------------------------------------------------------------------


def test_a_file_with_comments_and_semicolons_in_strings_keeps_source_order_and_lines():
    parsed = parse(
        """
        -- Bronze; silver; gold.
        /* a block comment; with semicolons */
        SET source = '/landing';

        CREATE OR REFRESH STREAMING TABLE bronze (
          CONSTRAINT has_id EXPECT (id IS NOT NULL) ON VIOLATION DROP ROW
        ) COMMENT 'raw; as landed'
        AS SELECT * FROM STREAM read_files('${source}/orders', format => 'json');

        CREATE OR REFRESH MATERIALIZED VIEW silver AS
          SELECT *, 'a;b' AS tag FROM bronze -- trailing; comment
          WHERE note <> ';';

        CREATE STREAMING TABLE gold;
        CREATE FLOW gold_eu AS INSERT INTO gold BY NAME SELECT * FROM STREAM(bronze);
        APPLY CHANGES INTO gold FROM STREAM(bronze) KEYS (id) SEQUENCE BY ts;
        """
    )
    assert [(d.name, d.origin.line) for d in parsed.datasets] == [
        ("bronze", 6),
        ("silver", 11),
        ("gold", 15),
    ]
    assert parsed.datasets[0].dataset.comment == "raw; as landed"
    assert parsed.datasets[0].query.file_sources[0].path == "/landing/orders"
    assert parsed.datasets[1].query.references == (Reference("bronze"),)
    assert parsed.datasets[1].text.endswith("WHERE note <> ';'")
    assert [(f.name, f.origin.line) for f in parsed.flows] == [("gold_eu", 16)]
    assert [(c.name, c.origin.line) for c in parsed.auto_cdc] == [("gold", 17)]
    assert parsed.conf == {"source": "/landing"}


def test_an_empty_file_defines_nothing():
    parsed = parse("-- nothing here\n")
    assert parsed == SqlDefinitions()


PARSE, CLAUSE = "PIPELINE_SQL_PARSE_ERROR", "PIPELINE_SQL_UNSUPPORTED_CLAUSE"
UNDEFINED = "PIPELINE_UNDEFINED_PARAMETER"
MALFORMED = [  # (text, error class, line at fault)
    ("CREATE STREAMING TABLE t\nCOMMENT 'a'\nCOMMENT 'b'", PARSE, 3),
    ("CREATE MATERIALIZED VIEW m COMMENT 'no query'", PARSE, 1),
    ("\nSET spark.sql.shuffle.partitions 8", PARSE, 2),
    ("CREATE TEMPORARY VIEW v\nPARTITIONED BY (a) AS SELECT 1 AS a", CLAUSE, 2),
    ("CREATE STREAMING TABLE t (\n CONSTRAINT c EXPECT (x > ) ON VIOLATION DROP ROW)", PARSE, 2),
    ("CREATE STREAMING TABLE t (\n id INT,\n CONSTRAINT pk PRIMARY KEY (id))", CLAUSE, 3),
    ("CREATE STREAMING TABLE t (CONSTRAINT c EXPECT (x > 0) ON VIOLATION IGNORE)", PARSE, 1),
    ("APPLY CHANGES INTO t FROM s KEYS (id)\nSEQUENCE BY ts STORED AS SCD TYPE 3", PARSE, 2),
    ("CREATE MATERIALIZED VIEW m AS SELECT '${late}' AS x;\nSET late = 1;", UNDEFINED, 1),
    ("SET t = events;\n\nCREATE MATERIALIZED VIEW m AS\nSELECT * FROM ${t} WHERE", PARSE, 4),
    ("CREATE MATERIALIZED VIEW m AS\nDELETE FROM t", PARSE, 2),
    ("CREATE STREAMING TABLE t;\nCREATE MATERIALIZED VIEW m AS SELECT 'oops", PARSE, 2),
]


@pytest.mark.parametrize("text, error_class, line", MALFORMED)
def test_a_malformed_statement_fails_at_the_line_at_fault(text, error_class, line):
    fails(text, error_class, line)


def test_the_window_function_in_group_by_is_not_taken_for_the_window_clause():
    query = parse_query(
        "SELECT window(ts, '1 hour') AS w, count(*) AS n FROM STREAM(LIVE.events)\n"
        "GROUP BY window(ts, '1 hour')",
        "f.sql",
    )
    assert [r.name for r in query.references] == ["events"]
    rendered = query.render({query.references[0]: "v"}).lower()
    assert "group by window(ts, '1 hour')" in rendered
    named = parse_query("SELECT sum(b) OVER w FROM x WINDOW w AS (PARTITION BY a)", "f.sql")
    assert "window w as (partition by a)" in named.render({named.references[0]: "x"}).lower()
