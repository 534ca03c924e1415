"""Every published file the pipeline corpus runs: repository, path, the commit read, its
SHA-256 and licence. Run as a script to fill a corpus folder from clones of the public
repositories::

    python tests/corpus/pipelines/pipeline_sources.py --git databricks/delta-live-tables-notebooks=<clone> <folder>

(each ``--git`` names a clone, bare or not, that has the commit; the files are written to
``<folder>/<owner>/<repo>/<commit>/<path>`` and checked against the digests below)."""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
from pathlib import Path

from pipeline_corpus import Source, markdown_block

DLT_NOTEBOOKS = "databricks/delta-live-tables-notebooks"
DLT_NOTEBOOKS_AT = "6ce7841e2ec6cfb2177f039bbc17b9b02976e2a9"  # 2025-03-12
DBDEMOS = "databricks-demos/dbdemos-notebooks"
DBDEMOS_AT = "a6c94c120ec55d92c2bcbb872daafbf48b2e8ba7"  # 2026-07-21
DBDEMOS_LEGACY_AT = "eef869d543284f54de1ac9748130a0f0e244deec"  # 2024-11-27, before the new syntax
LOANS = "product_demos/Delta-Live-Table/dlt-loans/"
CDC = "product_demos/Delta-Live-Table/declarative-pipeline-cdc/"
UNIT = "product_demos/Delta-Live-Table/declarative-pipeline-unit-test/"
SPARK = "apache/spark"
SPARK_AT = "166e97041fb741b05fc02028158d4c61399d61f2"
SPARK_GUIDE = "docs/declarative-pipelines-programming-guide.md"
APACHE = "Apache License 2.0"
MSLEARN = "MicrosoftLearning/mslearn-databricks"
MSLEARN_AT = "0fb3cf7160940164c60a4b2482bd165e91c48185"  # 2026-03-11
MIT = "MIT License"
NO_LICENCE = "no licence file: all rights reserved"
DATABRICKS_LICENCE = "Databricks License: use with the Databricks platform only"


def _guide(heading: str, lang: str, sha256: str) -> Source:
    """A code block of Spark's declarative pipelines programming guide."""
    anchor = "-".join(heading.lower().split())
    url = f"https://github.com/{SPARK}/blob/{SPARK_AT}/{SPARK_GUIDE}#{anchor}"
    return Source(SPARK, SPARK_GUIDE, SPARK_AT, sha256, url, APACHE, heading, lang)


def _github(repo: str, commit: str, path: str, sha256: str, licence: str) -> Source:
    url = f"https://github.com/{repo}/blob/{commit}/{path}".replace(" ", "%20")
    return Source(repo, path, commit, sha256, url, licence)


SOURCES: dict[str, Source] = {
    "mslearn_covid": Source(
        MSLEARN,
        "Instructions/Exercises/LA-05-Build-data-pipeline.md",
        MSLEARN_AT,
        "0304bffe4dbbc3c5b81a4db72e402b89a78f89fb65a7d6f2b5a10f87cdd28a90",
        f"https://github.com/{MSLEARN}/blob/{MSLEARN_AT}/Instructions/Exercises/LA-05-Build-data-pipeline.md",
        MIT,
        "Create Lakeflow Declarative Pipeline using SQL",
        "sql",
    ),
    "mslearn_iot": Source(
        MSLEARN,
        "Instructions/Exercises/DE-02-End-to-end-streaming.md",
        MSLEARN_AT,
        "7b0b5f07e0c2513bad3084e48ba04f3153def555d5e4c319042d63ac8f0c2185",
        f"https://github.com/{MSLEARN}/blob/{MSLEARN_AT}/Instructions/Exercises/DE-02-End-to-end-streaming.md",
        MIT,
        "Create a Delta Live Table Pipeline",
        "python",
    ),
    "mslearn_iot_data": _github(
        MSLEARN,
        MSLEARN_AT,
        "data/device_data.csv",
        "a684ed19adfdad342676402b529eaa99a7fc88932fa034eeeb459b9895fc9b3d",
        MIT,
    ),
    "mslearn_covid_data": _github(
        MSLEARN,
        MSLEARN_AT,
        "data/covid_data.csv",
        "7eb53dc13b9b7c970385729e38619545ad1dd3cc248b20a394da5d084c7c0647",
        MIT,
    ),
    "guide_for_loop": _guide(
        "Creating Tables in a For Loop",
        "python",
        "c0f4adb32ade7d89097d28fcbe3e3112ec127aa84c75a0346606cdf10784ecd8",
    ),
    "guide_flows_python": _guide(
        "Using Multiple Flows to Write to Single Target",
        "python",
        "bdc2b4816e33e275956b3f2ed02333049b1a4ca5038c9b8aa14375479407607a",
    ),
    "guide_flows_sql": _guide(
        "Using Multiple Flows to Write to Single Target",
        "sql",
        "4a4784560e05c23f07c37e7fe9e4ebb67c96f21f3aa10af8a19faa698b01bf0e",
    ),
    "guide_query_sql": _guide(
        "Querying Tables Defined in Your Pipeline",
        "sql",
        "ce265e7a67fae91bf52343dac6da878927e86214f6396de25611a4300fd961e9",
    ),
    "guide_spec_yaml": _guide(
        "Pipeline Projects",
        "yaml",
        "555b1d00bcceb17eacdbfd44c20abea2d34f354e754fea60faa16b9592d615e4",
    ),
    "guide_query_python": _guide(
        "Querying Tables Defined in Your Pipeline",
        "python",
        "73d4abd594f296e52ef49f016af96198445b1706f25f6635a3cb696fa42d271b",
    ),
    "guide_flow_concept_sql": _guide(
        "Flows", "sql", "f93f4b754042bb29dcc6088fba80f295c5a84e5e91025602c97da4f9dc81e3a3"
    ),
    "guide_mv_python": _guide(
        "Creating Materialized View",
        "python",
        "6e6d270c6d6033d1a42d2fea47c3622ae81df516f1226ed1c920b5c7fa6ac99d",
    ),
    "guide_mv_sql": _guide(
        "Creating Materialized View",
        "sql",
        "dde55f85ac4a1e4ef743a0381ce87f0a085e218cf240d6e92f08a1c4744c9ad4",
    ),
    "guide_tv_python": _guide(
        "Creating Temporary View",
        "python",
        "8e55038145e208b18cd66ace1094dcd79d6f818ee95ba55ddf616b0bb9a52ff2",
    ),
    "guide_tv_sql": _guide(
        "Creating Temporary View",
        "sql",
        "0a5685649a52f6f4a5cc6d5bd67acd200df69676cc5d2390352e51dd67902d97",
    ),
    "guide_st_python": _guide(
        "Creating Streaming Table",
        "python",
        "2fa46af5f61ed4664cb46fa969b6502dba030266d71dceea9258d71c7409c722",
    ),
    "guide_st_sql": _guide(
        "Creating Streaming Table",
        "sql",
        "02f0b0959cf01d604ad0ae5ba48c0c55cfae29eae4be4ce7b8ffa53699f66e0b",
    ),
    "guide_batch_python": _guide(
        "Loading Data from Batch Source",
        "python",
        "ced2ed0c6a9e4ba24ac0b7b470a344236f60278be8698e55df8942e9ece12b44",
    ),
    "wikipedia_python": _github(
        DLT_NOTEBOOKS,
        DLT_NOTEBOOKS_AT,
        "python/Wikipedia.py",
        "0335f1a973ecf949affff5537e7048b2e7bb07689c2d6194822832ac9fbf89ad",
        NO_LICENCE,
    ),
    "wikipedia_sql": _github(
        DLT_NOTEBOOKS,
        DLT_NOTEBOOKS_AT,
        "sql/Wikipedia.sql",
        "97726f54a361cb1ea4caaafe151e82c39664d560bd7691abffb4b36ecbd2094e",
        NO_LICENCE,
    ),
    "retail_cdc_python": _github(
        DLT_NOTEBOOKS,
        DLT_NOTEBOOKS_AT,
        "change-data-capture-example/notebooks/2-Retail_DLT_CDC_Python.py",
        "9431b464de5adef39dcbe8ee8960b40cc99d4606c8771f6334d59cd84ba14f82",
        NO_LICENCE,
    ),
    "retail_cdc_sql": _github(
        DLT_NOTEBOOKS,
        DLT_NOTEBOOKS_AT,
        "change-data-capture-example/notebooks/2-Retail_DLT_CDC_sql.sql",
        "3935cfd77591bec7420ee8929190dd1a3dd21c277e271f5d14af926cf8882e3c",
        NO_LICENCE,
    ),
    "cdc_monitoring": _github(
        DLT_NOTEBOOKS,
        DLT_NOTEBOOKS_AT,
        "change-data-capture-example/notebooks/3. Retail_DLT_CDC_Monitoring.py",
        "7a5d79e949a7e877a1d8d3a07bbfba4c6042f0989f37d6a9dfaa0e4bbfd61926",
        NO_LICENCE,
    ),
    "c360_monitoring": _github(
        DLT_NOTEBOOKS,
        DLT_NOTEBOOKS_AT,
        "customer360-fivetran-dlt-demo/DLT Pipeline Monitoring.sql",
        "9bf9beee4cb14517e72cb5d72e52f089f3bc5cd852489564042308c5fdc925b1",
        NO_LICENCE,
    ),
    "event_log_queries": _github(
        DLT_NOTEBOOKS,
        DLT_NOTEBOOKS_AT,
        "python/DLT Event Log Queries.py",
        "6d11af440b3c9298e3d1641adb4aaaa4215ec7927066e9d0ef39e8cb72723149",
        NO_LICENCE,
    ),
    "snapshot_pattern1": _github(
        DLT_NOTEBOOKS,
        DLT_NOTEBOOKS_AT,
        "apply-changes-from-snapshot-demo/src/notebooks/process_snapshot_pattern1.py",
        "8ff29a583c57c851c9c0436bd4cb33329b560f6f0a14c3512928ce4bdc3b14f3",
        NO_LICENCE,
    ),
    "loan_risk_python": _github(
        DLT_NOTEBOOKS,
        DLT_NOTEBOOKS_AT,
        "python/Loan Risk.py",
        "3feeb915a0d7a6a61ecf3a9c898658af916ef340620abfb194c8b3b98cae4506",
        NO_LICENCE,
    ),
    "loan_risk_sql": _github(
        DLT_NOTEBOOKS,
        DLT_NOTEBOOKS_AT,
        "sql/Loan Risk.sql",
        "7e332b41c1deb4d48b17703a9ed1467bc54266207c746a29623b6b208cf78214",
        NO_LICENCE,
    ),
    "loans_sql": _github(
        DBDEMOS,
        DBDEMOS_AT,
        LOANS + "01-SDP-Loan-pipeline-SQL.sql",
        "ca864012d2e68daca137359046ebe8f837f2aa7bc52b5899d0a82b2df742cdd7",
        DATABRICKS_LICENCE,
    ),
    "loans_python": _github(
        DBDEMOS,
        DBDEMOS_AT,
        LOANS + "02-SDP-Loan-pipeline-PYTHON.py",
        "c59a412eb21103fbf14d3a74c0056ef7d0370625a3b0aaa2ac5f56bc4209d528",
        DATABRICKS_LICENCE,
    ),
    "loans_sql_legacy": _github(
        DBDEMOS,
        DBDEMOS_LEGACY_AT,
        LOANS + "01-DLT-Loan-pipeline-SQL.sql",
        "974292d42ee0966074b8ab2412b19fa780e27dd356d7b009e5616edcaaad0cef",
        DATABRICKS_LICENCE,
    ),
    "loans_log_analysis": _github(
        DBDEMOS,
        DBDEMOS_AT,
        LOANS + "03-Log-Analysis.sql",
        "2cc4c2f79f46113922388fe98494c8c9d54c75e486402a99d2318a3c64026393",
        DATABRICKS_LICENCE,
    ),
    "cdc_sql": _github(
        DBDEMOS,
        DBDEMOS_AT,
        CDC + "1-sdp-sql/transformations/01-sql_cdc_pipeline.sql",
        "4abd9e6c8481d2e3db252c5f6c42adf8cc441c14d1771698b1b76593afeabb66",
        DATABRICKS_LICENCE,
    ),
    "unit_bronze": _github(
        DBDEMOS,
        DBDEMOS_AT,
        UNIT + "sdp-python/transformations/01-bronze.py",
        "d6f6b1efaa6087000af9524a6206acb88ae8249c331c601b43256b2538ef2489",
        DATABRICKS_LICENCE,
    ),
    "unit_silver": _github(
        DBDEMOS,
        DBDEMOS_AT,
        UNIT + "sdp-python/transformations/02-silver.py",
        "8a7581a91a9ab686f67c087a3638fdc75a6b3a03b87c08785b146e3878a2f471",
        DATABRICKS_LICENCE,
    ),
    "unit_gold": _github(
        DBDEMOS,
        DBDEMOS_AT,
        UNIT + "sdp-python/transformations/03-gold.py",
        "c5705b4b2e0289bce9e760fcdd4a16128309c6014bde1c7a9dd2af7dc80119b4",
        DATABRICKS_LICENCE,
    ),
    "unit_config": _github(
        DBDEMOS,
        DBDEMOS_AT,
        UNIT + "sdp-python/transformations/config.py",
        "7768eacd2474957ba72ea02ae642cf2d9697664ac491a5f3fc628665a4b8ebba",
        DATABRICKS_LICENCE,
    ),
    "unit_users": _github(
        DBDEMOS,
        DBDEMOS_AT,
        UNIT + "test/dataset/users.json",
        "edb7c61be5d2337f52e07a408a0712a5ebc87a6ad79ef8c99be1a9e57614f400",
        DATABRICKS_LICENCE,
    ),
    "unit_spend": _github(
        DBDEMOS,
        DBDEMOS_AT,
        UNIT + "test/dataset/spend.csv",
        "96920709592271387e90a94e9101039c5ce9df51574850f45d4c28351801933f",
        DATABRICKS_LICENCE,
    ),
    "unit_rules": _github(
        DBDEMOS,
        DBDEMOS_AT,
        UNIT + "SDP-pipeline-to-test.py",
        "dffb6ee7122142df0fa5fe02e72c76d64b7c84f7e2247fe7963964170d0065a5",
        DATABRICKS_LICENCE,
    ),
    "unit_bronze_test": _github(
        DBDEMOS,
        DBDEMOS_AT,
        UNIT + "sdp-python/transformations/test/01-bronze-test.py",
        "f5a93a7e5240c21c0bdb76193e8ed540a08848a9d48a3d02aa9333f1817d49ad",
        DATABRICKS_LICENCE,
    ),
    "unit_silver_test": _github(
        DBDEMOS,
        DBDEMOS_AT,
        UNIT + "sdp-python/transformations/test/02-silver-test.py",
        "9b96aafa6c5ab1673751daa5bee2c67a8f2c658b686b863d11b4e8f8a4ea507d",
        DATABRICKS_LICENCE,
    ),
    "unit_gold_test": _github(
        DBDEMOS,
        DBDEMOS_AT,
        UNIT + "sdp-python/transformations/test/03-gold-test.py",
        "a2cfde804e005c2cbd5297f858423f81f82a94a3a7743b77b40968d02dc62adb",
        DATABRICKS_LICENCE,
    ),
}


def provision(clones: dict[str, str], folder: Path) -> list[str]:
    """Write every source whose repository has a clone in ``clones``; return what was
    written (``repo:path``)."""
    written = []
    for source in SOURCES.values():
        clone = clones.get(source.repo)
        if not clone:
            continue
        data = subprocess.run(
            ["git", "-C", clone, "show", f"{source.commit}:{source.path}"],
            capture_output=True,
            check=True,
        ).stdout
        if source.block:
            data = markdown_block(data.decode("utf-8"), source.block, source.lang).encode("utf-8")
        digest = hashlib.sha256(data).hexdigest()
        if digest != source.sha256:
            raise SystemExit(f"{source.repo}:{source.path} at {source.commit} has sha256 {digest}")
        target = source.location_in(folder)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        written.append(f"{source.repo}:{source.path}")
    return written


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--git", action="append", default=[], metavar="OWNER/REPO=CLONE")
    parser.add_argument("folder", type=Path)
    args = parser.parse_args(argv)
    clones = dict(item.split("=", 1) for item in args.git)
    for line in provision(clones, args.folder):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
