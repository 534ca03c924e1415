"""``col:path`` on JSON strings, rewritten to ``get_json_object`` (Spark-free)."""

from __future__ import annotations

from headwater.sql.json_paths import rewrite_json_paths


def test_dotted_and_colon_paths_become_json_paths():
    text = "SELECT details:flow_progress.metrics.num_output_rows AS n FROM t"
    assert rewrite_json_paths(text) == (
        "SELECT get_json_object(details, '$.flow_progress.metrics.num_output_rows') AS n FROM t"
    )
    nested = "from_json(details:flow_progress:data_quality:expectations, 'a int')"
    assert rewrite_json_paths(nested) == (
        "from_json(get_json_object(details, '$.flow_progress.data_quality.expectations'), 'a int')"
    )


def test_qualified_columns_indexes_and_quoted_keys():
    assert rewrite_json_paths("e.details:a[0].b") == "get_json_object(e.details, '$.a[0].b')"
    assert rewrite_json_paths("d:['k x']") == "get_json_object(d, '$[\\'k x\\']')"


def test_casts_parameters_and_strings_are_left_alone():
    text = "SELECT x::int, m[1], 'a:b' FROM t WHERE y = :param AND z = ? "
    assert rewrite_json_paths(text) == text
