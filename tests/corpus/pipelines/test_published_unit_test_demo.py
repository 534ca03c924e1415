"""The unit-test demo pipeline of the known platform's demos (``pyspark.pipelines`` as
``dp``): bronze, silver and gold files that take their rules from a table through a helper
module beside them (``from config import get_rules``, ``expect_all_or_drop``), Auto Loader
with schema hints over JSON and CSV, a stream-static left join, ``spark.conf.set`` at load,
and the demo's own test files (``transformations/test/*``: private materialized views with
``expect_or_fail`` and ``expect_all_or_fail``), which the ``transformations/**`` glob takes
in. It runs on the demo's own test data (``test/dataset/users.json`` and ``spend.csv``: a
user without an id, an id that is no integer, an empty age) and its rules (the ``data``
list of ``SDP-pipeline-to-test.py``, read from that file)."""

from __future__ import annotations

import ast
import hashlib
import json
from datetime import datetime

import pytest
from pipeline_corpus import Edit, Pipeline, assert_rows, edited, expectation_counts
from pipeline_sources import SOURCES

from headwater.errors import PipelineDefinitionError

FILES = {
    "unit_bronze": "01-bronze.py",
    "unit_silver": "02-silver.py",
    "unit_gold": "03-gold.py",
    "unit_config": "config.py",
    "unit_bronze_test": "test/01-bronze-test.py",
    "unit_silver_test": "test/02-silver-test.py",
    "unit_gold_test": "test/03-gold-test.py",
}
EDITS = {
    "unit_bronze": [
        Edit(
            "/Volumes/main__build/dbdemos_sdp_unit_test/raw_data/test",
            "{landing}",
            "the demo's test volume: the landing folder",
            count=2,
        )
    ],
    "unit_config": [
        Edit('catalog = "main__build"', 'catalog = "spark_catalog"', "the rules table's catalog"),
        Edit(
            'schema = "dbdemos_sdp_unit_test"', 'schema = "{database}"', "the rules table's schema"
        ),
    ],
}
SPEND = ("id", "age", "annual_income", "spending_core")


def rules() -> list[tuple[str, str, str]]:
    """The demo's rules: the ``data = [...]`` literal of its setup notebook."""
    tree = ast.parse(SOURCES["unit_rules"].text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [
            "data"
        ]:
            return ast.literal_eval(node.value)
    raise AssertionError("no data = [...] in the setup notebook")


def f32(text: str) -> float | None:
    import struct

    return None if text == "" else struct.unpack("f", struct.pack("f", float(text)))[0]


def as_int(text) -> int | None:
    return text if isinstance(text, int) else (int(text) if str(text or "").isdigit() else None)


def oracle(users: list[dict], spend_csv: str) -> dict[str, list[dict]]:
    columns = sorted({k for u in users for k in u} - {"id"})
    bronze = [
        {**{c: u.get(c) for c in columns}, "id": as_int(u.get("id"))}
        for u in users
        if "id" not in u or as_int(u["id"]) is not None
    ]
    silver = [
        {
            "id": u["id"],
            "email": hashlib.sha1(u["email"].encode()).hexdigest(),
            "creation_date": datetime.strptime(u["creation_date"], "%m-%d-%Y %H:%M:%S"),
            "last_activity_date": datetime.strptime(u["last_activity_date"], "%m-%d-%Y %H:%M:%S"),
            **{
                c: u[c] for c in ("firstname", "lastname", "address", "city", "last_ip", "postcode")
            },
        }
        for u in bronze
        if u["id"] is not None and u["id"] > 0
    ]
    lines = [line.split(",") for line in spend_csv.strip().splitlines()[1:]]
    spend = [
        {
            "id": as_int(i),
            "age": as_int(a),
            "annual_income": f32(inc),
            "spending_core": f32(s),
            "_rescued_data": None,
        }
        for i, a, inc, s in lines
        if as_int(i) is not None and as_int(i) > 0
    ]
    by_id = {s["id"]: s for s in spend}
    gold = [
        {**u, **{k: v for k, v in by_id[u["id"]].items() if k != "id"}}
        for u in silver
        if all(by_id[u["id"]][c] is not None for c in SPEND)
    ]
    return {
        "user_bronze_sdp": [{**u, "_rescued_data": None} for u in bronze],
        "user_silver_sdp": silver,
        "spend_silver_sdp": spend,
        "user_gold_sdp": gold,
        "TEST_user_bronze_sdp": [{"not_empty_rescued_data": 0}],
        "TEST_user_silver_sdp_anonymize": [
            {"num_rows": len(silver), "clear_email": 0, "null_id_count": 0}
        ],
        "TEST_user_gold_sdp": [{"id": g["id"], "duplicate": 1} for g in gold],
    }


@pytest.mark.xfail(
    strict=True,
    raises=PipelineDefinitionError,
    reason="a Python source cannot import a module beside it (from config import get_rules): "
    "ModuleNotFoundError",
)
def test_unit_test_demo(tmp_path, spark):
    pipeline = Pipeline.create(tmp_path, spark, "unit_test_demo")
    # The demo's settings, read with spark.conf.get at load.
    pipeline.spec({"catalog": "main__build", "schema": "dbdemos_sdp_unit_test"})
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {pipeline.database}")
    spark.createDataFrame(rules(), ["tag", "name", "constraint"]).write.saveAsTable(
        f"{pipeline.database}.expectations"
    )
    users_text, spend_text = SOURCES["unit_users"].text(), SOURCES["unit_spend"].text()
    pipeline.land("users_json/users.json", users_text)
    pipeline.land("spend_csv/spend.csv", spend_text)
    for key, name in FILES.items():
        pipeline.source(name, edited(SOURCES[key].text(), EDITS.get(key, []), **pipeline.places()))

    result = pipeline.run()
    assert result.ok, result.failed()
    users = [json.loads(line) for line in users_text.splitlines()]
    for table, rows in oracle(users, spend_text).items():
        assert_rows(pipeline.rows(table), rows)
    quality = pipeline.quality()
    assert expectation_counts(quality, "user_bronze_sdp") == {"correct_schema": (6, 1)}
    assert expectation_counts(quality, "user_silver_sdp") == {"valid_id": (4, 2)}
    assert expectation_counts(quality, "spend_silver_sdp") == {"valid_id": (4, 2)}
    assert expectation_counts(quality, "user_gold_sdp") == {
        "valid_age": (3, 1),
        "valid_income": (4, 0),
        "valid_score": (4, 0),
    }
    assert expectation_counts(quality, "TEST_user_silver_sdp_anonymize") == {
        "keep_all_rows": (1, 0),
        "email_should_be_anonymized": (1, 0),
        "null_ids_removed": (1, 0),
    }
    assert expectation_counts(quality, "TEST_user_gold_sdp") == {"pk_must_be_unique": (3, 0)}
