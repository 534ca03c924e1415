"""A sampling profiler of every Python thread, for benchmarks whose work runs in threads.

cProfile sees only the thread that enables it, and a pipeline update runs its flows in
threads of its own and its micro-batches in Py4J's callback threads: the main thread just
waits. This samples the stacks of all threads every few milliseconds
(``sys._current_frames``) and reports, per function, the thread-seconds it was on a stack
(inclusive) and at its top (where the time went: a socket read is a wait on the JVM).

    with Sampler() as sampler:
        work()
    print(sampler.report(only="headwater"))
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from types import FrameType


class Sampler:
    def __init__(self, interval: float = 0.005) -> None:
        self.interval = interval
        self.inclusive: Counter[str] = Counter()
        self.top: Counter[str] = Counter()
        self.stacks: Counter[tuple[str, ...]] = Counter()  # whole stacks, outermost first
        self.samples = 0
        self.seconds = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stack-sampler", daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        me = threading.get_ident()
        start = time.perf_counter()
        while not self._stop.wait(self.interval):
            self.seconds = time.perf_counter() - start
            self.samples += 1
            for ident, frame in sys._current_frames().items():
                if ident != me:
                    self._take(frame)

    def _take(self, frame: FrameType | None) -> None:
        stack: list[str] = []
        while frame is not None:
            code = frame.f_code
            stack.append(f"{code.co_filename}:{code.co_firstlineno}({code.co_name})")
            frame = frame.f_back
        if not stack:
            return
        self.top[stack[0]] += 1
        for name in set(stack):
            self.inclusive[name] += 1
        self.stacks[tuple(reversed(stack))] += 1

    def below(self, function: str, depth: int = 1, limit: int = 30) -> str:
        """Where the time of ``function`` (a name's ``(co_name)`` part) went: its callees
        ``depth`` frames down, by thread-seconds."""
        scale = self.seconds / max(self.samples, 1)
        found: Counter[str] = Counter()
        for stack, count in self.stacks.items():
            at = next((i for i, n in enumerate(stack) if n.endswith(f"({function})")), None)
            if at is None:
                continue
            below = stack[at + 1 : at + 1 + depth]
            found[" > ".join(_short(n) for n in below) or "(itself)"] += count
        lines = [f"{function}:"]
        lines += [f"{c * scale:>8.2f}  {name}" for name, c in found.most_common(limit)]
        return "\n".join(lines)

    def report(self, only: str = "", limit: int = 40) -> str:
        """The functions whose file names contain ``only``, by inclusive thread-seconds."""
        scale = self.seconds / max(self.samples, 1)  # a sample's share of the wall time
        rows = [(n, c) for n, c in self.inclusive.most_common() if only in n.split(":")[0]]
        lines = [f"{'inclusive s':>11} {'top s':>7}  function ({self.samples} samples)"]
        for name, count in rows[:limit]:
            lines.append(f"{count * scale:>11.2f} {self.top[name] * scale:>7.2f}  {_short(name)}")
        return "\n".join(lines)


def _short(name: str) -> str:
    return name.split("/site-packages/")[-1].split("/src/")[-1].split("/headwater/", 1)[-1]
