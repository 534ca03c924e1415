"""AUTO CDC over a source that gains columns (a database's ``ALTER TABLE ... ADD COLUMN``
reaching the stream on a restart): the SCD1 and SCD2 targets gain them, existing rows
NULL, and the events after it carry them."""

from __future__ import annotations

import pytest

from tests.pipelines.auto_cdc_cases import ordered, target

SOURCE = """
import dlt


@dlt.table
def people():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .schema("id bigint, name string, {extra}op string, seq bigint")
        .load(spark.conf.get("source_dir") + "/people")
    )


dlt.create_streaming_table("target")
dlt.create_auto_cdc_flow(
    target="target", source="people", keys=["id"], sequence_by="seq",
    apply_as_deletes="op = 'd'", except_column_list=["op", "seq"], stored_as_scd_type={scd},
)
"""


@pytest.mark.parametrize("scd", [1, 2])
def test_a_column_added_to_the_source_is_added_to_the_target(project, scd):
    project.source("p.py", SOURCE.format(extra="", scd=scd))
    rows = [
        {"id": 1, "name": "Ana", "op": "u", "seq": 1},
        {"id": 2, "name": "Bo", "op": "u", "seq": 1},
    ]
    project.land("1.json", rows, "people")
    assert project.run().ok
    project.source("p.py", SOURCE.format(extra="email string, ", scd=scd))
    later = [
        {"id": 1, "name": "Ana", "email": "ana@x", "op": "u", "seq": 2},
        {"id": 3, "name": "Cy", "email": "cy@x", "op": "u", "seq": 2},
        {"id": 2, "op": "d", "seq": 3},
    ]
    project.land("2.json", later, "people")
    result = project.run()
    assert result.ok, result.failed()
    columns = project.spark.table(f"{project.database}.target").columns
    assert columns[:3] == ["id", "name", "email"] if scd == 1 else "email" in columns
    if scd == 1:
        assert target(project) == ordered([(1, "Ana", "ana@x"), (3, "Cy", "cy@x")])
    else:
        found = project.spark.table(f"{project.database}.target").select(
            "id", "name", "email", "__START_AT", "__END_AT"
        )
        assert ordered([tuple(r) for r in found.collect()]) == ordered(
            [
                (1, "Ana", None, 1, 2),
                (1, "Ana", "ana@x", 2, None),
                (2, "Bo", None, 1, 3),
                (3, "Cy", "cy@x", 2, None),
            ]
        )
