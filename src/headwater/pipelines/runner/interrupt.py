"""Stopping a running stream between two micro-batches, never inside one.

``StreamingQuery.stop()`` interrupts the query's thread wherever it is. When that is inside
a ``foreachBatch`` function (every pipeline stream writes through one), the interrupted
JVM call fails in Python with a ``Py4JJavaError`` whose text carries the whole Java stack
trace; Spark then tests that text against a backtracking pattern
(``StreamExecution.isInterruptionException``) which overflows the thread's stack on a few
KB of text: the stream thread dies of ``StackOverflowError`` without marking the query
terminated, and whoever waits for it (``awaitTermination``, ``stop()`` itself) may wait
forever. So a stop waits until no batch function of the flow is running, and a batch
function that starts once a stop is asked for raises :class:`StopRequested` before it
touches anything: that batch's offsets are logged but not committed, so the next update
runs it again (exactly once, as after a crash).

:class:`Interrupts` is the command line's side: the first Ctrl-C (or SIGTERM) asks for
that stop, the second ends the process at once (the JVM exits when its driver does; every
commit is idempotent, so this is as safe as a crash).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql.streaming import StreamingQuery

from headwater.api import BatchFunction

STOP_MARKER = "HEADWATER_STOP_REQUESTED"


class StopRequested(RuntimeError):
    """Raised by a batch function that starts after a stop was asked for: the batch is
    left for the next update. Its message is short on purpose (see the module's doc)."""

    def __init__(self) -> None:
        super().__init__(f"{STOP_MARKER}: the update is stopping; this batch runs next time.")


class BatchGate:
    """Wraps a flow's ``foreachBatch`` function so that :meth:`stop` ends the query only
    between batches."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop_asked = stop
        self.lock = threading.Lock()
        self.running = 0

    def wrap(self, function: BatchFunction) -> BatchFunction:
        def batch(df: DataFrame, batch_id: int) -> object:
            with self.lock:
                if self.stop_asked.is_set():
                    raise StopRequested()
                self.running += 1
            try:
                return function(df, batch_id)
            finally:
                with self.lock:
                    self.running -= 1

        return batch

    def stop(self, query: StreamingQuery, poll: float = 0.05) -> None:
        """Stop ``query`` once its current batch function (if any) has returned and no
        trigger is active: the JVM calls the function a moment before Python counts it
        as running, and a stop inside that moment is the interruption to avoid."""
        while True:
            with self.lock:
                if self.running == 0 and not _trigger_active(query):
                    break
            if not query.isActive:
                return
            time.sleep(poll)
        query.stop()


def _trigger_active(query: StreamingQuery) -> bool:
    try:
        return bool(query.status.get("isTriggerActive"))
    except Exception:  # the query ended meanwhile
        return False


# What a query's error says when a stop reached it inside a batch after all (a trigger that
# began between the gate's last look and ``query.stop()``): the batch's commit had not
# happened (a Delta commit is atomic), so the next update runs that batch again.
INTERRUPTED = (STOP_MARKER, "InterruptedException", "ClosedByInterruptException", "cancelled")


def stopped_by_request(error_text: str, stop_was_sent: bool = False) -> bool:
    """Whether a query ended because of a stop: a batch refused to start (always), or,
    once ``query.stop()`` was sent, an interruption or a cancelled job."""
    if STOP_MARKER in error_text:
        return True
    return stop_was_sent and any(mark in error_text for mark in INTERRUPTED)


class Interrupts:
    """SIGINT and SIGTERM for a command that runs an update."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.signal = 0
        self.running = False  # set once the update begins: before, nothing needs a clean end

    @property
    def exit_code(self) -> int:
        """The shell's code for a process ended by the signal received (130 for Ctrl-C)."""
        return 128 + (self.signal or signal.SIGINT)

    def install(self) -> None:
        """Handle both signals (again after Spark has started: its context installs a
        SIGINT handler of its own, which cancels jobs mid-batch)."""
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, self.handle)
            signal.signal(signal.SIGTERM, self.handle)

    def handle(self, signum: int, frame: Any) -> None:
        self.signal = self.signal or signum
        if not self.running:
            # Spark's JVM ignores SIGINT (PySpark starts it so) and only ends once its
            # gateway is up and sees our end: while it is still starting, that can be many
            # seconds of a process holding the terminal's output. Nothing ran yet.
            _kill_descendants()
            self.end("stopped before the update started.")
        if self.stop.is_set():
            self.end("aborted.")
        print("stopping after the current micro-batches... (again to abort)", file=sys.stderr)
        self.stop.set()

    def end(self, message: str) -> None:
        """Print ``message`` and exit at once with the signal's code."""
        print(message, file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(self.exit_code)


def _kill_descendants() -> None:
    """SIGKILL every process started below this one (where ``/proc`` tells; elsewhere the
    JVM ends by itself once it sees its driver gone)."""
    parents: dict[int, list[int]] = {}
    for stat in _proc_stats():
        try:
            with open(stat) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            parents.setdefault(int(fields[1]), []).append(int(stat.split("/")[2]))
        except (OSError, ValueError, IndexError):
            continue  # ended meanwhile
    todo, seen = [os.getpid()], set()
    while todo:
        for child in parents.get(todo.pop(), []):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    for pid in seen:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _proc_stats() -> list[str]:
    try:
        return [f"/proc/{p}/stat" for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return []
