"""headwater.stream_runner: in Spark's streaming source runner pyarrow builds arrays without
importing pandas (about 0.3 s of every stream's start); anywhere else nothing changes.
Each case runs in a fresh interpreter, as the runner is one (no Spark needed)."""

from __future__ import annotations

import subprocess
import sys

CASE = """
import sys
if {runner!r}:
    sys.orig_argv = [sys.executable, "-m", "pyspark.sql.streaming.python_streaming_source_runner"]
from headwater import stream_runner
assert stream_runner.in_runner() is {runner!r}
stream_runner.pyarrow_without_pandas()
import pyarrow as pa
pa.array([1, 2]); pa.table({{"a": [1]}}); pa.Table.from_pylist([{{"a": 1}}])
print("pandas" in sys.modules)
print(pa.table({{"a": [1, 2]}}).to_pandas()["a"].sum())  # pandas itself still imports
"""


def run(runner: bool) -> list[str]:
    code = CASE.format(runner=runner)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_in_the_runner_pyarrow_builds_arrays_without_importing_pandas():
    assert run(runner=True) == ["False", "3"]


def test_elsewhere_pyarrow_is_left_as_it_is():
    assert run(runner=False) == ["True", "3"]
