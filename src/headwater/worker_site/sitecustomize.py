"""Spark's Python workers import PySpark compiled, from the installed package.

Spark starts every Python worker with its own ``pyspark.zip`` and py4j's zip first on
``PYTHONPATH`` (``PythonUtils.sparkPythonPath``). For PySpark installed by pip those zips
are copies of the installed package, without bytecode: each worker compiles PySpark from
source, about a second of CPU before it does any work. headwater's Delta and Auto Loader
sources are Python data sources, so every stream start pays it (a fresh process, Spark's
``python_streaming_source_runner``), as does every data-source planner and UDF worker:
an empty Delta stream took 2.8 s instead of 1.4 s (2026-11-28, 2 cores).

``headwater.session()`` and ``install()`` put this folder on the workers' ``PYTHONPATH``
(``sc.environment``), so Python's ``site`` imports this module at every worker's start.
It drops a zip that lives inside an installed ``pyspark`` package whose importable copy
sits beside it, the same files, so the workers import that copy's compiled modules. Zips
of a Spark distribution (``$SPARK_HOME/python/lib`` with no installed package next to it)
stay. Then the ``sitecustomize`` this one shadows, if any, runs as it would have.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys

_LIB = os.sep + os.path.join("pyspark", "python", "lib") + os.sep


def _installed_copy(entry: str, folders: set[str]) -> bool:
    """Whether ``entry`` is a zip inside an installed pyspark whose package (and py4j's)
    this interpreter imports from the folder that holds that pyspark (one of ``folders``,
    its path's folders). A worker of another Python (``PYSPARK_PYTHON`` naming one without
    that folder on its path) keeps the zip: without it, it would have no PySpark at all."""
    if not entry.endswith(".zip") or _LIB not in entry:
        return False
    root = entry.split(_LIB)[0]
    name = "pyspark" if os.path.basename(entry) == "pyspark.zip" else "py4j"
    return os.path.normpath(root) in folders and os.path.isfile(
        os.path.join(root, name, "__init__.py")
    )


def _run_shadowed(here: str) -> None:
    """The next ``sitecustomize`` on the path (the one this module hid), run as its own."""
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


_FOLDERS = {os.path.normpath(p) for p in sys.path if p and not p.endswith(".zip")}
sys.path[:] = [entry for entry in sys.path if not _installed_copy(entry, _FOLDERS)]
_run_shadowed(os.path.dirname(os.path.abspath(__file__)))
