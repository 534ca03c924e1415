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

Spark also puts its own ``spark-core`` jar on that path (``SparkContext.jarOfObject``, from
when PySpark shipped inside Spark's assembly jar); the jar of an installed pyspark holds no
Python and goes too. Python had already read the dropped archives' directories while it
started (the path comes before the standard library), and keeps a ``zipimporter`` per
archive in ``sys.path_importer_cache``: ``importlib.invalidate_caches()``, which Spark's
workers call at their start (``setup_spark_files``), reads each of them again, about 70 ms
of CPU for spark-core's 6,000 entries and pyspark's zip; their cached importers go with them.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys

_LIB = os.sep + os.path.join("pyspark", "python", "lib") + os.sep
_JARS = os.sep + os.path.join("pyspark", "jars") + os.sep


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


def _spark_jar(entry: str, folders: set[str]) -> bool:
    """Whether ``entry`` is Spark's own ``spark-core`` jar inside an installed pyspark (one
    of ``folders``), which Spark puts on its workers' path though it holds no Python."""
    if not entry.endswith(".jar") or _JARS not in entry:
        return False
    root, name = entry.rsplit(_JARS, 1)
    return name.startswith("spark-core_") and os.path.normpath(root) in folders


def _forget_importers(dropped: list[str]) -> None:
    """The cached importers of dropped archives (and of folders inside them)."""
    for key in list(sys.path_importer_cache):
        if any(key == entry or key.startswith(entry + os.sep) for entry in dropped):
            del sys.path_importer_cache[key]


def _run_shadowed(here: str) -> None:
    """The next ``sitecustomize`` on the path (the one this module hid), run as its own."""
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


_FOLDERS = {os.path.normpath(p) for p in sys.path if p and not p.endswith(".zip")}
_DROPPED = [e for e in sys.path if _installed_copy(e, _FOLDERS) or _spark_jar(e, _FOLDERS)]
sys.path[:] = [entry for entry in sys.path if entry not in _DROPPED]
_forget_importers(_DROPPED)
_run_shadowed(os.path.dirname(os.path.abspath(__file__)))
