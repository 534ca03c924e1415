"""Materialized views over Delta tables the pipeline does not own (written by other jobs,
read by name with ``spark.read.table``/``spark.table``/SQL ``FROM``): each is an input
with versions, as the pipeline's own tables are. An update where it did not change
commits nothing to the views (no-op); rows appended to it are appended or merged into
the views' groups; its updates and deletes are taken back from their groups. Real
pipelines, real Delta tables; after every update each view equals its query recomputed."""

from __future__ import annotations

import view_checks
from pyspark.sql.types import StructType
from view_checks import techniques, version

from headwater.catalog.names import delta_path
from headwater.pipelines.define.elements import Dataset, Flow, Origin
from headwater.pipelines.graph.analysis import AnalysedFlow, Graph
from headwater.pipelines.graph.reads import Names, outside_key
from headwater.pipelines.refresh.arrow_refresh import UP_TO_ROWS
from headwater.pipelines.refresh.plan import Considered, RefreshPlan, Technique
from headwater.pipelines.runner.view_refresh import REWRITE_UP_TO

VIEWS = """
from pyspark import pipelines as dp
from pyspark.sql import functions as F


@dp.materialized_view
def totals():
    return spark.read.table("{src}").groupBy("region").agg(
        F.sum("amount").alias("total"), F.count("*").alias("n"), F.count("amount").alias("amounts")
    )


@dp.materialized_view
def large():
    return spark.table("{src}").where("amount >= 20").select("id", "region")
"""
SQL_VIEW = (
    "CREATE MATERIALIZED VIEW regions AS SELECT region, count(*) AS n FROM {src} GROUP BY region"
)
QUERIES = {
    "totals": "SELECT region, sum(amount) AS total, count(*) AS n, count(amount) AS amounts "
    "FROM {src} GROUP BY region",
    "large": "SELECT id, region FROM {src} WHERE amount >= 20",
    "regions": "SELECT region, count(*) AS n FROM {src} GROUP BY region",
}
SCHEMA = "id bigint, amount bigint, region string"


def rows(start: int, n: int, region: str = "eu") -> list[tuple]:
    return [(i, i * 10, region) for i in range(start, start + n)]


def outside_table(project, properties: str = "") -> str:
    """``orders`` in a database of its own, written outside the pipeline."""
    name = f"{project.database}_src.orders"
    project.spark.sql(f"CREATE DATABASE IF NOT EXISTS {project.database}_src")
    project.spark.sql(f"CREATE TABLE {name} ({SCHEMA}) USING delta {properties}")
    append(project, name, rows(0, 2))  # a file 'large' skips by its stats (amounts < 20)
    append(project, name, rows(2, 2) + rows(10, 2, region="us"))
    return name


def append(project, name: str, new: list[tuple]) -> None:
    project.spark.createDataFrame(new, SCHEMA).write.mode("append").saveAsTable(name)


def updated(project, src: str, spark: dict[str, str] | None = None) -> dict[str, dict]:
    """An update of the pipeline (under the session settings ``spark``): each view's plan,
    after checking it against its recompute, and that its events name ``src`` as written
    (every flow's definition lists it among its inputs; no reason names it by location)."""
    for key, value in (spark or {}).items():
        project.spark.conf.set(key, value)
    try:
        result = project.run()
    finally:
        for key in spark or {}:
            project.spark.conf.unset(key)
    assert result.ok, result.failed()
    for view, query in QUERIES.items():
        view_checks.same_rows(project, view, query.format(src=src))
    defined = [e.details for e in result.events if e.event_type == "flow_definition"]
    assert {d["output_dataset"].rsplit(".", 1)[-1] for d in defined} == set(QUERIES)
    assert all(d["input_datasets"] == [src] for d in defined), defined
    planned = techniques(result)
    assert "delta.`" not in str(planned) or src.startswith("delta.`"), planned
    return planned


def test_a_table_outside_the_pipeline_is_an_input_with_versions(project):
    src = outside_table(project, "TBLPROPERTIES (delta.enableChangeDataFeed = true)")
    project.source("views.py", VIEWS.format(src=src))
    project.source("regions.sql", SQL_VIEW.format(src=src))
    first = updated(project, src)
    assert {p["chosen"] for p in first.values()} == {"FULL_RECOMPUTE"}, first
    before = {v: version(project, v) for v in QUERIES}

    unchanged = updated(project, src)
    for view in QUERIES:
        assert unchanged[view]["chosen"] == "NO_OP", unchanged[view]
        assert unchanged[view]["reason"] == "no input changed since the last refresh"
    assert {v: version(project, v) for v in QUERIES} == before  # nothing committed

    append(project, src, rows(20, 3) + rows(30, 1, region="us"))
    grown = updated(project, src)
    assert grown["totals"]["chosen"] == "GROUP_AGGREGATE", grown["totals"]
    assert grown["regions"]["chosen"] == "GROUP_AGGREGATE", grown["regions"]
    assert grown["large"]["chosen"] == "APPEND", grown["large"]
    assert "only appended to" in grown["totals"]["reason"]
    for view in QUERIES:  # named as the user wrote it, not by its location's key
        assert f"appended to '{src}'" in grown[view]["reason"], grown[view]

    project.spark.sql(f"UPDATE {src} SET amount = amount + 5, region = 'us' WHERE id = 21")
    project.spark.sql(f"DELETE FROM {src} WHERE id IN (1, 30)")
    # in Spark, by MERGE: the query run on the feed's removed and added rows
    changed = updated(project, src, {UP_TO_ROWS: "0", REWRITE_UP_TO: "0"})
    for view in ("totals", "regions"):  # taken back from their groups
        assert changed[view]["chosen"] == "GROUP_AGGREGATE", changed[view]
        assert changed[view]["executor"] == "spark", changed[view]
        assert "change data feed has them" in changed[view]["reason"], changed[view]
        assert "by a MERGE of the touched groups" in changed[view]["reason"], changed[view]
    assert changed["large"]["chosen"] == "FULL_RECOMPUTE", changed["large"]
    assert "changed (updates)" in changed["large"]["reason"], changed["large"]


BY_PATH = """
from pyspark import pipelines as dp
from pyspark.sql import functions as F


@dp.materialized_view
def totals():
    return spark.read.format("delta").load("{path}").groupBy("region").agg(
        F.sum("amount").alias("total"), F.count("*").alias("n"), F.count("amount").alias("amounts")
    )


@dp.materialized_view
def large():
    return spark.read.load("{path}", format="delta").where("amount >= 20").select("id", "region")
"""


def test_a_table_read_by_path_without_a_change_feed_is_an_input_with_versions(project):
    """By path (``load(p)``, SQL's ``delta.`p```), its change feed off: an update or a
    delete is read back from the files its commit removed and added."""
    path = str(project.root / "outside" / "orders")
    first = project.spark.createDataFrame(rows(0, 40) + rows(100, 20, region="us"), SCHEMA)
    # in files of a few rows: a change's files hold fewer rows than a recompute reads
    first.repartition(12).write.format("delta").save(path)
    src = f"delta.`{path}`"
    project.source("views.py", BY_PATH.format(path=path))
    project.source("regions.sql", SQL_VIEW.format(src=src))
    assert {p["chosen"] for p in updated(project, src).values()} == {"FULL_RECOMPUTE"}

    unchanged = updated(project, src)
    assert {p["chosen"] for p in unchanged.values()} == {"NO_OP"}, unchanged

    new = project.spark.createDataFrame(rows(200, 3) + rows(300, 1, region="us"), SCHEMA)
    new.write.format("delta").mode("append").save(path)
    grown = updated(project, src)
    assert [grown[v]["chosen"] for v in QUERIES] == ["GROUP_AGGREGATE", "APPEND", "GROUP_AGGREGATE"]

    project.spark.sql(f"DELETE FROM {src} WHERE id IN (1, 300)")
    project.spark.sql(f"UPDATE {src} SET amount = NULL WHERE id = 22")
    changed = updated(project, src)  # on the driver (Arrow)
    again = updated(project, src, {UP_TO_ROWS: "0"})  # nothing changed since
    assert {p["chosen"] for p in again.values()} == {"NO_OP"}, again
    project.spark.sql(f"DELETE FROM {src} WHERE id = 30")
    in_spark = updated(project, src, {UP_TO_ROWS: "0"})  # in Spark: the files read back
    for view in ("totals", "regions"):
        for plan in (changed[view], in_spark[view]):
            assert plan["chosen"] == "GROUP_AGGREGATE", plan
            assert "the files its commits removed and added have them" in plan["reason"], plan
        assert (changed[view]["executor"], in_spark[view]["executor"]) == ("arrow", "spark")


def test_outside_inputs_are_keyed_by_location_and_found_through_temporary_views():
    """(No Spark.) An outside table's key opens it by path and equals no dataset's key;
    a view's outside inputs include those its temporary views read."""
    for location in ("/tmp/a.b/Orders", "file:/tmp/x y/orders", "s3://bucket/t"):
        assert delta_path(outside_key(location)) == location
    here = Origin("p.py")

    def dataset(name: str, kind) -> Dataset:
        return Dataset(name, kind, here)

    def flow(target: str, inputs: tuple[str, ...], outside: tuple[str, ...]) -> AnalysedFlow:
        written = tuple((key, "src." + key.rsplit("/", 1)[-1].strip("`")) for key in outside)
        return AnalysedFlow(
            Flow(target, target, lambda: None, here), f"db.{target}", inputs, False,
            StructType(), outside, written=written,
        )  # fmt: skip

    kinds = {"raw": "streaming_table", "recent": "temporary_view", "mv": "materialized_view"}
    flows = {
        "raw": flow("raw", (), ()),
        "recent": flow("recent", ("db.raw",), (outside_key("/s/orders"),)),
        "mv": flow("mv", ("db.recent",), (outside_key("/s/regions"),)),
    }
    graph = Graph(Names("db"), {f"db.{n}": dataset(n, k) for n, k in kinds.items()}, flows)
    assert graph.upstream(flows["mv"]) == {"db.raw"}
    assert graph.outside(flows["mv"]) == {outside_key("/s/orders"), outside_key("/s/regions")}
    assert graph.outside(flows["raw"]) == set()
    assert graph.written(flows["mv"]) == {
        outside_key("/s/orders"): "src.orders",
        outside_key("/s/regions"): "src.regions",
    }
    plan = RefreshPlan(
        Technique.FULL_RECOMPUTE,
        f"input '{outside_key('/s/orders')}' changed (updates)",
        (Considered(Technique.APPEND, False, f"'{outside_key('/s/regions')}' grew"),),
    ).named(graph.written(flows["mv"]))
    assert plan.reason == "input 'src.orders' changed (updates)"
    assert plan.considered[0].reason == "'src.regions' grew"


STRICT = (
    "CREATE MATERIALIZED VIEW large REFRESH POLICY INCREMENTAL STRICT AS "
    "SELECT id, region FROM {src} WHERE amount >= 20"
)


def test_a_strict_view_refused_names_its_outside_input_as_written(project):
    """REFRESH POLICY INCREMENTAL STRICT over an outside table that was updated: the flow
    fails rather than recompute, and its one line names the table as the query read it,
    not by its location's key."""
    src = outside_table(project)
    project.source("large.sql", STRICT.format(src=src))
    assert project.run().ok  # the first build is allowed
    project.spark.sql(f"UPDATE {src} SET amount = amount + 5 WHERE id = 10")
    failed = project.run()
    assert not failed.ok
    line = str(failed.flows["large"].error).splitlines()[0]
    assert line.startswith("[MATERIALIZED_VIEW_NOT_INCREMENTALIZABLE]"), line
    assert f"'{src}'" in line and "delta.`" not in line, line


STREAMS = """
from pyspark import pipelines as dp


@dp.table
def copied():
    return spark.readStream.table("{src}")
"""


def test_a_stream_of_an_outside_table_is_among_its_flows_inputs(project):
    """``flow_definition``'s ``input_datasets`` names an outside table a flow streams, in
    Python and in SQL (``STREAM x``), as the user wrote it."""
    src = outside_table(project)
    project.source("copied.py", STREAMS.format(src=src))
    project.source("again.sql", f"CREATE STREAMING TABLE again AS SELECT * FROM STREAM {src}")
    result = project.run()
    assert result.ok, result.failed()
    defined = {
        e.details["output_dataset"].rsplit(".", 1)[-1]: e.details["input_datasets"]
        for e in result.events
        if e.event_type == "flow_definition"
    }
    assert defined == {"copied": [src], "again": [src]}, defined
    assert sorted(project.rows("copied")) == sorted(project.rows("again"))
