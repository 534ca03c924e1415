"""Statement splitting, classification, error positions and COPY INTO parsing (no Spark)."""

from __future__ import annotations

import pytest

from headwater.sql import SqlError, parse_copy_into
from headwater.sql.dispatch import classify
from headwater.sql.rewrite import expression_end, has_candidates
from headwater.sql.text import is_complete, parse, split


def test_split_keeps_semicolons_in_strings_comments_and_names():
    text = (
        "SELECT 'a;b' AS x -- c;d\n;\n\n;SELECT `we;ird` FROM t /* ; */;  VACUUM t RETAIN 1 HOURS"
    )
    stmts = split(text)
    assert [s.index for s in stmts] == [1, 2, 3]
    assert stmts[0].text == "SELECT 'a;b' AS x"
    assert stmts[1].text == "SELECT `we;ird` FROM t"
    assert stmts[2].text == "VACUUM t RETAIN 1 HOURS"
    # the command's text is tokenized again, so it can be read token by token
    assert [t.text for t in stmts[2].tokens] == ["VACUUM", "t", "RETAIN", "1", "HOURS"]
    assert split("  ;; -- nothing\n") == []


def test_is_complete_for_the_shell():
    assert not is_complete("SELECT 1")
    assert not is_complete("SELECT 'unterminated;")
    assert not is_complete("SELECT 1; SELECT")
    assert is_complete("SELECT ';'\n;")
    assert is_complete("SELECT 1; SELECT 2;")


def test_unterminated_string_names_statement_and_position():
    with pytest.raises(SqlError) as info:
        split("SELECT 1;\nSELECT 2;\nSELECT 'abc\ndef")
    e = info.value
    assert (e.statement, e.line, e.column) == (3, 3, 8)
    assert "statement 3, line 3, column 8" in str(e)


def test_syntax_error_names_statement_line_and_column():
    stmts = split("SELECT 1;\nUPDATE t\n  SET v = WHERE id = 1;")
    with pytest.raises(SqlError) as info:
        parse(stmts[1])
    e = info.value
    assert e.statement == 2 and e.line == 3
    assert str(e).startswith("[statement 2, line 3, column")
    assert "UPDATE t" in str(e) and "^" in str(e)


@pytest.mark.parametrize(
    "text, kind",
    [
        ("DESCRIBE HISTORY t", "describe"),
        ("desc detail delta.`/p`", "describe"),
        ("DESCRIBE history", "describe_table"),  # a table named history
        ("DESCRIBE TABLE EXTENDED t", "describe_table"),  # Spark's rows + Delta partitioning
        ("DESCRIBE QUERY SELECT 1", None),
        ("CONVERT TO DELTA parquet.`/x`", "convert"),
        ("GENERATE symlink_format_manifest FOR TABLE t", "generate"),
        ("OPTIMIZE t", "optimize"),
        ("VACUUM t", "vacuum"),
        ("RESTORE TABLE t TO VERSION AS OF 1", "restore"),
        ("COPY INTO t FROM '/x' FILEFORMAT = JSON", "copy_into"),
        ("MERGE WITH SCHEMA EVOLUTION INTO t USING s ON 1=1", "merge"),
        ("UPDATE t SET a = 1", "update"),
        ("DELETE FROM t", "delete"),
        ("INSERT OVERWRITE t SELECT 1", "insert"),
        ("CREATE OR REPLACE TABLE t AS SELECT 1", "create"),
        ("CREATE EXTERNAL TABLE t (a INT) LOCATION '/x'", "create"),
        ("CREATE TEMP VIEW v AS SELECT 1", None),
        ("ALTER TABLE t ADD COLUMNS (x INT)", "alter"),
        ("DROP TABLE IF EXISTS t", "drop"),
        ("DROP VIEW v", None),
        ("SELECT * FROM t", None),
        ("SHOW TABLES", None),
        ("SET a = b", None),
    ],
)
def test_classify(text, kind):
    assert classify(split(text)[0]) == kind


def test_rewrite_candidates_are_found_from_tokens():
    def cands(text):
        return has_candidates(split(text)[0].tokens)

    assert cands("SELECT * FROM t VERSION AS OF 1")
    assert cands("SELECT * FROM t FOR TIMESTAMP AS OF '2024-01-01'")
    assert cands("SELECT * FROM t@v2")
    assert cands("SELECT * FROM delta.`/p`")
    assert cands("SELECT * FROM read_files('/p')")
    assert not cands("SELECT version, timestamp FROM t AS x WHERE CAST(a AS TIMESTAMP) > now()")


def test_expression_end_spans_time_travel_values():
    def span(text):
        toks = split("SELECT " + text + " x")[0].tokens[1:]
        end = expression_end(toks, 0, len(toks) - 1)
        return " ".join(t.text for t in toks[: end + 1])

    assert span("'2024-01-01'") == "2024-01-01"
    assert (
        span("current_timestamp() - INTERVAL 1 HOUR") == "current_timestamp ( ) - INTERVAL 1 HOUR"
    )
    assert span("date_sub(current_date(), 1)") == "date_sub ( current_date ( ) , 1 )"
    assert (
        span("TIMESTAMP '2024-01-01' + INTERVAL '1' DAY") == "TIMESTAMP 2024-01-01 + INTERVAL 1 DAY"
    )


def test_parse_copy_into_every_clause():
    kwargs = parse_copy_into(
        """COPY INTO delta.`/tables/t` (id, amount)
           FROM (SELECT id::int, cast(amount AS decimal(10, 2)) AS amount, concat(a, ',', b) FROM '/land/x')
           FILEFORMAT = CSV
           VALIDATE 10 ROWS
           FILES = ('a.csv', 'b.csv')
           FORMAT_OPTIONS ('header' = 'true', 'sep' = ';', inferSchema = true)
           COPY_OPTIONS ('mergeSchema' = 'true', 'force' = false)"""
    )
    assert kwargs == {
        "target": "delta.`/tables/t`",
        "source": "/land/x",
        "file_format": "csv",
        "select": ["id::int", "cast(amount AS decimal(10, 2)) AS amount", "concat(a, ',', b)"],
        "columns": ["id", "amount"],
        "by_position": False,
        "files": ["a.csv", "b.csv"],
        "pattern": None,
        "format_options": {"header": "true", "sep": ";", "inferSchema": "true"},
        "copy_options": {"mergeSchema": "true", "force": "false"},
        "validate": 10,
    }


def test_parse_copy_into_by_position_pattern_validate_all():
    kwargs = parse_copy_into(
        "copy into bronze.`raw events` BY POSITION FROM 's3://bucket/in' "
        "FILEFORMAT = binaryFile PATTERN = '*/2024-*.bin' VALIDATE ALL"
    )
    assert kwargs["target"] == "bronze.`raw events`"
    assert kwargs["by_position"] is True and kwargs["columns"] is None
    assert kwargs["source"] == "s3://bucket/in" and kwargs["file_format"] == "binaryFile"
    assert kwargs["pattern"] == "*/2024-*.bin" and kwargs["files"] is None
    assert kwargs["validate"] == "ALL" and kwargs["select"] is None
    minimal = parse_copy_into("COPY INTO t FROM '/in' FILEFORMAT = JSON")
    assert (minimal["target"], minimal["file_format"], minimal["validate"]) == ("t", "json", None)


@pytest.mark.parametrize(
    "text, message, column",
    [
        ("COPY INTO t FROM '/in'", "Expected FILEFORMAT", 23),
        ("COPY INTO t FROM /in FILEFORMAT = JSON", "quoted string", 18),
        ("COPY INTO t FROM '/in' FILEFORMAT = JSON FILES = ('a') PATTERN = '*'", "not both", 56),
        ("COPY INTO t FROM '/in' FILEFORMAT = JSON VALIDATE 5", "Expected ROWS", 52),
        ("COPY INTO t FROM (SELECT a FROM '/in' WHERE a > 1) FILEFORMAT = JSON", "select list", 39),
        ("COPY INTO t FROM '/in' FILEFORMAT = JSON OPTIONS ('a' = 'b')", "Expected one of", 42),
    ],
)
def test_parse_copy_into_errors_point_at_the_token(text, message, column):
    with pytest.raises(SqlError) as info:
        parse_copy_into(text)
    assert message in str(info.value)
    assert (info.value.line, info.value.column) == (1, column)
