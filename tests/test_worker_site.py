"""Spark's Python workers import PySpark compiled, from the installed package, not from
Spark's zip of the same files (``headwater/worker_site/sitecustomize.py`` says why)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyspark

import headwater

SITE = Path(headwater.__file__).parent / "worker_site"
LIB = Path(pyspark.__file__).parent / "python" / "lib"


def python(pythonpath: list[str], code: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(pythonpath)}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_a_worker_path_imports_the_installed_pyspark_and_runs_the_sitecustomize_it_hides(
    tmp_path,
):
    zips = [str(LIB / "pyspark.zip"), *map(str, LIB.glob("py4j-*.zip"))]
    assert Path(zips[0]).is_file() and len(zips) == 2  # Spark's zips, as workers get them
    code = "import pyspark, py4j; print(pyspark.__file__); print(py4j.__file__)"
    # Without the folder, Spark's order imports the zip's uncompiled copy...
    assert ".zip" in python(zips, code)
    # ...with it (after the zips, as install() places it), the installed package.
    shadowed = tmp_path / "theirs"
    shadowed.mkdir()
    (shadowed / "sitecustomize.py").write_text("import builtins; builtins.THEIRS = 1\n")
    out = python(
        [*zips, str(SITE), str(shadowed)], code + "; import builtins; print(builtins.THEIRS)"
    )
    pyspark_file, py4j_file, theirs = out.splitlines()
    assert pyspark_file == pyspark.__file__ and ".zip" not in py4j_file
    assert theirs == "1"  # the user's own sitecustomize still ran


def test_sparks_own_jar_leaves_the_path_and_no_dropped_archive_keeps_an_importer():
    """Spark puts its spark-core jar on the workers' path too; Python keeps an importer per
    archive it searched while starting, which ``importlib.invalidate_caches()`` (called by
    every worker) would read again."""
    (jar,) = (Path(pyspark.__file__).parent / "jars").glob("spark-core_*.jar")
    zips = [str(LIB / "pyspark.zip"), *map(str, LIB.glob("py4j-*.zip"))]
    code = (
        "import sys, zipimport; "
        "print([k for k, v in sys.path_importer_cache.items() "
        "if isinstance(v, zipimport.zipimporter)]); "
        "print([p for p in sys.path if 'pyspark' in p and p.endswith(('.zip', '.jar'))])"
    )
    # Spark's order: its archives first, then the environment's PYTHONPATH
    importers, archives = python([*zips, str(jar), str(SITE)], code).splitlines()
    assert (importers, archives) == ("[]", "[]")


def test_a_distributions_zip_is_kept(tmp_path):
    """A zip of a Spark distribution (no installed pyspark beside it) is all there is."""
    home = tmp_path / "spark" / "python" / "lib"
    home.mkdir(parents=True)
    fake = home / "pyspark.zip"
    fake.write_bytes(b"")
    out = python([str(fake), str(SITE)], "import sys; print(sys.path)")
    assert str(fake) in out


def test_a_zip_of_a_pyspark_this_python_cannot_import_is_kept(tmp_path):
    """Workers of another Python (``PYSPARK_PYTHON``) than the one pyspark is installed in
    do not have its folder on their path: the zip is their only PySpark."""
    other = tmp_path / "other-venv" / "site-packages"
    (other / "pyspark" / "python" / "lib").mkdir(parents=True)
    (other / "pyspark" / "__init__.py").write_text("")
    theirs = other / "pyspark" / "python" / "lib" / "pyspark.zip"
    theirs.write_bytes(b"")
    out = python([str(theirs), str(SITE)], "import sys; print(sys.path)")
    assert str(theirs) in out
    # the same tree on the path: the installed copy is importable, the zip goes
    out = python([str(theirs), str(SITE), str(other)], "import sys; print(sys.path)")
    assert str(theirs) not in out


def test_the_sessions_python_workers_import_the_installed_pyspark(spark):
    from pyspark.sql import functions as F

    @F.udf("string")
    def where_pyspark_is():
        import pyspark

        return pyspark.__file__

    found = spark.range(1).select(where_pyspark_is()).first()[0]
    assert found == pyspark.__file__, found
