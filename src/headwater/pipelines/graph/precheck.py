"""Errors a pipeline's sources show without Spark, found before Spark has started.

A session takes 15-30 s to start; a typo should not wait for it. This reads every source
the spec names and raises the first error that needs no Spark, in the same words and
``file:line`` form the runner would use later:

* Python that does not compile (``PIPELINE_PYTHON_SYNTAX_ERROR``);
* SQL files the SQL front refuses (:func:`.definitions.parse_sql_file`, the parser the
  runner uses), and literal ``spark.sql("SELECT ...")`` queries inside definitions;
* a keyword argument that ``dlt`` / ``pyspark.pipelines`` functions do not take, checked
  against the signatures the loader installs (``PIPELINE_UNKNOWN_ARGUMENT``);
* a dataset defined twice (``PIPELINE_DUPLICATE_DATASET``, through the registry's check);
* flows that read each other in a cycle (``PIPELINE_CYCLE``), from explicit references:
  ``dlt.read("x")``, ``spark.read.table("x")``, ``spark.readStream.table("x")``,
  ``spark.table("x")``, literal ``spark.sql`` queries and the reads of SQL queries.

Only what is certain is judged: Python definitions count when they are statements of the
module itself (not inside an ``if``, a loop or a function, which may run any number of
times), names only when written as string literals, and reads only where they run
whenever the query function runs (not under an ``if``, a loop, a ``try`` or a nested
function). Everything else is left to the runner, which finds it with Spark.
"""

from __future__ import annotations

import ast
import difflib
import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyspark.pipelines as sdp

from headwater import storage
from headwater.errors import PipelineDefinitionError
from headwater.pipelines.define import decorators
from headwater.pipelines.define.elements import Dataset, DatasetKind, Origin
from headwater.pipelines.define.loader import python_syntax_error, sdp_additions
from headwater.pipelines.define.registry import Registry
from headwater.pipelines.define.spec import PipelineSpec
from headwater.pipelines.graph.reads import SQL_QUERY_STARTS, Names
from headwater.pipelines.sql_files.definitions import parse_sql_file
from headwater.pipelines.sql_files.queries import parse_query

UNKNOWN_ARGUMENT = "PIPELINE_UNKNOWN_ARGUMENT"
# Module names whose functions are the pipeline API, and which table of functions answers.
API_MODULES = {"dlt": "dlt", "headwater.pipelines": "dlt", "pyspark.pipelines": "sdp"}
DATASET_DECORATORS: dict[str, DatasetKind] = {
    "table": "table",
    "materialized_view": "materialized_view",
    "temporary_view": "temporary_view",
    "view": "temporary_view",
}
STREAMING_TABLES = ("create_streaming_table", "create_streaming_live_table", "create_target_table")
CDC_FLOWS = (
    "create_auto_cdc_flow",
    "apply_changes",
    "create_auto_cdc_from_snapshot_flow",
    "apply_changes_from_snapshot",
)
# Nodes whose inside may run or not (or several times) when a query function runs.
CONDITIONAL = (
    ast.If,
    ast.IfExp,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.Try,
    ast.Match,
    ast.BoolOp,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.Lambda,
    ast.ClassDef,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


@dataclass(frozen=True)
class KnownFlow:
    """A flow as far as the text says: its target and the names it certainly reads."""

    name: str
    target: str
    reads: tuple[str, ...]
    origin: Origin


@dataclass
class Known:
    """What the sources say without running: datasets (in the runner's registry, which
    refuses duplicates) and flows."""

    registry: Registry = field(default_factory=Registry)
    flows: list[KnownFlow] = field(default_factory=list)


def precheck(spec: PipelineSpec) -> Known:
    """Raise the first error in ``spec``'s sources that needs no Spark; what the text
    says of the graph otherwise."""
    known = Known()
    sql_conf: dict[str, str] = {}
    for file in spec.source_files():
        text = storage.read_bytes(str(file))
        if file.suffix == ".py":
            check_python(text, file, known)
        else:
            check_sql(text, file, {**spec.configuration, **sql_conf}, known, sql_conf)
    check_cycles(known, Names(spec.database))
    return known


# -- SQL ---------------------------------------------------------------------------------------


def check_sql(
    data: bytes, file: Path, configuration: dict[str, str], known: Known, sql_conf: dict[str, str]
) -> None:
    """Parse as the runner does; its ``SET`` values answer the files after it."""
    parsed = parse_sql_file(data.decode("utf-8"), str(file), configuration)
    sql_conf.update(parsed.conf)
    for item in parsed.datasets:
        known.registry.add_dataset(item.dataset)
        if item.query is not None:
            reads = tuple(r.name for r in item.query.references)
            known.flows.append(KnownFlow(item.name, item.name, reads, item.origin))
    for flow in parsed.flows:
        reads = tuple(r.name for r in flow.query.references)
        known.flows.append(KnownFlow(flow.name, flow.target, reads, flow.origin))
    for cdc in parsed.auto_cdc:
        source = cdc.changes.source
        reads = (source,) if isinstance(source, str) else ()
        known.flows.append(KnownFlow(cdc.name or cdc.target, cdc.target, reads, cdc.origin))


# -- Python ------------------------------------------------------------------------------------


def check_python(data: bytes, file: Path, known: Known) -> None:
    """Compile (the syntax errors the runner would meet), check API calls' keyword
    arguments, and record the module's own definitions."""
    try:
        tree = ast.parse(data, str(file))
        compile(tree, str(file), "exec", dont_inherit=True)  # what only the compiler sees
    except SyntaxError as e:
        raise python_syntax_error(e, file) from None
    api = ApiNames.of(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            api.check_arguments(node, file)
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            decorated(statement, api, file, known)
        elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            called(statement.value, api, file, known)


@dataclass
class ApiNames:
    """Which names of one module are the pipeline API: module aliases (``dlt``, ``dp``)
    and functions imported by name (``from dlt import table``)."""

    modules: dict[str, str] = field(default_factory=dict)  # dotted alias -> table
    functions: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (table, attr)

    @classmethod
    def of(cls, tree: ast.Module) -> ApiNames:
        names = cls()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in API_MODULES:
                        names.modules[alias.asname or alias.name] = API_MODULES[alias.name]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    dotted = f"{node.module}.{alias.name}"
                    if dotted in API_MODULES:
                        names.modules[alias.asname or alias.name] = API_MODULES[dotted]
                    elif node.module in API_MODULES:
                        table = API_MODULES[node.module]
                        if alias.name == "*":
                            for attr in api_functions(table):
                                names.functions[attr] = (table, attr)
                        else:
                            names.functions[alias.asname or alias.name] = (table, alias.name)
        return names

    def resolve(self, func: ast.expr) -> tuple[str, str] | None:
        """``(table, attr)`` when ``func`` names a pipeline API function."""
        dotted = dotted_name(func)
        if dotted is None:
            return None
        if dotted in self.functions:
            return self.functions[dotted]
        module, _, attr = dotted.rpartition(".")
        table = self.modules.get(module)
        return (table, attr) if table else None

    def check_arguments(self, call: ast.Call, file: Path) -> None:
        found = self.resolve(call.func)
        if found is None:
            return
        table, attr = found
        func = api_functions(table).get(attr)
        if func is None:
            return
        parameters = inspect.signature(func).parameters
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
            return
        allowed = [n for n, p in parameters.items() if p.kind is not p.POSITIONAL_ONLY]
        for keyword in call.keywords:
            if keyword.arg is not None and keyword.arg not in allowed:
                close = difflib.get_close_matches(keyword.arg, allowed, n=1)
                hint = f"did you mean '{close[0]}'?" if close else f"it takes {', '.join(allowed)}."
                raise PipelineDefinitionError(
                    f"[{UNKNOWN_ARGUMENT}] {attr}() has no argument '{keyword.arg}': {hint}",
                    str(file),
                    keyword.lineno,
                )

    def bound(self, call: ast.Call) -> tuple[str, dict[str, ast.expr]] | None:
        """``(attr, arguments by parameter name)`` of an API call, when they bind."""
        found = self.resolve(call.func)
        func = api_functions(found[0]).get(found[1]) if found else None
        if found is None or func is None:
            return None
        if any(isinstance(a, ast.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords
        ):
            return None
        try:
            bound = inspect.signature(func).bind_partial(
                *call.args, **{k.arg: k.value for k in call.keywords if k.arg}
            )
        except TypeError:
            return None
        return found[1], dict(bound.arguments)


def api_functions(table: str) -> dict[str, Callable[..., Any]]:
    """The functions a pipeline source reaches as ``dlt.x`` (table ``dlt``: headwater's
    definitions module) or ``dp.x`` (``sdp``: ``pyspark.pipelines`` as the loader leaves
    it while sources run)."""
    if table == "dlt":
        return {
            n: f
            for n, f in vars(decorators).items()
            if not n.startswith("_")
            and inspect.isfunction(f)
            and f.__module__ == decorators.__name__
        }
    found = {n: getattr(sdp, n) for n in getattr(sdp, "__all__", ())}
    found.update(sdp_additions())
    return found


def dotted_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def literal(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def decorated(
    func: ast.FunctionDef | ast.AsyncFunctionDef, api: ApiNames, file: Path, known: Known
) -> None:
    """A module-level query function: the dataset and flow its decorators define."""
    origin = Origin(str(file), min([d.lineno for d in func.decorator_list] + [func.lineno]))
    for decorator in func.decorator_list:
        call = decorator if isinstance(decorator, ast.Call) else None
        bound = api.bound(call) if call is not None else None
        resolved = api.resolve(decorator) if call is None else None
        attr, arguments = bound if bound else (resolved[1] if resolved else None, {})
        if attr is None:
            continue
        if attr in DATASET_DECORATORS:
            name = literal(arguments.get("name")) if "name" in arguments else func.name
            if name is None:
                return
            known.registry.add_dataset(Dataset(name, DATASET_DECORATORS[attr], origin))
            known.flows.append(KnownFlow(name, name, tuple(reads_of(func, api, file)), origin))
            return
        if attr == "append_flow":
            target = literal(arguments.get("target"))
            name = literal(arguments.get("name")) if "name" in arguments else func.name
            if target is not None and name is not None:
                reads = tuple(reads_of(func, api, file))
                known.flows.append(KnownFlow(name, target, reads, origin))
            return


def called(call: ast.Call, api: ApiNames, file: Path, known: Known) -> None:
    """A module-level call: a streaming table, a sink or an AUTO CDC flow."""
    bound = api.bound(call)
    if bound is None:
        return
    attr, arguments = bound
    origin = Origin(str(file), call.lineno)
    if attr in STREAMING_TABLES or attr == "create_sink":
        name = literal(arguments.get("name"))
        if name is not None:
            kind: DatasetKind = "sink" if attr == "create_sink" else "streaming_table"
            known.registry.add_dataset(Dataset(name, kind, origin))
    elif attr in CDC_FLOWS:
        target = literal(arguments.get("target"))
        source = literal(arguments.get("source"))
        if target is not None:
            given = arguments.get("name") or arguments.get("flow_name")
            name = literal(given) if given is not None else target
            reads = (source,) if source is not None else ()
            known.flows.append(KnownFlow(name or target, target, reads, origin))


def certain_nodes(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node of ``body`` that runs whenever the body runs to its end."""
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, CONDITIONAL):
            stack.extend(reversed(list(ast.iter_child_nodes(node))))


def reads_of(
    func: ast.FunctionDef | ast.AsyncFunctionDef, api: ApiNames, file: Path
) -> Iterator[str]:
    """The dataset names a query function certainly reads."""
    for node in certain_nodes(func.body):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        name = literal(node.args[0])
        if name is None:
            continue
        resolved = api.resolve(node.func)
        if resolved is not None and resolved[1] in ("read", "read_stream"):
            yield name
        elif isinstance(node.func, ast.Attribute) and dotted_root(node.func.value) == "spark":
            if node.func.attr == "table":
                yield name
            elif node.func.attr == "sql" and name.lstrip().lower().startswith(SQL_QUERY_STARTS):
                query = parse_query(name, str(file), node.args[0].lineno)
                yield from (r.name for r in query.references)


def dotted_root(node: ast.expr) -> str | None:
    """``spark`` for ``spark``, ``spark.read``, ``spark.readStream.option(...)``."""
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            node = node.value
        elif isinstance(node, ast.Name):
            return node.id
        else:
            return None


# -- the graph ---------------------------------------------------------------------------------


def check_cycles(known: Known, names: Names) -> None:
    """Flows that wait on each other whatever Spark says: each reads a dataset of the
    pipeline that the next one writes."""
    datasets = set()
    for dataset in known.registry.datasets.values():
        datasets.add(names.key(dataset.name))
    into: dict[str, list[KnownFlow]] = {}
    for flow in known.flows:
        into.setdefault(key_or_none(names, flow.target) or "", []).append(flow)
    waits: dict[str, list[tuple[str, KnownFlow]]] = {}
    for flow in known.flows:
        for read in flow.reads:
            key = key_or_none(names, read)
            if key in datasets:
                waits.setdefault(flow.name, []).extend((key, f) for f in into.get(key, []))
    done: set[str] = set()
    for flow in known.flows:
        path = cycle_from(flow, waits, done, [])
        if path:
            raise cycle_error(path)


def key_or_none(names: Names, name: str) -> str | None:
    try:
        return names.key(name)
    except PipelineDefinitionError:
        return None


def cycle_from(
    flow: KnownFlow,
    waits: dict[str, list[tuple[str, KnownFlow]]],
    done: set[str],
    path: list[tuple[KnownFlow, str]],
) -> list[tuple[KnownFlow, str]] | None:
    """The flows from the first one waited on again back to it, each with the key it
    reads; None when no cycle runs through ``flow``."""
    on_path = [f.name for f, _ in path]
    if flow.name in on_path:
        return path[on_path.index(flow.name) :]
    if flow.name in done:
        return None
    for key, writer in waits.get(flow.name, []):
        found = cycle_from(writer, waits, done, [*path, (flow, key)])
        if found:
            return found
    done.add(flow.name)
    return None


def cycle_error(path: list[tuple[KnownFlow, str]]) -> PipelineDefinitionError:
    """In the runner's words (:func:`.analysis.analyse`)."""
    first = path[0][0]
    chain = " -> ".join(f"{f.name} (reads {key})" for f, key in path) + f" -> {first.name}"
    return PipelineDefinitionError(
        f"[PIPELINE_CYCLE] Flows read each other in a cycle: {chain}. Break the cycle.",
        first.origin.file,
        first.origin.line,
    )
