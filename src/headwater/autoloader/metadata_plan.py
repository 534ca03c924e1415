"""Spark's hidden ``_metadata`` column on the DataFrames of ``cloudFiles`` and ``read_files``.

How Spark hides a column: ``SELECT *`` and ``df.columns`` expand a plan's *output*; a name
missing from the output is looked up in the plan's *metadata output*, and Spark's analyzer
(``AddMetadataColumns``) then adds the column to the plan nodes below the reference. A
``Project`` tagged with ``Project.hiddenOutputTag`` has the tagged attributes as its
metadata output. :func:`hide` builds that node over a source whose rows carry
``_metadata`` as a last column (:mod:`headwater.autoloader.file_metadata`): the column
leaves the DataFrame's columns and stays reachable by name, in Python
(``df.select("*", "_metadata")``, ``col("_metadata.file_path")``) and SQL, as on Spark's
own file sources. Over Spark's own file source the node hides nothing more: it marks the
DataFrame as one whose ``_metadata`` SQL reaches (below).

The source makes the column for every row, and Spark cannot prune a Python source's
columns, so a streaming query that never selects it would pay for it: when the query is
written (:func:`unselected_dropped`, from ``df.writeStream``, the moment the whole query is
known), a ``cloudFiles`` read whose ``_metadata`` nothing selects is swapped for the same
read without it. (Spark's ``foreachBatch`` hands its function the batch's columns only,
``_metadata`` never among them, so nothing after that point can ask for it.)

SQL: headwater runs ``read_files(...)`` in a statement as a temporary view, and Spark drops
metadata columns at a view (its ``SubqueryAlias`` passes them on only from a table). So
:func:`run_sql` gives Spark the statement's plan with each such view replaced by the
view's own plan (requalified by the view's alias), when the statement names ``_metadata``;
every other statement goes to Spark's ``spark.sql`` untouched.

Spark-classic internals (the session's JVM) stay in this module.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.functions import arrow_udf
from pyspark.sql.streaming.readwriter import DataStreamReader
from pyspark.sql.types import StructType

from headwater import originals
from headwater.autoloader import file_metadata
from headwater.autoloader.file_metadata import INDEX, NAME, OPTION, is_field
from headwater.autoloader.source import USER_SCHEMA_OPTION

log = logging.getLogger(__name__)
SqlFn = Callable[..., DataFrame]
# Plan nodes of a Python data source: their table's schema keeps its fields' metadata.
_RELATIONS = ("StreamingRelationV2", "DataSourceV2Relation")


def hide(df: DataFrame) -> DataFrame:
    """``df`` without its ``_metadata`` column among its columns, reachable by name.

    Takes the columns of ``df``'s plan marked as Spark's ``_metadata`` (by the field
    metadata Spark's analyzer reads), and what Spark's own file source offers as metadata
    output; ``df`` unchanged when there are none."""
    spark = df.sparkSession
    plan = df._jdf.queryExecution().analyzed()
    if plan.getClass().getSimpleName() == "Project" and _hidden_of(spark, plan):
        return df  # hidden already
    output = items(plan.output())
    hidden = _marked(spark, plan, output)
    ids = {a.exprId().id() for a in hidden}
    hidden += [
        a
        for a in items(plan.metadataOutput())
        if _is_file_metadata(a) and a.exprId().id() not in ids
    ]
    if not hidden:
        return df
    visible = [a for a in output if a.exprId().id() not in ids]
    return frame(spark, _project(spark, visible, plan, hidden))


def from_file_index(df: DataFrame, files: list[tuple[str, int, int]]) -> DataFrame:
    """``df`` (rows numbered by their file in ``files`` in the column ``INDEX``) without
    that column, with a hidden ``_metadata`` made from the number only when a query selects
    it: an Arrow function looks the number up, and Spark's optimizer drops the function
    from a query that does not select the column. (A batch read's files are known when the
    read is defined; the number costs 4 bytes a row.)"""
    values = file_metadata.table(files)

    def file_metadata_lookup(index: pa.Array) -> pa.Array:
        return values.take(index)

    data = [c for c in df.columns if c != INDEX]
    lookup = arrow_udf(file_metadata.TYPE)(file_metadata_lookup)  # type: ignore[call-overload]
    column = lookup(F.col(INDEX))
    name = file_metadata.column_name(data)
    marked = column.alias(name, metadata=dict(file_metadata.FIELD_METADATA))
    return hide(df.select(*[F.col(f"`{c}`") for c in data], marked))


def _marked(spark: SparkSession, plan: Any, output: list[Any]) -> list[Any]:
    """The columns of ``output`` marked as ``_metadata``. A Python source's relation drops
    the field metadata of its columns (its table's schema keeps it): those get it back,
    so a query selecting the column gets Spark's own field."""
    marked = [a for a in output if _is_file_metadata(a)]
    if marked or plan.getClass().getSimpleName() not in _RELATIONS:
        return marked
    fields = {f.name(): f.metadata() for f in plan.table().schema().fields()}
    return [
        a.withMetadata(fields[a.name()])
        for a in output
        if a.name() in fields and _is_marked(fields[a.name()])
    ]


def unselected_dropped(df: DataFrame) -> DataFrame:
    """``df`` with each streaming ``cloudFiles`` read whose ``_metadata`` the query does not
    select read without the column (see the module's doc); ``df`` itself when there is
    none, or when the source's schema changed since the read was defined."""
    plan = df._jdf.queryExecution().analyzed()
    if not plan.isStreaming() or "cloudFiles" not in plan.toString():
        return df
    try:
        replaced = _without_unselected(df.sparkSession, plan)
    except Exception as e:  # the query as written is right, only slower: run it so
        log.warning("cloudFiles: _metadata is read although nothing selects it (%s)", e)
        return df
    return df if replaced is None else frame(df.sparkSession, replaced)


def _without_unselected(spark: SparkSession, node: Any) -> Any | None:
    kind = node.getClass().getSimpleName()
    if kind == "Project" and node.child().getClass().getSimpleName() == "StreamingRelationV2":
        hidden = {a.exprId().id() for a in _hidden_of(spark, node)}
        columns = items(node.projectList())
        if not hidden or any(a.exprId().id() in hidden for a in columns):
            return None
        relation = node.child()
        options = dict(relation.extraOptions().asCaseSensitiveMap())
        options = {k: v for k, v in options.items() if k.lower() != OPTION.lower()}
        plain = read_again(spark, relation, [a.toAttribute() for a in columns], options)
        return None if plain is None else _project(spark, columns, plain, [])
    children = items(node.children())
    new = [_without_unselected(spark, c) for c in children]
    if all(n is None for n in new):
        return None
    merged = [n if n is not None else c for n, c in zip(new, children, strict=True)]
    return node.withNewChildren(scala_seq(spark, merged))


def read_again(
    spark: SparkSession, relation: Any, output: list[Any], options: dict[str, str]
) -> Any | None:
    """``relation`` (a streaming ``cloudFiles`` read) read again with ``options`` (a new
    source: Spark keeps the one made at ``load()``), its columns the attributes ``output``
    (their ids kept, so the query above it is unchanged); None when the columns differ.
    Without Spark's ``_metadata`` option, a given schema loses its ``_metadata`` field."""
    reader = spark.readStream.format(relation.sourceName()).options(**options)
    schema = StructType.fromJson(json.loads(relation.table().schema().json()))
    if any(k.lower() == USER_SCHEMA_OPTION for k in options):
        hidden = any(k.lower() == OPTION.lower() for k in options)
        reader = reader.schema(StructType([f for f in schema if hidden or not is_field(f)]))
    fresh = originals.original(DataStreamReader, "load")(reader)
    plan = fresh._jdf.queryExecution().analyzed()
    found = [(a.name(), a.dataType().json()) for a in items(plan.output())]
    if found != [(a.name(), a.dataType().json()) for a in output]:
        return None
    args = _fields(plan)
    args["output"] = scala_seq(spark, output)
    return plan.makeCopy(_array(spark, list(args.values())))


def run_sql(
    spark: SparkSession, text: str, args: Any, kwargs: dict[str, Any], original: SqlFn
) -> DataFrame:
    """``spark.sql(text, args, **kwargs)``; a statement naming ``_metadata`` that reads a
    temporary view of a DataFrame from :func:`hide` reads the view's plan instead, so the
    column resolves (see the module's doc)."""
    if args or kwargs or NAME not in text.lower():
        return original(spark, text, args, **kwargs)
    jss = spark._jsparkSession
    try:
        parsed = jss.sessionState().sqlParser().parsePlan(text)
    except Exception:  # Spark reports the bad text in its own words
        return original(spark, text, args)
    replaced = _substitute(spark, parsed)
    if replaced is None:
        return original(spark, text, args)
    return frame(spark, replaced)


# -- plans -------------------------------------------------------------------------------------


def _substitute(spark: SparkSession, node: Any) -> Any | None:
    """``node`` with every view of a hidden-column DataFrame replaced by the DataFrame's
    plan, or None when it names none. Walks plan children and ``WITH`` definitions."""
    kind = node.getClass().getSimpleName()
    if kind == "SubqueryAlias":
        found = _view_plan(spark, node.child())
        if found is not None:
            qualifier = [*items(node.identifier().qualifier()), node.alias()]
            return _requalified(spark, found, qualifier)
    if kind == "UnresolvedRelation":
        found = _view_plan(spark, node)
        return (
            None if found is None else _requalified(spark, found, items(node.multipartIdentifier()))
        )
    children = items(node.children())
    new = [_substitute(spark, c) for c in children]
    ctes = _with_definitions(spark, node) if kind == "UnresolvedWith" else None
    if ctes is not None:
        args = _fields(node)
        args["child"] = new[0] if new[0] is not None else args["child"]
        args["cteRelations"] = ctes
        return node.makeCopy(_array(spark, list(args.values())))
    if all(n is None for n in new):
        return None
    merged = [n if n is not None else c for n, c in zip(new, children, strict=True)]
    return node.withNewChildren(scala_seq(spark, merged))


def _with_definitions(spark: SparkSession, node: Any) -> Any | None:
    """The ``(name, query)`` pairs of ``WITH`` with the views replaced, or None if unchanged."""
    changed = False
    out = []
    for definition in items(node.cteRelations()):  # (name, query, ...) tuples
        parts = [definition.productElement(i) for i in range(definition.productArity())]
        query = _substitute(spark, parts[1])
        if query is not None:
            changed = True
            parts[1] = query
        out.append(getattr(_jvm(spark).scala, f"Tuple{len(parts)}")(*parts))
    return scala_seq(spark, out) if changed else None


def _view_plan(spark: SparkSession, node: Any) -> Any | None:
    """The plan of the temporary view ``node`` reads, when it came from :func:`hide`."""
    if node.getClass().getSimpleName() != "UnresolvedRelation" or node.isStreaming():
        return None
    parts = items(node.multipartIdentifier())
    if len(parts) != 1:
        return None
    catalog = spark._jsparkSession.sessionState().catalog()
    view = catalog.getTempView(parts[0])  # Spark's View node over the stored plan
    if not view.isDefined():
        return None
    plan = view.get().child()
    if plan.getClass().getSimpleName() != "Project" or not _hidden_of(spark, plan):
        return None
    return plan


def _requalified(spark: SparkSession, plan: Any, qualifier: list[str]) -> Any:
    """A copy of a :func:`hide` node whose columns, hidden ones too, carry ``qualifier``
    (as a view's ``SubqueryAlias`` would qualify them)."""
    names = scala_seq(spark, qualifier)
    columns = [a.toAttribute().withQualifier(names) for a in items(plan.projectList())]
    hidden = [a.withQualifier(names) for a in _hidden_of(spark, plan)]
    return _project(spark, columns, plan.child(), hidden)


def _project(spark: SparkSession, columns: list[Any], child: Any, hidden: list[Any]) -> Any:
    """``Project(columns, child)``, with ``hidden`` as its hidden output (when any)."""
    logical = _jvm(spark).org.apache.spark.sql.catalyst.plans.logical
    project = logical.Project(scala_seq(spark, columns), child)
    if hidden:
        project.setTagValue(logical.Project.hiddenOutputTag(), scala_seq(spark, hidden))
    return project


def _hidden_of(spark: SparkSession, plan: Any) -> list[Any]:
    logical = _jvm(spark).org.apache.spark.sql.catalyst.plans.logical
    tag = plan.getTagValue(logical.Project.hiddenOutputTag())
    if not tag.isDefined():
        return []
    hidden = items(tag.get())
    return hidden if any(_is_file_metadata(a) for a in hidden) else []


def _is_file_metadata(attribute: Any) -> bool:
    return _is_marked(attribute.metadata())


def _is_marked(metadata: Any) -> bool:
    return metadata.contains("__metadata_col") and metadata.getString("__metadata_col") == NAME


def frame(spark: SparkSession, plan: Any) -> DataFrame:
    """The DataFrame of a (JVM) logical plan."""
    jss = spark._jsparkSession
    dataset = _jvm(spark).org.apache.spark.sql.classic.Dataset
    return DataFrame(dataset.ofRows(jss, plan), spark)


def _fields(node: Any) -> dict[str, Any]:
    """A plan node's constructor arguments by name (what ``makeCopy`` takes, in order)."""
    return {node.productElementName(i): node.productElement(i) for i in range(node.productArity())}


def items(seq: Any) -> list[Any]:
    """A Scala ``Seq``'s elements."""
    return [seq.apply(i) for i in range(seq.size())]


def scala_seq(spark: SparkSession, values: list[Any]) -> Any:
    """A Scala ``Seq`` of ``values`` (what plan nodes take)."""
    return _jvm(spark).PythonUtils.toSeq(values)


def _array(spark: SparkSession, items: list[Any]) -> Any:
    gateway = spark.sparkContext._gateway
    assert gateway is not None
    array = gateway.new_array(_jvm(spark).java.lang.Object, len(items))
    for i, item in enumerate(items):
        array[i] = item
    return array


def _jvm(spark: SparkSession) -> Any:
    jvm = spark._jvm
    assert jvm is not None, "a classic (not Spark Connect) session"
    return jvm
