"""``col:path`` on JSON strings, rewritten to ``get_json_object`` (Spark-free)."""

from __future__ import annotations

from headwater.sql.json_paths import rewrite_json_paths, rewrite_select_item


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


def test_spaced_colons_as_the_event_log_docs_print_them():
    text = (
        "SELECT explode(from_json(details :flow_progress :data_quality :expectations, 's')) e "
        "FROM t WHERE details :flow_progress.status = 'COMPLETED' LIMIT :n"
    )
    assert rewrite_json_paths(text) == (
        "SELECT explode(from_json(get_json_object(details, "
        "'$.flow_progress.data_quality.expectations'), 's')) e FROM t "
        "WHERE get_json_object(details, '$.flow_progress.status') = 'COMPLETED' LIMIT :n"
    )


def test_a_whole_select_item_is_named_by_its_last_key():
    text = (
        "SELECT timestamp, details:user_action:action, details :flow_progress.metrics, "
        "raw:store.basket[*], raw:store.basket[0][2].b subfield, raw:['fb:testid'], "
        "raw:store.bicycle.price::double, raw:a.b::decimal(5, 2) FROM t"
    )
    assert rewrite_json_paths(text) == (
        "SELECT timestamp, get_json_object(details, '$.user_action.action') AS `action`, "
        "get_json_object(details, '$.flow_progress.metrics') AS `metrics`, "
        "get_json_object(raw, '$.store.basket[*]') AS `basket`, "
        "get_json_object(raw, '$.store.basket[0][2].b') subfield, "
        "get_json_object(raw, '$[\\'fb:testid\\']') AS `fb:testid`, "
        "get_json_object(raw, '$.store.bicycle.price')::double AS `price`, "
        "get_json_object(raw, '$.a.b')::decimal(5, 2) AS `b` FROM t"
    )


def test_paths_that_are_not_whole_select_items_keep_spark_s_names():
    text = (
        "SELECT Double(d:a.x) AS x, CASE WHEN d:a.s = 'R' THEN d :a.n END, d:a.y + 1 "
        "FROM (SELECT d:k FROM t) GROUP BY d:g ORDER BY d:o"
    )
    assert rewrite_json_paths(text) == (
        "SELECT Double(get_json_object(d, '$.a.x')) AS x, "
        "CASE WHEN get_json_object(d, '$.a.s') = 'R' THEN get_json_object(d, '$.a.n') END, "
        "get_json_object(d, '$.a.y') + 1 "
        "FROM (SELECT get_json_object(d, '$.k') AS `k` FROM t) "
        "GROUP BY get_json_object(d, '$.g') ORDER BY get_json_object(d, '$.o')"
    )


def test_a_window_call_does_not_end_the_select_list():
    text = "SELECT window(ts, '1 hour'), d:a FROM t"
    assert rewrite_json_paths(text) == (
        "SELECT window(ts, '1 hour'), get_json_object(d, '$.a') AS `a` FROM t"
    )


def test_a_select_expr_item_is_a_whole_select_item():
    # selectExpr("*", "tags:page.name", "tags:page.id::int", ...): each string is one item.
    assert rewrite_select_item("tags:page.name") == (
        "get_json_object(tags, '$.page.name') AS `name`"
    )
    assert rewrite_select_item("tags:page.id::int") == (
        "get_json_object(tags, '$.page.id')::int AS `id`"
    )
    assert rewrite_select_item("tags:page.id::int AS pid") == (
        "get_json_object(tags, '$.page.id')::int AS pid"
    )
    assert rewrite_select_item("upper(tags:eventType)") == (
        "upper(get_json_object(tags, '$.eventType'))"
    )
    assert rewrite_select_item("*") == "*"
    assert rewrite_select_item("x::int") == "x::int"


def test_a_colon_before_a_subscript_anywhere_in_the_path():
    text = "variant_explode(parse_json(e.details:flow_progress:data_quality:expectations:[ * ]))"
    assert rewrite_json_paths(text) == (
        "variant_explode(parse_json(get_json_object(e.details, "
        "'$.flow_progress.data_quality.expectations[*]')))"
    )
    assert rewrite_json_paths("d:a:['k x']:[0]") == "get_json_object(d, '$.a[\\'k x\\'][0]')"
