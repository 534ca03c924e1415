"""Examples pyspark prints in the docstrings of ``pyspark.pipelines`` (pyspark 4.3.0 from
PyPI, https://pypi.org/project/pyspark/4.3.0/, file ``pyspark/pipelines/api.py``; Apache
License 2.0; read 2026-11-29). The text ships with the installed package: each test reads
it there (``Docstring.text``, pinned by SHA-256), so the case runs in CI and nothing of it
is kept in this repository."""

from __future__ import annotations

from pipeline_cdc_oracle import scd1
from pipeline_corpus import Docstring, Pipeline, assert_rows

PYPI = "https://pypi.org/project/pyspark/4.3.0/"
APACHE = "Apache License 2.0"
STREAMING_TABLE = Docstring(
    "pyspark.pipelines.api",
    "create_streaming_table",
    "b0724ba835d06dc9e0d033a6c72c52f44747618cbb301c6d7b574a9d8b8d5d52",
    PYPI,
    APACHE,
)
AUTO_CDC = Docstring(
    "pyspark.pipelines.api",
    "create_auto_cdc_flow",
    "510a16dfd6da16744af57900b2f172c1e0b56ff4360389a482612038b89cf290",
    PYPI,
    APACHE,
)
# The docstrings call the functions by their names in pyspark.pipelines: the import line
# is the one a user adds (the README's "the import").
IMPORT = "from pyspark.pipelines import create_auto_cdc_flow, create_streaming_table\n"
SOURCE_SCHEMA = "key string, value string, sequence_expr bigint, note string"


def test_docstring_auto_cdc_flow_into_a_streaming_table(tmp_path, spark):
    """``create_streaming_table("target")`` then the AUTO CDC flow of the docstring (keys
    ``key``, sequence ``sequence_expr``, ``column_list=["key", "value"]``, the SCD type
    left to the default, 1) over a change table ``source``. Two updates: events out of
    order within a batch, an older event with a NULL value, a newest event with a NULL
    value, late events in the second update (older than what their key holds: ignored), a
    new key; the column outside ``column_list`` is not in the target."""
    pipeline = Pipeline.create(tmp_path, spark, "docstring_auto_cdc")
    pipeline.source("cdc.py", IMPORT + STREAMING_TABLE.text() + AUTO_CDC.text())
    first = [
        ("k1", "a", 1, "n1"),
        ("k1", "c", 3, "n2"),
        ("k1", "b", 2, "n3"),
        ("k2", "x", 5, "n4"),
        ("k2", None, 4, "n5"),
        ("k3", None, 2, "n6"),
        ("k3", "p", 1, "n7"),
        ("k4", "only", 10, None),
    ]
    second = [
        ("k1", "late", 0, "n8"),
        ("k1", "d", 4, "n9"),
        ("k2", "late", 3, "n10"),
        ("k5", "new", 1, "n11"),
        ("k4", "again", 11, "n12"),
        ("k4", "older", 9, "n13"),
    ]
    names = ("key", "value", "sequence_expr", "note")
    seen: list[tuple] = []
    for batch in (first, second):
        pipeline.append("source", batch, SOURCE_SCHEMA)
        seen += batch
        result = pipeline.run()
        assert result.ok, result.failed()
        events = [dict(zip(names, row, strict=True)) for row in seen]
        expected = scd1(
            events,
            ["key"],
            lambda e: e["sequence_expr"],
            lambda e: False,
            ["key", "value"],
        )
        assert_rows(pipeline.rows("target"), expected)
