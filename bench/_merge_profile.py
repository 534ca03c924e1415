"""Where the MERGE/UPDATE/DELETE benchmark's time goes: CPU seconds of this process and the
Spark JVM, and (``--profile``) the phases of our DML, timed by wrapping functions from
outside without changing what runs (see bench_merge.py)."""

from __future__ import annotations

import contextlib
import functools
import importlib
import linecache
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

# -- CPU time ---------------------------------------------------------------------------------


class CpuClock:
    """CPU seconds used by this process (every thread, so delta-rs's too) plus the Spark JVM
    (driver and local executors). On a machine shared with other work, CPU time is steadier
    than wall time; None where /proc is missing."""

    def __init__(self, spark) -> None:
        try:
            pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
            self._stat: Path | None = Path(f"/proc/{pid}/stat")
            self._tick = os.sysconf("SC_CLK_TCK")
            self._jvm()
        except Exception:  # noqa: BLE001 - no /proc or no JVM handle: no CPU figures
            self._stat = None

    def _jvm(self) -> float:
        fields = self._stat.read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / self._tick  # utime + stime

    def now(self) -> float | None:
        return None if self._stat is None else time.process_time() + self._jvm()


# -- profiling our DML -----------------------------------------------------------------------

# Everything --profile wraps, in this one table, so a module that moves changes its name here
# only: "module.attribute" (a method: "module.Class.method") -> (label, callers). With
# callers (module names), only calls made from those modules' code are timed, labelled with
# the calling function, line and source text; with None, every call is timed as the label.
PROFILED: dict[str, tuple[str, tuple[str, ...] | None]] = {
    "pyspark.sql.classic.dataframe.DataFrame.count": (
        "count",
        ("headwater.delta.dml.delete_update", "headwater.delta.dml.merge"),
    ),
    "pyspark.sql.classic.dataframe.DataFrame.collect": (
        "collect",
        ("headwater.delta.dml.delete_update", "headwater.delta.dml.merge"),
    ),
    "pyspark.sql.classic.dataframe.DataFrame.first": (
        "first",
        (
            "headwater.delta.dml.delete_update",
            "headwater.delta.dml.merge",
            "headwater.delta.read.pruning",
        ),
    ),
    "pyspark.sql.DataFrameWriter.parquet": (
        "Spark Parquet write",
        ("headwater.delta.files.data_files",),
    ),
    "headwater.delta.log.delta_log.DeltaLog.snapshot": (
        "snapshot",
        ("headwater.delta.dml.delete_update", "headwater.delta.dml.merge"),
    ),
    "headwater.delta.dml.delete_update.read_target": (
        "read_target(): read plan of the snapshot",
        None,
    ),
    "headwater.delta.dml.merge.read_target": ("read_target(): read plan of the snapshot", None),
    "headwater.delta.dml.delete_update.write_files": (
        "write_files(): Parquet write + footers + moves",
        None,
    ),
    "headwater.delta.dml.merge.write_files": (
        "write_files(): Parquet write + footers + moves",
        None,
    ),
    "headwater.delta.log.commit.Transaction.commit": (
        "Transaction.commit(): one Delta version",
        None,
    ),
    "headwater.delta.dml.merge.discard_files": (
        "discard_files(): an optimistic write undone",
        None,
    ),
}


def resolve(dotted: str) -> tuple[object, str]:
    """``"module.Class.attribute"`` -> (the object holding the attribute, its name): the
    longest importable prefix is the module, the rest are attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            owner = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:-1]:
            owner = getattr(owner, name)
        return owner, parts[-1]
    raise ModuleNotFoundError(f"no module in {dotted!r}")


def _label(text: str, callers: tuple[str, ...] | None) -> Callable[[object], str | None]:
    """The phase name of a call, from the caller's frame; None: not timed."""
    if callers is None:
        return lambda frame: text
    paths = {importlib.import_module(module).__file__ for module in callers}

    def label(frame) -> str | None:
        path = frame.f_code.co_filename
        if path not in paths:
            return None
        line = linecache.getline(path, frame.f_lineno).strip()
        return f"{frame.f_code.co_name}() L{frame.f_lineno} {text}: {line}"

    return label


@contextlib.contextmanager
def phase_timer(phases: list[tuple[str, float]]) -> Iterator[None]:
    """Record (phase, seconds) for what headwater's DML does, by wrapping what
    :data:`PROFILED` names: each Spark action of the DML modules, the Parquet write and the
    whole ``write_files`` (write + footers + moves), the snapshot load, the target read plan,
    the commit and any optimistic write undone."""
    undo: list[tuple[object, str, object]] = []

    def wrap(owner, name: str, label: Callable[[object], str | None]) -> None:
        original = getattr(owner, name)

        @functools.wraps(original)
        def timed_call(*a, **k):
            what = label(sys._getframe(1))
            if what is None:
                return original(*a, **k)
            start = time.perf_counter()
            try:
                return original(*a, **k)
            finally:
                phases.append((what, time.perf_counter() - start))

        setattr(owner, name, timed_call)
        undo.append((owner, name, original))

    try:
        for dotted, (text, callers) in PROFILED.items():
            wrap(*resolve(dotted), _label(text, callers))
        yield
    finally:
        for owner, name, original in reversed(undo):
            setattr(owner, name, original)
