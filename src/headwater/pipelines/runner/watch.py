"""The edit-run loop: Spark started while sources are checked, and kept warm between updates.

A SparkSession takes 15-30 s to start, most of it the JVM's; reading and checking a
pipeline's sources (:mod:`.precheck`) takes milliseconds. :class:`Starting` builds the
session in a background thread: under ``--watch`` it starts at once, so a typo found
meanwhile is reported while Spark warms up for the fixed file. A single command checks
first and starts Spark after (a JVM started before a failed check would outlive the
command by seconds, holding its output open).

:func:`develop` is ``headwater pipelines run --watch``: the known platform's development
mode keeps its cluster between updates; this keeps one session and runs an update each
time a source file (or the spec) is saved. It polls modification times (no dependency, and
it works on every filesystem); an error in the sources is printed and the loop waits for
the next save. The first Ctrl-C ends it (after the running update's current
micro-batches, as for any update).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from headwater import storage
from headwater.errors import PipelineError
from headwater.pipelines.define.spec import PipelineSpec, find_spec, load_spec
from headwater.pipelines.graph.precheck import precheck

POLL_SECONDS = 0.5
SETTLE_SECONDS = 0.2  # an editor's save may be several writes: wait for them to end


class Starting:
    """A SparkSession being built in a daemon thread (the process may exit before it is
    ready, on an error found meanwhile; the JVM ends with its driver)."""

    def __init__(
        self,
        name: str,
        master: str | None,
        warehouse: str | None,
        conf: Mapping[str, str] | None = None,
    ) -> None:
        """``conf``: settings the session starts with (static ones, such as ``spark.jars``
        or ``spark.driver.memory``, apply only then)."""
        self.ready = threading.Event()
        self.spark: SparkSession | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(
            target=self.build,
            args=(name, master, warehouse, dict(conf or {})),
            name="spark-start",
            daemon=True,
        )
        self.thread.start()

    def build(
        self, name: str, master: str | None, warehouse: str | None, conf: dict[str, str]
    ) -> None:
        try:
            from headwater.session import session

            self.spark = session(name, master, warehouse, conf)
        except BaseException as e:  # handed to whoever waits
            self.error = e
        finally:
            self.ready.set()

    def wait(self, stop: threading.Event | None = None) -> SparkSession | None:
        """The session once started; None when ``stop`` is set first."""
        while not self.ready.wait(0.1):
            if stop is not None and stop.is_set():
                return None
        if self.error is not None:
            raise self.error
        assert self.spark is not None
        return self.spark


Update = Callable[[PipelineSpec, SparkSession], int]


def develop(
    start: str | Path,
    overrides: Mapping[str, Any] | None,
    session: Starting,
    update: Update,
    stop: threading.Event,
    poll: float = POLL_SECONDS,
) -> int:
    """Run ``update`` on the spec found from ``start``, then again each time one of its
    files changes, until ``stop``. The spec is read anew each time (it may have changed
    too). Returns the last update's exit code (2: its definitions were wrong)."""
    sources = Sources(start, overrides)
    code = 0
    while not stop.is_set():
        before = sources.fingerprint()
        try:
            spec = sources.spec()
            precheck(spec)
            spark = session.wait(stop)
            if spark is None:
                break
            code = update(spec, spark)
        except PipelineError as e:
            print(f"error: {e}", file=sys.stderr, flush=True)
            code = 2
        if stop.is_set():
            break
        print(
            f"[watch] watching {len(before)} files; save one to run again (Ctrl-C to stop)",
            flush=True,
        )
        if not wait_for_change(sources, before, stop, poll):
            break
        print("[watch] a source changed: running again", flush=True)
    return code


class Sources:
    """What ``--watch`` watches: the spec file and every source it names now."""

    def __init__(self, start: str | Path, overrides: Mapping[str, Any] | None) -> None:
        self.start = start
        self.overrides = overrides

    def spec(self) -> PipelineSpec:
        return load_spec(self.start, self.overrides)

    def files(self) -> list[Path]:
        """A new file a library's glob matches counts; while the spec is broken, the spec
        file alone (saving it is the fix)."""
        try:
            spec = self.spec()
            return [*([spec.file] if spec.file else []), *spec.source_files()]
        except PipelineError:
            try:
                return [find_spec(self.start)]
            except PipelineError:
                return []

    def fingerprint(self) -> dict[str, tuple[int, int]]:
        """Each file's modification time (ns) and size."""
        found = {}
        for path in self.files():
            info = storage.stat(str(path))
            if info is not None:
                found[str(path)] = (int(info.mtime_ns or 0), int(info.size or 0))
        return found


def wait_for_change(
    sources: Sources,
    before: dict[str, tuple[int, int]],
    stop: threading.Event,
    poll: float,
) -> bool:
    """True once the watched files differ from ``before`` and have settled; False on stop."""
    while not stop.wait(poll):
        now = sources.fingerprint()
        if now != before:
            while not stop.wait(SETTLE_SECONDS):
                settled = sources.fingerprint()
                if settled == now:
                    return True
                now = settled
            return False
    return False
