"""``dp.create_auto_cdc_flow`` as SDP's docs call it, loaded without Spark on whichever
pyspark is installed: 4.3's ``AutoCdcFlow`` has SCD2's ``track_history_*`` fields and
``spark_conf``, 4.2's has neither, and both must take the call (this file runs in the
main venv and in the tier's)."""

from __future__ import annotations

import textwrap

from pyspark.pipelines.graph_element_registry import graph_element_registration_context

from headwater.pipelines.define.loader import pipeline_modules, run_python_source
from headwater.pipelines.define.registry import Registry

SOURCE = """
from pyspark import pipelines as dp

dp.create_auto_cdc_flow(target="customers", source="changes", keys=["id"], sequence_by="seq")
dp.create_auto_cdc_flow(
    target="customers_history",
    source="changes",
    keys=["id"],
    sequence_by="seq",
    stored_as_scd_type=2,
    track_history_column_list=["city"],
    spark_conf={"spark.sql.shuffle.partitions": "1"},
)
"""


def loaded(tmp_path) -> Registry:
    file = tmp_path / "cdc.py"
    file.write_text(textwrap.dedent(SOURCE))
    registry = Registry()
    with pipeline_modules(), graph_element_registration_context(registry):
        run_python_source(None, file)  # type: ignore[arg-type]  (the source needs no Spark)
    return registry


def test_create_auto_cdc_flow_takes_sdps_arguments_on_the_installed_pyspark(tmp_path):
    flows = {flow.target: flow for flow in loaded(tmp_path).flows.values()}

    scd1 = flows["customers"].auto_cdc
    assert scd1 is not None
    assert (scd1.source, scd1.keys, scd1.sequence_by, scd1.scd_type) == (
        "changes",
        ("id",),
        "seq",
        1,
    )
    scd2 = flows["customers_history"].auto_cdc
    assert scd2 is not None
    assert (scd2.scd_type, scd2.track_history_column_list) == (2, ("city",))
    assert dict(flows["customers_history"].spark_conf) == {"spark.sql.shuffle.partitions": "1"}
