"""Re-vendor delta-spark's own Python tests from delta-io/delta, changing only imports.

    python tests/delta_spark_suite/vendor.py [<delta-io/delta git dir>]

Without a git dir it clones the pinned tag (shallow) into a temporary folder. Each module is
written byte-identical to upstream except the import lines in ``IMPORTS``: delta-spark's
package becomes this folder's ``delta_package`` / ``delta_tables`` / ``delta_exceptions``
(the engine the suite runs on: headwater's or delta-spark's own, see ``engine.py``), and
delta-spark's test base (a SparkSession of its own with
delta-spark's jars) becomes this folder's (the test process's one headwater session). The
script fails when an upstream import line it expects is missing, so a new upstream version
is re-read by a person, not silently half-rewritten.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

TAG = "v4.4.0"
COMMIT = "88c008d55b38fb8f49a9a80982004cb5b06a2b59"
UPSTREAM = "python/delta/tests"
HERE = Path(__file__).resolve().parent
BASE = "from delta.testing.utils import DeltaTestCase\n"
OUR_BASE = "from delta_spark_suite.testing import DeltaTestCase\n"
IMPORTS: dict[str, dict[str, str]] = {
    "test_deltatable.py": {
        "from delta.tables import DeltaTable, DeltaTableBuilder, DeltaOptimizeBuilder, "
        "IdentityGenerator\n": "from delta_spark_suite.delta_tables import DeltaTable, "
        "DeltaTableBuilder, DeltaOptimizeBuilder, IdentityGenerator\n",
        BASE: OUR_BASE,
    },
    "test_sql.py": {BASE: OUR_BASE},
    "test_exceptions.py": {
        "import delta.exceptions as exceptions\n": "import delta_spark_suite.delta_exceptions as "
        "exceptions\n",
        BASE: OUR_BASE,
    },
    "test_exceptions_init.py": {
        "import delta  # noqa: F401\n": "import delta_spark_suite.delta_package as delta  # noqa: F401\n",
    },
    "test_pip_utils.py": {"import delta\n": "import delta_spark_suite.delta_package as delta\n"},
}


def rewrite(name: str, text: str) -> str:
    """``text`` with exactly the listed import lines replaced, each exactly once."""
    for old, new in IMPORTS[name].items():
        if text.count(old) != 1:
            raise SystemExit(f"{name}: expected one line {old.strip()!r} upstream; re-read it")
        text = text.replace(old, new)
    return text


def main(git_dir: str | None) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        if git_dir is None:
            git_dir = str(Path(scratch) / "delta")
            subprocess.run(
                [
                    "git",
                    "clone",
                    "-q",
                    "--depth",
                    "1",
                    "--branch",
                    TAG,
                    "https://github.com/delta-io/delta",
                    git_dir,
                ],
                check=True,
            )
        for name in IMPORTS:
            text = subprocess.run(
                ["git", "-C", git_dir, "show", f"{COMMIT}:{UPSTREAM}/{name}"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            (HERE / name).write_text(rewrite(name, text))
            print(f"wrote {name}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
