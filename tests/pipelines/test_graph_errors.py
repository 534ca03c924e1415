"""Every graph error is found before anything runs, names the file and line, and leaves
nothing written: no table, no checkpoint, no event log."""

from __future__ import annotations

import pytest

from headwater.catalog import Catalog
from headwater.errors import PipelineDefinitionError


def assert_nothing_written(project):
    assert not project.storage.exists()
    assert Catalog.of(project.spark).list_tables(project.database) == []


def fails(project, error_class: str, file: str, line: int | None):
    with pytest.raises(PipelineDefinitionError) as e:
        project.run()
    assert e.value.error_class == error_class, str(e.value)
    assert e.value.file is not None and e.value.file.endswith(file), str(e.value)
    if line is not None:
        assert e.value.line == line, str(e.value)
    assert_nothing_written(project)
    return e.value


def test_a_cycle_is_named_with_its_flows(project):
    project.source(
        "cycle.py",
        """
        from pyspark import pipelines as dp

        @dp.materialized_view
        def a():
            return spark.read.table("b")

        @dp.materialized_view
        def b():
            return spark.read.table("a")
        """,
    )
    error = fails(project, "PIPELINE_CYCLE", "cycle.py", None)
    assert "a (reads" in str(error) and "b (reads" in str(error)


def test_a_read_of_an_undefined_live_dataset_points_at_the_reader(project):
    project.source(
        "undefined.py",
        """
        import dlt

        @dlt.table
        def t():
            return dlt.read("LIVE.nowhere")
        """,
    )
    fails(project, "PIPELINE_UNDEFINED_DATASET", "undefined.py", 4)


def test_a_read_of_a_table_that_exists_nowhere_is_an_undefined_dataset(project):
    project.source(
        "missing.py",
        """
        from pyspark import pipelines as dp

        @dp.materialized_view
        def t():
            return spark.read.table("no_such_table_anywhere")
        """,
    )
    fails(project, "PIPELINE_UNDEFINED_DATASET", "missing.py", 4)


def test_two_definitions_of_one_name_point_at_the_second(project):
    project.source(
        "twice.py",
        """
        from pyspark import pipelines as dp

        @dp.materialized_view
        def t():
            return spark.range(1)

        @dp.materialized_view(name="t")
        def t_again():
            return spark.range(2)
        """,
    )
    error = fails(project, "PIPELINE_DUPLICATE_DATASET", "twice.py", 8)
    assert "twice.py:4" in str(error)


def test_a_streaming_read_of_a_materialized_view_is_refused(project):
    project.source(
        "stream_mv.py",
        """
        from pyspark import pipelines as dp

        @dp.materialized_view
        def mv():
            return spark.range(3)

        @dp.table
        def st():
            return spark.readStream.table("mv")
        """,
    )
    fails(project, "PIPELINE_STREAMING_READ_OF_MATERIALIZED_VIEW", "stream_mv.py", 8)


def test_a_syntax_error_names_the_file_and_line(project):
    project.source("broken.py", "from pyspark import pipelines as dp\n\ndef oops(:\n    pass\n")
    fails(project, "PIPELINE_PYTHON_SYNTAX_ERROR", "broken.py", 3)


def test_a_flow_into_an_undeclared_table_is_refused(project):
    project.source(
        "orphan.py",
        """
        from pyspark import pipelines as dp

        @dp.append_flow(target="nowhere")
        def f():
            return spark.readStream.format("rate").load()
        """,
    )
    fails(project, "PIPELINE_FLOW_TARGET_NOT_FOUND", "orphan.py", 4)


def test_an_unknown_dataset_in_refresh_is_named_before_anything_runs(project):
    project.source(
        "ok.py",
        """
        from pyspark import pipelines as dp

        @dp.materialized_view
        def t():
            return spark.range(3)
        """,
    )
    with pytest.raises(PipelineDefinitionError, match="--refresh names 'nope'") as e:
        project.run(refresh=["nope"])
    assert e.value.error_class == "PIPELINE_UNKNOWN_DATASET"
    assert_nothing_written(project)


def test_table_options_not_supported_yet_are_refused_not_dropped(project):
    project.source(
        "parquet.py",
        """
        from pyspark import pipelines as dp

        @dp.materialized_view(format="parquet")
        def t():
            return spark.range(3)
        """,
    )
    fails(project, "PIPELINE_UNSUPPORTED_TABLE_OPTION", "parquet.py", 4)
