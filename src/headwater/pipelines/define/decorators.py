"""Definitions as users of the known system write them: ``@dlt.table``, ``@dlt.view``,
``dlt.read``, ``dlt.create_streaming_table``, ``@dlt.append_flow(once=True)``, and the
``pyspark.pipelines`` names.

The runner provides this module as ``dlt`` while it loads pipeline sources, and
``headwater.pipelines`` exports it for notebooks and IDEs. Each function only records a
definition in the active registry (the one :func:`~headwater.pipelines.define.loader.load`
installs through SDP's ``graph_element_registration_context``); nothing here reads or
writes data, so definitions may be evaluated as often as the graph needs.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from pyspark.pipelines.flow import AutoCdcFlow as SdpAutoCdcFlow
from pyspark.pipelines.graph_element_registry import get_active_graph_element_registry
from pyspark.pipelines.source_code_location import SourceCodeLocation
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.types import StructType

from headwater.adapter.resolution import current
from headwater.errors import PipelineDefinitionError
from headwater.pipelines.define.auto_cdc import auto_cdc, cdc_flow, snapshot_cdc
from headwater.pipelines.define.elements import (
    Dataset,
    DatasetKind,
    Expectation,
    ExpectationAction,
    Flow,
    Origin,
    RefreshPolicy,
)
from headwater.pipelines.define.registry import EXPECTATIONS, Registry

QueryFunction = Callable[[], DataFrame]
F = TypeVar("F", bound=Callable[..., Any])


def active_registry() -> Registry:
    registry = get_active_graph_element_registry()
    if not isinstance(registry, Registry):
        raise PipelineDefinitionError(
            "[GRAPH_ELEMENT_DEFINED_OUTSIDE_OF_DECLARATIVE_PIPELINE] headwater's pipeline "
            "definitions are registered only while a pipeline loads its sources: run them "
            "with `headwater pipelines run` or headwater.pipelines.run(...)."
        )
    return registry


def origin_of_function(func: Callable[..., Any]) -> Origin:
    code = getattr(func, "__code__", None)
    if code is None:
        return Origin("<unknown>")
    return Origin(code.co_filename, code.co_firstlineno)


def origin_of_caller(depth: int = 2) -> Origin:
    frame = sys._getframe(depth)
    return Origin(frame.f_code.co_filename, frame.f_lineno)


def dataset_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """Decorator arguments as :class:`Dataset` fields: unset ones dropped, column lists as
    tuples, property maps as strings (users pass numbers and booleans)."""
    clean = {k: v for k, v in fields.items() if v is not None}
    for key in ("partition_cols", "cluster_by"):
        if key in clean:
            clean[key] = tuple(clean[key])
    for key in ("table_properties", "spark_conf", "options"):
        if key in clean:
            clean[key] = {str(k): str(v) for k, v in clean[key].items()}
    if "refresh_policy" in clean:
        clean["refresh_policy"] = RefreshPolicy.parse(clean["refresh_policy"])
    return clean


def _define(
    kind: DatasetKind, func: QueryFunction, name: str | None, **fields: Any
) -> QueryFunction:
    """Register a dataset defined by ``func``'s query, and its implicit flow."""
    if not callable(func):
        raise PipelineDefinitionError(
            f"[PIPELINE_NOT_A_FUNCTION] @{kind} decorates a function returning a DataFrame, "
            f"not {type(func).__name__}."
        )
    registry = active_registry()
    origin = origin_of_function(func)
    dataset_name = name or func.__name__
    clean = dataset_fields(fields)
    registry.add_dataset(Dataset(dataset_name, kind, origin, **clean))
    spark_conf = clean.get("spark_conf", {})
    registry.add_flow(Flow(dataset_name, dataset_name, func, origin, spark_conf=spark_conf))
    return func


def _decorator(kind: DatasetKind, query_function: Any, fields: dict[str, Any]) -> Any:
    name = fields.pop("name", None)
    if query_function is not None and callable(query_function):
        return _define(kind, query_function, name, **fields)

    def decorate(func: QueryFunction) -> QueryFunction:
        return _define(kind, func, name, **fields)

    return decorate


def table(
    query_function: QueryFunction | None = None,
    *,
    name: str | None = None,
    comment: str | None = None,
    spark_conf: Mapping[str, str] | None = None,
    table_properties: Mapping[str, str] | None = None,
    path: str | None = None,
    partition_cols: Sequence[str] | None = None,
    cluster_by: Sequence[str] | None = None,
    schema: StructType | str | None = None,
    temporary: bool = False,
    private: bool | None = None,
    format: str | None = None,
    row_filter: str | None = None,
    refresh_policy: str | None = None,
) -> Any:
    """``@dlt.table``: a streaming table when the function returns a streaming DataFrame,
    a materialized view otherwise (``refresh_policy``: see :func:`materialized_view`)."""
    if path is not None:
        raise PipelineDefinitionError(
            "[PIPELINE_PATH_NOT_SUPPORTED] table(path=...) is not supported: the pipeline "
            "keeps its tables in the catalog's warehouse (set `catalog`/`database` in the spec)."
        )
    if row_filter is not None:
        raise PipelineDefinitionError(
            "[PIPELINE_ROW_FILTER_NOT_SUPPORTED] row_filter is not supported."
        )
    return _decorator(
        "table",
        query_function,
        {
            "name": name,
            "comment": comment,
            "spark_conf": spark_conf,
            "table_properties": table_properties,
            "partition_cols": partition_cols,
            "cluster_by": cluster_by,
            "schema": schema,
            "format": format,
            "private": private or temporary or None,
            "refresh_policy": refresh_policy,
        },
    )


def materialized_view(
    query_function: QueryFunction | None = None,
    *,
    name: str | None = None,
    comment: str | None = None,
    spark_conf: Mapping[str, str] | None = None,
    table_properties: Mapping[str, str] | None = None,
    partition_cols: Sequence[str] | None = None,
    cluster_by: Sequence[str] | None = None,
    schema: StructType | str | None = None,
    format: str | None = None,
    private: bool | None = None,
    refresh_policy: str | None = None,
) -> Any:
    """``@dp.materialized_view``: refreshed in batch after its inputs' flows finish, by
    the least work that gives the exact rows under ``refresh_policy`` (``auto``,
    ``incremental``, ``incremental_strict``, ``full``)."""
    fields = dict(locals())
    fields.pop("query_function")
    return _decorator("materialized_view", query_function, fields)


def temporary_view(
    query_function: QueryFunction | None = None,
    *,
    name: str | None = None,
    comment: str | None = None,
    spark_conf: Mapping[str, str] | None = None,
) -> Any:
    """``@dp.temporary_view`` / ``@dlt.view``: evaluated where it is read, never stored."""
    return _decorator(
        "temporary_view",
        query_function,
        {"name": name, "comment": comment, "spark_conf": spark_conf},
    )


view = temporary_view


def create_streaming_table(
    name: str,
    *,
    comment: str | None = None,
    spark_conf: Mapping[str, str] | None = None,
    table_properties: Mapping[str, str] | None = None,
    partition_cols: Sequence[str] | None = None,
    cluster_by: Sequence[str] | None = None,
    path: str | None = None,
    schema: StructType | str | None = None,
    format: str | None = None,
    expect_all: Mapping[str, str | Column] | None = None,
    expect_all_or_drop: Mapping[str, str | Column] | None = None,
    expect_all_or_fail: Mapping[str, str | Column] | None = None,
    expect_all_or_quarantine: Mapping[str, str | Column] | None = None,
    row_filter: str | None = None,
) -> None:
    """A streaming table with no query of its own: flows (``append_flow``) feed it."""
    if path is not None:
        raise PipelineDefinitionError(
            "[PIPELINE_PATH_NOT_SUPPORTED] create_streaming_table(path=...) is not supported."
        )
    if row_filter is not None:
        raise PipelineDefinitionError(
            "[PIPELINE_ROW_FILTER_NOT_SUPPORTED] row_filter is not supported."
        )
    fields = {
        "comment": comment,
        "spark_conf": spark_conf,
        "table_properties": table_properties,
        "partition_cols": partition_cols,
        "cluster_by": cluster_by,
        "schema": schema,
        "format": format,
    }
    rules = (
        *expectations(expect_all, "warn"),
        *expectations(expect_all_or_drop, "drop"),
        *expectations(expect_all_or_fail, "fail"),
        *expectations(expect_all_or_quarantine, "quarantine"),
    )
    dataset = Dataset(
        name,
        "streaming_table",
        origin_of_caller(),
        expectations=rules,
        **dataset_fields(fields),
    )
    active_registry().add_dataset(dataset)


create_streaming_live_table = create_streaming_table  # the known system's older names
create_target_table = create_streaming_table


def append_flow(
    *,
    target: str,
    name: str | None = None,
    comment: str | None = None,
    spark_conf: Mapping[str, str] | None = None,
    once: bool = False,
) -> Callable[[QueryFunction], QueryFunction]:
    """A flow appending its query's rows into ``target``; ``once=True``: a backfill that
    runs a single time (again only after a full refresh of the target)."""

    def decorate(func: QueryFunction) -> QueryFunction:
        active_registry().add_flow(
            Flow(
                name or func.__name__,
                target,
                func,
                origin_of_function(func),
                spark_conf=dict(spark_conf or {}),
                once=once,
                implicit=False,
            )
        )
        return func

    return decorate


def create_auto_cdc_flow(
    target: str,
    source: str,
    keys: Any,
    sequence_by: Any,
    where: Any = None,
    ignore_null_updates: bool = False,
    apply_as_deletes: Any = None,
    apply_as_truncates: Any = None,
    column_list: Any = None,
    except_column_list: Any = None,
    stored_as_scd_type: Any = 1,
    track_history_column_list: Any = None,
    track_history_except_column_list: Any = None,
    flow_name: str | None = None,
    once: bool = False,
    *,
    name: str | None = None,
    spark_conf: Mapping[str, str] | None = None,
    ignore_null_updates_column_list: Any = None,
    ignore_null_updates_except_column_list: Any = None,
    system_sequence_by: Any = None,
    columns_to_update: Any = None,
    unavailable_columns: Any = None,
) -> None:
    """A flow applying the change events of ``source`` (a stream) to ``target`` (a
    streaming table) as SCD type 1 or 2, ordered by ``sequence_by`` whatever order they
    arrive in (see :mod:`headwater.pipelines.cdc.apply`). The arguments in ``dlt``'s order;
    the platform's newer ones are taken by name (a value is refused, not ignored).
    ``unavailable_columns`` names a source column (``ARRAY<STRING>``) listing, per event,
    the columns it does not carry: they keep the value they had before it."""
    not_supported(
        ignore_null_updates_column_list=ignore_null_updates_column_list,
        ignore_null_updates_except_column_list=ignore_null_updates_except_column_list,
        system_sequence_by=system_sequence_by,
        columns_to_update=columns_to_update,
    )
    spec = auto_cdc(
        source,
        keys,
        sequence_by,
        where=where,
        ignore_null_updates=ignore_null_updates,
        apply_as_deletes=apply_as_deletes,
        apply_as_truncates=apply_as_truncates,
        column_list=column_list,
        except_column_list=except_column_list,
        stored_as_scd_type=stored_as_scd_type,
        track_history_column_list=track_history_column_list,
        track_history_except_column_list=track_history_except_column_list,
        unavailable_columns=unavailable_columns,
    )
    flow = cdc_flow(target, spec, origin_of_caller(), flow_name or name, spark_conf, once)
    active_registry().add_flow(flow)


def create_auto_cdc_from_snapshot_flow(
    target: str,
    source: Any = None,
    keys: Any = None,
    stored_as_scd_type: Any = 1,
    track_history_column_list: Any = None,
    track_history_except_column_list: Any = None,
    once: bool = False,
    *,
    name: str | None = None,
    snapshot_and_version: Any = None,
) -> None:
    """A flow turning full snapshots into changes of ``target``: ``source`` is a table
    (read whole at each update) or ``next_snapshot_and_version(latest_version)``
    returning ``(DataFrame, version)`` or None (see :mod:`.snapshots`); the
    platform's earlier releases named the function ``snapshot_and_version``."""
    if (source is None) == (snapshot_and_version is None):
        raise TypeError(
            "give source (a table name or a function next_snapshot_and_version) or "
            "snapshot_and_version (the function), not both."
            if source is not None
            else "source is required: a table name or a function next_snapshot_and_version."
        )
    if keys is None:
        raise TypeError("keys is required: the columns identifying a row.")
    spec = snapshot_cdc(
        source if source is not None else snapshot_and_version, keys, stored_as_scd_type,
        track_history_column_list, track_history_except_column_list,
    )  # fmt: skip
    active_registry().add_flow(cdc_flow(target, spec, origin_of_caller(), name, once=once))


def not_supported(**arguments: Any) -> None:
    """Refuse a value for an argument headwater takes by name but does not apply yet."""
    given = [name for name, value in arguments.items() if value is not None]
    if given:
        origin = origin_of_caller(3)  # the user's call of the flow function
        raise PipelineDefinitionError(
            f"[PIPELINE_AUTO_CDC_UNSUPPORTED] AUTO CDC argument {given[0]} is not supported "
            "yet; leave it out (ignore_null_updates=True applies to every column).",
            origin.file,
            origin.line,
        )


apply_changes_from_snapshot = create_auto_cdc_from_snapshot_flow  # the older name


def sdp_create_auto_cdc_flow(
    target: str,
    source: str,
    keys: Any,
    sequence_by: Any,
    apply_as_deletes: Any = None,
    column_list: Any = None,
    except_column_list: Any = None,
    stored_as_scd_type: Any = None,
    name: str | None = None,
    *,
    track_history_column_list: Any = None,
    track_history_except_column_list: Any = None,
    spark_conf: Mapping[str, str] | None = None,
    unavailable_columns: Any = None,
) -> None:
    """``pyspark.pipelines.create_auto_cdc_flow`` in SDP's argument order (installed
    while sources load: SDP's own builds Spark Connect Columns, which need grpc). The
    arguments become SDP's own flow element, registered as SDP registers it."""
    origin = origin_of_caller()
    arguments = dict(locals())
    del arguments["origin"]
    arguments["name"] = name or target
    arguments["spark_conf"] = dict(spark_conf or {})
    location = SourceCodeLocation(origin.file, origin.line or 0)
    # pyspark 4.2's element has no SCD2 fields (track_history_*) nor spark_conf: those
    # go to the registry beside it.
    fields = {f.name for f in dataclasses.fields(SdpAutoCdcFlow)}
    element = SdpAutoCdcFlow(
        **{k: v for k, v in arguments.items() if k in fields}, source_code_location=location
    )
    beyond = {k: v for k, v in arguments.items() if k not in fields}
    active_registry().register_auto_cdc_flow(element, **beyond)


apply_changes = create_auto_cdc_flow  # the known system's older name


def create_sink(name: str, format: str, options: Mapping[str, str] | None = None) -> None:
    """An external target for flows (``delta`` with a ``path``, ``kafka``, ...): written,
    never cleared by a full refresh."""
    active_registry().add_dataset(
        Dataset(
            name,
            "sink",
            origin_of_caller(),
            format=format,
            options={str(k): str(v) for k, v in (options or {}).items()},
        )
    )


def read(name: str) -> DataFrame:
    """``dlt.read``: a batch read of a dataset of this pipeline (``spark.read.table``)."""
    return _session().read.table(name)


def read_stream(name: str) -> DataFrame:
    """``dlt.read_stream``: a streaming read (``spark.readStream.table``)."""
    return _session().readStream.table(name)


def _session() -> SparkSession:
    """The pipeline's session (flows run in worker threads, where Spark's notion of the
    active session does not reach)."""
    spark = getattr(current(), "spark", None) or SparkSession.getActiveSession()
    if spark is None:
        raise PipelineDefinitionError("dlt.read needs an active SparkSession.")
    return spark


# -- expectations ------------------------------------------------------------------------------


def expectations(
    rules: Mapping[str, str | Column] | None, action: ExpectationAction
) -> tuple[Expectation, ...]:
    """``{name: constraint}`` as expectations; a constraint is SQL text or a Column."""
    found = []
    for name, constraint in (rules or {}).items():
        if isinstance(constraint, Column):
            text = str(constraint)
            text = text[8:-2] if text.startswith("Column<'") else text
            found.append(Expectation(str(name), text, action, column=constraint))
        elif isinstance(constraint, str) and constraint.strip():
            found.append(Expectation(str(name), constraint, action))
        else:
            raise PipelineDefinitionError(
                f"[PIPELINE_EXPECTATION_INVALID] Expectation '{name}' needs a constraint: a SQL "
                f"boolean expression (a string) or a Column, not {constraint!r}."
            )
    return tuple(found)


def _expect(rules: tuple[Expectation, ...]) -> Callable[[F], F]:
    """Attach ``rules`` to the dataset the decorated function defines, whichever side of
    ``@dlt.table`` the decorator is written on."""

    def decorate(func: F) -> F:
        if not callable(func):
            raise PipelineDefinitionError(
                "[PIPELINE_EXPECTATION_MISPLACED] An @expect decorator must be written below "
                "@dp.table / @dp.materialized_view / @dp.temporary_view, right above the "
                "function (SDP's decorators return nothing to decorate).",
                *_location(origin_of_caller(2)),
            )
        registry = active_registry()
        target = registry.implicit_target(func)
        if target is not None:
            registry.add_expectations(target, rules)
        else:
            setattr(func, EXPECTATIONS, (*rules, *getattr(func, EXPECTATIONS, ())))
        return func

    return decorate


def _location(origin: Origin) -> tuple[str, int | None]:
    return origin.file, origin.line


def expect(name: str, constraint: str | Column) -> Callable[[F], F]:
    """Count the rows breaking ``constraint``; keep them."""
    return _expect(expectations({name: constraint}, "warn"))


def expect_or_drop(name: str, constraint: str | Column) -> Callable[[F], F]:
    """Remove the rows breaking ``constraint`` (and count them)."""
    return _expect(expectations({name: constraint}, "drop"))


def expect_or_fail(name: str, constraint: str | Column) -> Callable[[F], F]:
    """Stop the flow at the first row breaking ``constraint``; nothing of its batch lands."""
    return _expect(expectations({name: constraint}, "fail"))


def expect_or_quarantine(name: str, constraint: str | Column) -> Callable[[F], F]:
    """Divert the rows breaking ``constraint`` to the dataset's quarantine table, with the
    names of every rule they broke (headwater's; not in the known system)."""
    return _expect(expectations({name: constraint}, "quarantine"))


def expect_all(rules: Mapping[str, str | Column]) -> Callable[[F], F]:
    return _expect(expectations(rules, "warn"))


def expect_all_or_drop(rules: Mapping[str, str | Column]) -> Callable[[F], F]:
    return _expect(expectations(rules, "drop"))


def expect_all_or_fail(rules: Mapping[str, str | Column]) -> Callable[[F], F]:
    return _expect(expectations(rules, "fail"))


def expect_all_or_quarantine(rules: Mapping[str, str | Column]) -> Callable[[F], F]:
    return _expect(expectations(rules, "quarantine"))


EXPECT_FUNCTIONS = (
    expect,
    expect_or_drop,
    expect_or_fail,
    expect_or_quarantine,
    expect_all,
    expect_all_or_drop,
    expect_all_or_fail,
    expect_all_or_quarantine,
)
