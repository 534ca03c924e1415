"""The ``headwater sql`` shell: -e, -f and the interactive loop (stdin), in child processes."""

from __future__ import annotations

import datetime as dt
import decimal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from headwater.shell import format_table

REPO = Path(__file__).resolve().parents[2]


def test_format_table_aligns_columns():
    text = format_table(
        ["id", "name", "amount", "at"],
        [
            (1, "a", decimal.Decimal("2.50"), dt.datetime(2024, 1, 2, 3, 4, 5)),
            (10, None, None, None),
        ],
    )
    assert text.splitlines() == [
        "id | name | amount | at",
        "---+------+--------+--------------------",
        " 1 | a    |   2.50 | 2024-01-02 03:04:05",
        "10 | NULL |   NULL | NULL",
    ]


@pytest.fixture(scope="module")
def shell(tmp_path_factory):
    home = tmp_path_factory.mktemp("shell")
    warehouse = str(home / "warehouse")

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "headwater.cli", "sql", "--warehouse", warehouse,
             "--master", "local[1]", *args],
            input=stdin, capture_output=True, text=True, timeout=300, cwd=str(REPO),
            env={**os.environ, "HOME": str(home)},
        )  # fmt: skip

    return run


@pytest.mark.slow
def test_execute_option_prints_results_and_fails_on_error(shell):
    proc = shell(
        "-e",
        "CREATE TABLE sh.t (id INT, name STRING); "
        "INSERT INTO sh.t VALUES (1, 'a;b'), (2, NULL); "
        "SELECT * FROM sh.t ORDER BY id; "
        "UPDATE sh.nothing SET id = 1; "
        "SELECT 'never' AS x",
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    out = proc.stdout
    assert out.startswith("OK\nOK\n")  # CREATE TABLE and INSERT return no rows
    assert "id | name\n---+-----\n 1 | a;b\n 2 | NULL\n(2 rows)" in out
    assert "never" not in out
    assert "Error: [statement 4, line 1, column" in proc.stderr
    assert "sh.nothing" in proc.stderr


def test_file_option_runs_a_script(shell, tmp_path):
    script = tmp_path / "job.sql"
    script.write_text(
        "-- the table made by the previous test, in the same warehouse\n"
        "UPDATE sh.t SET name = 'two'\n  WHERE id = 2;\n"
        "SELECT name FROM sh.t WHERE id = 2;\n"
        "DESCRIBE HISTORY sh.t LIMIT 1;\n"
    )
    proc = shell("-f", str(script))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "num_affected_rows\n-----------------\n                1" in proc.stdout
    assert "name\n----\ntwo\n(1 row)" in proc.stdout
    assert "UPDATE" in proc.stdout.split("(1 row)")[-2]  # the history row's operation


def test_interactive_loop_reads_multi_line_statements_and_survives_errors(shell):
    stdin = (
        "SELECT count(*)\n"
        "  AS n FROM sh.t\n"
        "  ;\n"
        "SELECT * FROM sh.missing_table;\n"
        "SELECT 'still; here' AS msg; SELECT 2 AS two;\n"
        "SELECT 'unterminated\n"
        "string' AS s;\n"
        "exit\n"
        "SELECT 'after exit' AS x;\n"
    )
    proc = shell(stdin=stdin)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "n\n-\n2\n(1 row)" in out
    assert "TABLE_OR_VIEW_NOT_FOUND" in proc.stderr
    assert "msg\n-----------\nstill; here" in out and "two\n---\n  2" in out
    assert "unterminated\\nstring" in out  # a newline in a cell is shown escaped
    assert "after exit" not in out
