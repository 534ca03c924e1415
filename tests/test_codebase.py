"""The shape of the code itself: modules small enough to read, and no private name used
outside the module that defines it (what two modules share is a public name)."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "headwater"
MAX_LINES = 600
MODULES = sorted(SRC.rglob("*.py"))
# Tests and bench scripts are read as often as the code: the same cap holds for them.
REPO = SRC.parents[1]
# delta-spark's own tests are vendored unchanged but for imports (tests/delta_spark_suite):
# upstream's files, not ours to split.
VENDORED = set((REPO / "tests" / "delta_spark_suite").glob("test_*.py"))
CAPPED = sorted(
    {*SRC.rglob("*.py"), *(REPO / "tests").rglob("*.py"), *(REPO / "bench").glob("*.py")} - VENDORED
)


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


@pytest.mark.parametrize("path", CAPPED, ids=lambda p: str(p.relative_to(REPO)))
def test_no_module_is_longer_than_six_hundred_lines(path):
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(REPO)} has {lines} lines; split it"


def private_uses(path: Path) -> list[str]:
    """``from headwater.x import _y`` and ``x._y`` on a headwater module ``x``."""
    tree = ast.parse(path.read_text())
    found: list[str] = []
    modules: set[str] = set()  # local names bound to headwater modules
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("headwater"):
            for alias in node.names:
                if _private(alias.name):
                    found.append(f"line {node.lineno}: from {node.module} import {alias.name}")
                elif _is_module(f"{node.module}.{alias.name}"):
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("headwater"):
                    modules.add(alias.asname or alias.name.split(".")[0])
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and _private(node.attr)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
        ):
            found.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_private_name_crosses_a_module_boundary():
    crossings = {str(p.relative_to(SRC)): uses for p in MODULES if (uses := private_uses(p))}
    assert crossings == {}


def test_the_checker_sees_private_imports_and_attributes(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from headwater.delta import write\n"
        "from headwater.delta.log.delta_log import _secret\n"
        "write._helper()\n"
        "write.public()\n"
    )
    assert private_uses(sample) == [
        "line 2: from headwater.delta.log.delta_log import _secret",
        "line 3: write._helper",
    ]
    assert _module_name(SRC / "delta" / "__init__.py") == "headwater.delta"


# File access outside the storage boundary (headwater.storage). Tables, landing folders,
# checkpoints and state may live on object stores, where os/open/shutil cannot reach: those
# paths go through headwater.storage. These modules touch local files of another kind.
LOCAL_FILES_ONLY = {
    "autoloader/state.py": "the SQLite file state lives on the driver's disk",
    "demo.py": "the demo's local working folder",
    "pipelines/cli.py": "scaffolds a project folder on the user's disk",
    "pipelines/define/loader.py": "pipeline source files",
    "pipelines/report/page.py": "writes the HTML report the user asked for",
    "pipelines/define/spec.py": "pipeline spec and source files",
    "pipelines/runner/interrupt.py": "/proc, to end Spark's still-starting JVM on Ctrl-C",
    "shell.py": "the shell's history and script files",
    "worker_site/sitecustomize.py": "the Python packages installed on this host, at start-up",
}
_FILE_CALLS = {"open", "os.link", "os.rename", "os.replace", "os.remove", "os.unlink",
               "os.makedirs", "os.mkdir", "os.listdir", "os.scandir", "os.walk", "os.stat",
               "os.path.exists", "os.path.isdir", "os.path.isfile", "os.path.getsize",
               "os.path.getmtime", "os.path.realpath", "Path", "pathlib.Path"}  # fmt: skip


def file_access(path: Path, root: Path = SRC) -> list[str]:
    """Calls that reach the local filesystem directly: ``open``, ``os.*``, ``shutil.*``, and
    ``Path(...)`` (whose methods read and write local files)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        name = ast.unparse(node.func)
        if name in _FILE_CALLS or name.startswith("shutil."):
            found.append(f"{path.relative_to(root)}:{node.lineno} {name}(...)")
    return found


def test_files_are_reached_only_through_the_storage_boundary():
    outside = [
        p
        for p in MODULES
        if p.relative_to(SRC).parts[0] != "storage"
        and str(p.relative_to(SRC)) not in LOCAL_FILES_ONLY
    ]
    assert [hit for p in outside for hit in file_access(p)] == []


def test_the_file_access_check_sees_open_os_and_shutil(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("import os, shutil\nopen('x')\nos.link('a', 'b')\nshutil.rmtree('d')\n")
    found = [hit.split(" ", 1)[1] for hit in file_access(module, tmp_path)]
    assert found == ["open(...)", "os.link(...)", "shutil.rmtree(...)"]


# One door to the tables: only the catalog and the typed API (headwater.api.Table, through
# which SQL, COPY INTO, the adapter and the pipelines write) register tables in Spark's
# catalog, so every change of a schema reaches the mirror the same way.
MIRROR_KEEPERS = ("catalog", "api.py")


def mirror_registrations(path: Path, root: Path = SRC) -> list[str]:
    """Calls of ``register_in_spark`` (as a method or a name) in ``path``."""
    return [
        f"{path.relative_to(root)}:{node.lineno}"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and "register_in_spark"
        in (getattr(node.func, "attr", None), getattr(node.func, "id", None))
    ]


def test_only_the_catalog_and_the_api_register_tables_in_spark():
    outside = [p for p in MODULES if p.relative_to(SRC).parts[0] not in MIRROR_KEEPERS]
    assert [hit for p in outside for hit in mirror_registrations(p)] == []


def test_the_mirror_check_sees_method_calls_and_names(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("Catalog.of(s).register_in_spark(e)\nregister_in_spark(e)\nregister(e)\n")
    assert mirror_registrations(module, tmp_path) == ["m.py:1", "m.py:2"]


# The pipeline runner passes a flow's many parts around: past six positional parameters a
# call is a row of values whose order only the signature knows, so the rest are
# keyword-only (or grouped in a value).
RUNNER = SRC / "pipelines" / "runner"
MAX_POSITIONAL = 6


def long_signatures(path: Path, limit: int = MAX_POSITIONAL) -> list[str]:
    """Functions and methods in ``path`` taking more than ``limit`` positional parameters
    (``self`` and ``cls`` not counted; ``*args`` and keyword-only ones neither)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names = [a.arg for a in [*node.args.posonlyargs, *node.args.args]]
            if names[:1] in (["self"], ["cls"]):
                names = names[1:]
            if len(names) > limit:
                found.append(f"line {node.lineno}: {node.name} takes {len(names)} positionally")
    return found


def test_no_function_of_the_runner_takes_more_than_six_positional_parameters():
    modules = sorted(RUNNER.rglob("*.py"))
    assert modules, f"no modules under {RUNNER.relative_to(REPO)}: point RUNNER at the runner"
    found = {str(p.relative_to(SRC)): hits for p in modules if (hits := long_signatures(p))}
    assert found == {}


def test_the_signature_check_counts_positional_parameters_only(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "def seven(a, b, c, d, e, f, g): ...\n"
        "def six(a, b, c, d, e, f, *rest, g, h=1, **more): ...\n"
        "class C:\n"
        "    def method(self, a, b, c, d, e, f): ...\n"
        "    @classmethod\n"
        "    def made(cls, a, b, c, d, e, f, /, g): ...\n"
        "    def outer(self):\n"
        "        def inner(a, b, c, d, e, f, g=None): ...\n"
    )
    assert long_signatures(module) == [
        "line 1: seven takes 7 positionally",
        "line 6: made takes 7 positionally",
        "line 8: inner takes 7 positionally",
    ]


# Locations are spelt in one module (storage/paths.py: ``file:`` URIs built and stripped,
# a table's ``_delta_log`` folder named); a literal of either elsewhere is a second spelling
# that drifts from the first. Messages and docstrings may mention them.
PATH_SPELLERS = {
    "storage/paths.py": "the one spelling of a location",
    "autoloader/state.py": "SQLite's own file: URI of its state database, not a table path",
}


def _spells_a_path(text: str) -> bool:
    log = text.lstrip("/")
    return text == "file:" or text.startswith("file:/") or log.split("/")[0] == "_delta_log"


def path_spellings(path: Path, root: Path = SRC) -> list[str]:
    """String literals (f-string parts too; not docstrings) that start a ``file:`` URI or
    join ``_delta_log``."""
    tree = ast.parse(path.read_text())
    docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
    return [
        f"{path.relative_to(root)}:{node.lineno} {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docs
        and _spells_a_path(node.value)
    ]


def test_paths_are_spelt_only_in_storage_paths():
    outside = [p for p in MODULES if str(p.relative_to(SRC)) not in PATH_SPELLERS]
    assert [hit for p in outside for hit in path_spellings(p)] == []


def test_the_path_check_sees_uri_and_log_literals_not_messages(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        '"""Reads file:/x and _delta_log/."""\n'
        'a = f"file:{p}"\n'
        'b = "file:///" + p\n'
        'c = join(root, "_delta_log")\n'
        'd = f"{root}/_delta_log/{v}.json"\n'
        'e = f"not a readable ORC file: {p}; no _delta_log here"\n'
        'f = "file" if local else "s3"\n'
    )
    assert path_spellings(module, tmp_path) == [
        "m.py:2 'file:'",
        "m.py:3 'file:///'",
        "m.py:4 '_delta_log'",
        "m.py:5 '/_delta_log/'",
    ]


# The rooms above the engines and what they may not import of an engine (docs/engines.md:
# they go through headwater.api and headwater.engines.door).
ABOVE_THE_ENGINES = {"pipelines", "sql", "copyinto", "autoloader", "adapter"}
ENGINE_INSIDES = {
    *(f"headwater.delta.{room}" for room in ("log", "read", "write", "files", "dml")),
    "headwater.delta.maintenance",
    "headwater.delta.schema",
    "headwater.engines.delta_spark",
}


def test_the_door_contract_covers_every_room_above_the_engines_with_no_exception():
    tomllib = pytest.importorskip("tomllib")  # (Python 3.11+)

    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    door = [c for c in contracts if c["type"] == "forbidden" and "door" in c["name"]]
    assert len(door) == 1, "one forbidden contract keeps the rooms above the engines out"
    assert {m.removeprefix("headwater.") for m in door[0]["source_modules"]} == ABOVE_THE_ENGINES
    assert set(door[0]["forbidden_modules"]) == ENGINE_INSIDES
    assert "ignore_imports" not in door[0]  # zero exceptions
