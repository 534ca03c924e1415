"""``headwater pipelines run --watch``: one warm session, an update per save, Ctrl-C ends it.

A real command in a subprocess (its own SparkSession), real files edited, the table read
back with delta-rs."""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from deltalake import DeltaTable

SPEC = """name: watched
storage: storage
database: watched
libraries:
  - glob:
      include: transformations/**
"""

SOURCE = """from pyspark import pipelines as dp


@dp.materialized_view
def numbers():
    return spark.range({n})
"""


class Lines:
    """The command's output lines, read as they come."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.queue: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        assert proc.stdout is not None
        threading.Thread(target=self.read, args=(proc.stdout,), daemon=True).start()

    def read(self, stream) -> None:
        for line in stream:
            self.queue.put(line)

    def until(self, text: str, timeout: float) -> float:
        """Seconds until a line holding ``text`` came."""
        start = time.monotonic()
        while True:
            left = timeout - (time.monotonic() - start)
            assert left > 0, f"no '{text}' in {timeout} s:\n" + "".join(self.seen)
            try:
                line = self.queue.get(timeout=left)
            except queue.Empty:
                continue
            self.seen.append(line)
            if text in line:
                return time.monotonic() - start


def rows(root: Path) -> int:
    table = next((root / "wh").rglob("numbers/_delta_log")).parent
    return DeltaTable(str(table)).to_pyarrow_table().num_rows


def test_watch_reruns_on_save_and_stops_on_ctrl_c(tmp_path):
    (tmp_path / "spark-pipeline.yml").write_text(SPEC)
    source = tmp_path / "transformations" / "numbers.py"
    source.parent.mkdir()
    source.write_text(SOURCE.format(n=3))
    command = [sys.executable, "-u", "-m", "headwater.cli", "pipelines", "run", "--watch"]
    proc = subprocess.Popen(
        [*command, "--master", "local[1]", "--warehouse", "wh"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = Lines(proc)
    try:
        lines.until("[watch] watching 2 files", timeout=300)
        assert rows(tmp_path) == 3
        # A syntax error is reported without an update, and the loop waits for a fix.
        source.write_text(SOURCE.format(n="(5"))
        lines.until("[PIPELINE_PYTHON_SYNTAX_ERROR]", timeout=30)
        lines.until("[watch] watching", timeout=10)
        source.write_text(SOURCE.format(n=7))
        lines.until("[watch] a source changed", timeout=10)
        lines.until("[watch] watching", timeout=300)
        assert rows(tmp_path) == 7
        assert sum("[update] COMPLETED" in line for line in lines.seen) == 2, lines.seen
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode is not None
