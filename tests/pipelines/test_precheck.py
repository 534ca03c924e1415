"""Errors found before Spark starts (no SparkSession here): each kind, what must not be
judged without Spark, and the command line's time to the first error."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from headwater.errors import PipelineDefinitionError
from headwater.pipelines.define.spec import load_spec
from headwater.pipelines.graph.precheck import precheck


def project(root: Path, sources: dict[str, str], database: str | None = None) -> Path:
    spec = "name: p\nstorage: st\nlibraries:\n  - glob:\n      include: transformations/**\n"
    if database:
        spec += f"database: {database}\n"
    (root / "spark-pipeline.yml").write_text(spec)
    for name, text in sources.items():
        path = root / "transformations" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return root


def error_of(root: Path) -> str:
    with pytest.raises(PipelineDefinitionError) as caught:
        precheck(load_spec(root))
    return str(caught.value)


def test_python_syntax_error_names_file_and_line(tmp_path):
    project(tmp_path, {"a.py": "from pyspark import pipelines as dp\n\nx = spark.range(3\n"})
    message = error_of(tmp_path)
    assert message == (
        f"[PIPELINE_PYTHON_SYNTAX_ERROR] {tmp_path}/transformations/a.py:3: '(' was never closed"
    )


def test_errors_only_the_compiler_sees_count_too(tmp_path):
    project(tmp_path, {"a.py": "return 1\n"})
    assert "[PIPELINE_PYTHON_SYNTAX_ERROR]" in error_of(tmp_path)
    assert "'return' outside function" in error_of(tmp_path)


def test_sql_syntax_error_through_the_sql_front(tmp_path):
    project(
        tmp_path,
        {
            "ok.sql": "CREATE MATERIALIZED VIEW a AS SELECT 1 AS id\n",
            "bad.sql": "CREATE MATERIALIZED VIEW b AS\nSELEC id FROM a\n",
        },
    )
    message = error_of(tmp_path)
    assert message.startswith("[PIPELINE_SQL_PARSE_ERROR]") or "bad.sql:" in message
    assert f"{tmp_path}/transformations/bad.sql:" in message


def test_sql_in_spark_sql_inside_a_definition(tmp_path):
    source = """
        from pyspark import pipelines as dp

        @dp.materialized_view
        def a():
            return spark.sql("SELECT id FROM (SELECT 1 AS id")
    """
    project(tmp_path, {"a.py": source})
    assert f"{tmp_path}/transformations/a.py:5" in error_of(tmp_path)


@pytest.mark.parametrize(
    "call, hint",
    [
        ('@dlt.table(nmae="x")', "table() has no argument 'nmae': did you mean 'name'?"),
        ("@dlt.expect_or_drop('ok', 'id > 0', severity=1)", "expect_or_drop() has no argument"),
        ('@dp.materialized_view(path="/x")', "materialized_view() has no argument 'path'"),
    ],
)
def test_unknown_argument_of_the_pipeline_api(tmp_path, call, hint):
    source = f"""
        import dlt
        from pyspark import pipelines as dp

        {call}
        def x():
            return spark.range(1)
    """
    project(tmp_path, {"a.py": textwrap.dedent(source)})
    message = error_of(tmp_path)
    assert message.startswith(f"[PIPELINE_UNKNOWN_ARGUMENT] {tmp_path}/transformations/a.py:4: ")
    assert hint in message


def test_functions_imported_by_name_and_star_are_checked(tmp_path):
    project(
        tmp_path,
        {
            "a.py": """
                from dlt import *

                create_streaming_table("t", comment="c", partition_by=["d"])
            """
        },
    )
    assert "create_streaming_table() has no argument 'partition_by'" in error_of(tmp_path)
    project(
        tmp_path,
        {"a.py": "from pyspark.pipelines import table as t\n\n@t(nam='x')\ndef x(): ...\n"},
    )
    assert "table() has no argument 'nam'" in error_of(tmp_path)


def test_duplicate_dataset_across_python_and_sql(tmp_path):
    project(
        tmp_path,
        {
            "a.py": """
                import dlt

                @dlt.table(name="orders")
                def anything():
                    return spark.range(1)
            """,
            "b.sql": "CREATE MATERIALIZED VIEW Orders AS SELECT 1 AS id\n",
        },
    )
    message = error_of(tmp_path)
    assert message.startswith("[PIPELINE_DUPLICATE_DATASET]")
    assert f"b.sql:1: Dataset 'Orders' is defined twice: here and at {tmp_path}" in message
    assert "a.py:3" in message


def test_cycle_from_explicit_reads(tmp_path):
    project(
        tmp_path,
        {
            "a.py": """
                import dlt

                @dlt.table
                def a():
                    return dlt.read("c")

                @dlt.table
                def b():
                    return spark.read.table("LIVE.a").where("id > 0")
            """,
            "c.sql": "CREATE MATERIALIZED VIEW c AS SELECT * FROM b\n",
        },
        database="shop",
    )
    message = error_of(tmp_path)
    assert message == (
        f"[PIPELINE_CYCLE] {tmp_path}/transformations/a.py:3: Flows read each other in a "
        "cycle: a (reads shop.c) -> c (reads shop.b) -> b (reads shop.a) -> a. Break the cycle."
    )


def test_a_flow_reading_its_own_target_is_a_cycle(tmp_path):
    source = """
        from pyspark import pipelines as dp

        dp.create_streaming_table("t")

        @dp.append_flow(target="t")
        def more():
            return spark.readStream.option("x", "y").table("t")
    """
    project(tmp_path, {"a.py": source})
    assert "cycle: more (reads default.t) -> more." in error_of(tmp_path)


def test_what_may_not_run_is_not_judged(tmp_path):
    """Reads under an if, names that are not literals, definitions in a loop or a
    function, and external tables: left to the runner."""
    source = """
        import dlt

        @dlt.table
        def a():
            if spark.conf.get("backfill", "false") == "true":
                return dlt.read("b")
            return spark.range(3)

        @dlt.table
        def b():
            return dlt.read("a").union(spark.read.table("other_db.a"))

        for n in ("x", "y"):
            @dlt.table(name=n)
            def same():
                return spark.range(1)

        def factory():
            @dlt.table
            def b():
                return spark.range(1)

        if False:
            @dlt.table
            def a():
                return spark.range(1)

        dlt.create_streaming_table(name=f"t_{1}")
        dlt.apply_changes(target="t_1", source="b", keys=["id"], sequence_by="id")
    """
    project(tmp_path, {"a.py": source}, database="db")
    known = precheck(load_spec(tmp_path))
    assert set(known.registry.datasets) == {"a", "b"}
    assert [(f.name, f.target, f.reads) for f in known.flows] == [
        ("a", "a", ()),
        ("b", "b", ("a", "other_db.a")),
        ("t_1", "t_1", ("b",)),
    ]


def test_sql_set_values_answer_later_files(tmp_path):
    project(
        tmp_path,
        {
            "a.sql": "SET src = raw;\nCREATE MATERIALIZED VIEW raw AS SELECT 1 AS id\n",
            "b.sql": "CREATE MATERIALIZED VIEW b AS SELECT * FROM ${src}\n",
        },
    )
    known = precheck(load_spec(tmp_path))
    assert [f.reads for f in known.flows] == [(), ("raw",)]


def test_a_syntax_error_reaches_the_terminal_in_seconds(tmp_path):
    """The real command: the error is printed before Spark has started (the session,
    started alongside, is abandoned with the process)."""
    project(tmp_path, {"a.py": "from pyspark import pipelines as dp\n\nx = spark.range(3\n"})
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "headwater.cli", "pipelines", "dry-run", "--master", "local[1]"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    seconds = time.monotonic() - start
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"error: [PIPELINE_PYTHON_SYNTAX_ERROR] {tmp_path}/transformations/a.py:3: "
        "'(' was never closed"
    )
    # (under a session's start: 2.5-3 s alone on 2 cores, 3.4 s and once 6.6 s in CI runs
    # whose other worker and the tiers' installs shared the cores, where a session's start
    # takes 8-15 s)
    assert seconds < 10, seconds
