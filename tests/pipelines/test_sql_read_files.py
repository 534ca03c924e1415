"""``read_files`` in pipeline SQL has the known platform's defaults, which are not Auto
Loader's: column types are inferred (``inferColumnTypes`` true), batch and under
``STREAM``; ``inferColumnTypes => false`` keeps strings; under ``STREAM`` the rescue column
is ``_rescued_data``. The older ``cloud_files`` keeps Auto Loader's strings."""

from __future__ import annotations

import json

# The shape of the known platform's retail sample: nested arrays of structs, numbers kept
# as JSON numbers, an epoch in a string, an ISO timestamp.
ORDERS = [
    {
        "order_number": 1,
        "customer_id": 7,
        "order_datetime": "1577836800",
        "placed_at": "2024-01-01T10:00:00Z",
        "ordered_products": [{"curr": "USD", "price": 12.5, "qty": 2}],
        "customer": {"name": "ann", "tier": 1},
    },
    {
        "order_number": 2,
        "customer_id": 8,
        "order_datetime": "1577923200",
        "placed_at": "2024-01-02T11:30:00Z",
        "ordered_products": [{"curr": "USD", "price": 3.0, "qty": 1}],
        "customer": {"name": "bob", "tier": 2},
    },
]

TYPED = {
    "order_number": "bigint",
    "customer_id": "bigint",
    "order_datetime": "string",
    "placed_at": "string",
    "ordered_products": "array<struct<curr:string,price:double,qty:bigint>>",
    "customer": "struct<name:string,tier:bigint>",
}

RETAIL_SQL = """
CREATE OR REFRESH STREAMING TABLE sales_orders_raw
AS SELECT * FROM STREAM read_files('${source_dir}/sales', format => 'json');

CREATE OR REFRESH MATERIALIZED VIEW sales_by_currency
AS SELECT p.curr, sum(p.price * p.qty) AS sales
   FROM (SELECT explode(ordered_products) AS p FROM LIVE.sales_orders_raw)
   GROUP BY p.curr;

CREATE OR REFRESH STREAMING TABLE strings_raw
AS SELECT * FROM STREAM read_files('${source_dir}/sales', format => 'json',
                                   inferColumnTypes => false);

CREATE OR REFRESH STREAMING TABLE legacy_raw
AS SELECT * FROM STREAM cloud_files('${source_dir}/sales', 'json');

CREATE OR REFRESH MATERIALIZED VIEW batch_typed
AS SELECT * FROM read_files('${source_dir}/sales');

CREATE OR REFRESH MATERIALIZED VIEW batch_strings
AS SELECT * FROM read_files('${source_dir}/sales', inferColumnTypes => false);
"""


def types(project, table: str) -> dict[str, str]:
    schema = project.spark.table(f"{project.database}.{table}").schema
    return {f.name: f.dataType.simpleString() for f in schema}


def column(project, table: str, expr: str):
    """``expr`` of the first order."""
    df = project.spark.table(f"{project.database}.{table}")
    return df.orderBy("order_number").selectExpr(expr).first()[0]


def test_read_files_infers_types_batch_and_stream_as_the_platform_does(project):
    project.source("retail.sql", RETAIL_SQL)
    sales = project.landing / "sales"
    sales.mkdir(parents=True)
    (sales / "1.json").write_text("".join(json.dumps(r) + "\n" for r in ORDERS))
    result = project.run()
    assert result.ok, result.failed()

    assert types(project, "sales_orders_raw") == {**TYPED, "_rescued_data": "string"}
    assert project.rows("sales_by_currency") == [("USD", 28.0)]
    assert types(project, "batch_typed") == {**TYPED, "_rescued_data": "string"}
    first = column(project, "batch_typed", "ordered_products[0]")
    assert tuple(first) == ("USD", 12.5, 2)

    strings = {name: "string" for name in TYPED}
    assert types(project, "strings_raw") == {**strings, "_rescued_data": "string"}
    assert types(project, "legacy_raw") == {**strings, "_rescued_data": "string"}
    assert types(project, "batch_strings") == {**strings, "_rescued_data": "string"}
    nested = column(project, "batch_strings", "customer")
    assert json.loads(nested) == {"name": "ann", "tier": 1}


def test_stream_read_files_rescues_values_that_do_not_fit_a_hint(project):
    project.source(
        "bronze.sql",
        """
        CREATE OR REFRESH STREAMING TABLE bronze
        AS SELECT * FROM STREAM read_files('${source_dir}/sales', format => 'json',
                                           schemaHints => 'customer_id int');
        """,
    )
    sales = project.landing / "sales"
    sales.mkdir(parents=True)
    rows = [{"order_number": 1, "customer_id": 7}, {"order_number": 2, "customer_id": "x"}]
    (sales / "1.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = project.run()
    assert result.ok, result.failed()
    assert types(project, "bronze") == {
        "order_number": "bigint",
        "customer_id": "int",
        "_rescued_data": "string",
    }
    got = project.rows("bronze", "order_number")
    assert got[0] == (1, 7, None)
    assert got[1][:2] == (2, None) and json.loads(got[1][2])["customer_id"] == "x"
