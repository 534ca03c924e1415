"""What headwater's stream sources do in Spark's streaming source runner.

Spark serves each Python streaming source of a query from a process of its own, started
when the stream starts (``pyspark.sql.streaming.python_streaming_source_runner``): it
unpickles the source, then answers the query's ``initialOffset``, ``latestOffset``,
``partitions`` and ``commit`` calls. That start is most of a short stream's fixed cost, and
so of a small pipeline update (bench/bench_stream_start.py).

About 0.3 s of it was pyarrow importing pandas: pyarrow looks for pandas the first time it
builds an array from Python values (to tell a pandas object from a list), and imports it
whenever it is installed. headwater's sources never hand pandas objects to pyarrow, and the
runner process runs nothing but the one source, so there pyarrow is told there is no pandas
(:func:`pyarrow_without_pandas`). pandas itself stays importable: ``Table.to_pandas()``
imports it on its own.
"""

from __future__ import annotations

import sys

RUNNER = "pyspark.sql.streaming.python_streaming_source_runner"


def in_runner() -> bool:
    """Whether this process is Spark's streaming source runner."""
    return RUNNER in getattr(sys, "orig_argv", ())


class _NoPandas:
    """An import finder that says pandas is not there (for pyarrow's one look)."""

    @staticmethod
    def find_spec(name: str, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError("pandas is not used by this process", name=name)
        return None


def pyarrow_without_pandas() -> None:
    """In the runner, and once pandas is not loaded yet: let pyarrow make its one look for
    pandas now, finding none, so that building arrays from Python values never imports it.
    Elsewhere (the driver, Spark's Python workers, which may run users' pandas code) it does
    nothing."""
    if not in_runner() or "pandas" in sys.modules:
        return
    import pyarrow as pa

    sys.meta_path.insert(0, _NoPandas)
    try:
        pa.array([0])
    finally:
        sys.meta_path.remove(_NoPandas)
