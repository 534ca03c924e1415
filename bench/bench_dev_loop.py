"""The edit-run loop: how long a pipeline author waits, headwater against Spark's own runner.

Every measurement is a real command in a fresh process, on one tiny pipeline of three
materialized views (``orders`` from ``spark.range``, ``big_orders`` filtered from it,
``store_totals`` grouped from that; ``--rows`` rows), the same files for both runners:

* **syntax error**: ``dry-run`` of the pipeline with a ``(`` never closed; seconds until
  the process has printed its error and exited (goal < 3 s: headwater reports it before
  Spark has started).
* **graph error**: ``dry-run`` of the pipeline with ``orders`` reading ``store_totals`` (a
  cycle); seconds until exit.
* **first update, cold** and **second update, cold**: ``run`` in a new process each, the
  second after an edit of the filter; seconds until exit.
* **first update, --watch** and **second update, warm**: headwater's development loop
  (``run --watch``, one session kept): seconds from launch to the first update's end, then
  from saving the edit to the second update's end (goal < 5 s). Spark has no such mode;
  its column holds its own cold second ``run``.

Spark's runner is ``spark-pipelines`` (pyspark's CLI, a Spark Connect server in a JVM of
its own, ``--remote local[N]``). It needs Spark Connect's client packages, which
headwater does not: the bench makes an environment that sees this venv's packages and adds
only those (``<workdir>/sdp-overlay``, kept across runs), or reports why SDP was skipped.
Both runners have the machine to themselves only if nothing else runs (the report says the
load average at the start).

    .venv/bin/python bench/bench_dev_loop.py              # ~5 min on 2 cores
    .venv/bin/python bench/bench_dev_loop.py --no-sdp     # headwater only
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

from _common import BENCH_DIR, make_run_dir, markdown_table, remove_run_dir, write_report

PIPELINE = """from pyspark import pipelines as dp
from pyspark.sql import functions as F


@dp.materialized_view
def orders():
    return spark.range({rows}).select(
        "id", (F.col("id") % 7).alias("store"), (F.col("id") * 37 % 101).alias("amount")
    ){cycle}


@dp.materialized_view
def big_orders():
    return spark.read.table("orders").where("amount > {threshold}")


@dp.materialized_view
def store_totals():
    return spark.read.table("big_orders").groupBy("store").agg(F.sum("amount").alias("total"){close}
"""
CYCLE = '.unionByName(spark.read.table("store_totals").select("store"), allowMissingColumns=True)'
SDP_SECOND_RUN = (
    "spark-pipelines keeps its local catalog in memory, so a second run of the same project "
    "fails with LOCATION_ALREADY_EXISTS (the table folders of the first run are there): its "
    "second update is a run of the edited pipeline in a fresh project folder"
)
GOALS = {"syntax error": 3.0, "second update, warm": 5.0}
WATCHING = "[watch] watching"


def source(rows: int, threshold: int = 10, syntax: bool = False, cycle: bool = False) -> str:
    return PIPELINE.format(
        rows=rows, threshold=threshold, close="" if syntax else ")", cycle=CYCLE if cycle else ""
    )


def write_project(root: Path, text: str) -> Path:
    """``spark-pipeline.yml`` (storage a ``file://`` URI, as SDP requires) and one source."""
    (root / "transformations").mkdir(parents=True)
    (root / "transformations" / "orders.py").write_text(text)
    (root / "spark-pipeline.yml").write_text(
        f"name: devloop\nstorage: file://{root / 'storage'}\n"
        "libraries:\n  - glob:\n      include: transformations/**\n"
    )
    return root


# -- the two runners ---------------------------------------------------------------------------


def headwater_command(verb: str, master: str) -> list[str]:
    return [sys.executable, "-m", "headwater.cli", "pipelines", verb, "--master", master]


def timed_command(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> dict:
    """Seconds until ``command`` exited, its exit code, and the last lines it printed."""
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    seconds = time.perf_counter() - start
    said = [
        line
        for line in (done.stdout + "\n" + done.stderr).splitlines()
        if line.strip() and not any(w in line for w in (" WARN ", " INFO ", "log4j", "LogLevel"))
    ]
    tail = said[-3:]
    update = re.search(r": COMPLETED in ([0-9.]+) s", done.stdout)  # headwater's own summary
    return {
        "seconds": round(seconds, 3),
        "returncode": done.returncode,
        "tail": tail,
        "update_s": float(update.group(1)) if update else None,
    }


def sdp_python(workdir: Path) -> tuple[Path | None, str]:
    """A Python that sees this venv's packages plus Spark Connect's client packages,
    created when missing; ``(None, why)`` when it cannot be had."""
    import importlib.metadata
    import site

    env = workdir / "sdp-overlay"
    python = env / "bin" / "python"
    probe = [str(python), "-c", "import grpc, grpc_status, zstandard, pyspark.sql.connect.session"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python, str(env)
    wanted = [
        r.split(";")[0].strip()
        for r in importlib.metadata.requires("pyspark") or []
        if 'extra == "connect"' in r
        and r.split(">")[0].split("=")[0].strip()
        in ("grpcio", "grpcio-status", "googleapis-common-protos", "zstandard")
    ]
    try:
        subprocess.run([sys.executable, "-m", "venv", str(env)], check=True, capture_output=True)
        overlay_site = subprocess.run(
            [str(python), "-c", "import site; print(site.getsitepackages()[0])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        Path(overlay_site, "headwater-venv.pth").write_text(site.getsitepackages()[0] + "\n")
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", *wanted],
            check=True,
            capture_output=True,
            text=True,
            timeout=900,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        return None, f"making {env} failed: {str(getattr(e, 'stderr', e))[-400:]}"
    if subprocess.run(probe, capture_output=True).returncode != 0:
        return None, f"{python} cannot import Spark Connect's client packages"
    return python, str(env)


def sdp_runner(python: Path, master: str):
    """``run(verb, root)`` for ``spark-pipelines`` with ``python`` as its driver."""
    environ = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SPARK_HOME", "PYTHONPATH", "VIRTUAL_ENV", "SPARK_REMOTE")
    }
    environ.update(
        PYSPARK_PYTHON=str(python),
        PYSPARK_DRIVER_PYTHON=str(python),
        PYTHONUNBUFFERED="1",
        PYSPARK_SUBMIT_ARGS="--conf spark.ui.enabled=false "
        "--conf spark.ui.showConsoleProgress=false pyspark-shell",
    )
    cli = str(Path(sys.executable).parent / "spark-pipelines")

    def run(verb: str, root: Path) -> dict:
        command = [cli, verb, "--spec", "spark-pipeline.yml", "--remote", master]
        return timed_command(command, root, environ)

    return run


class Watch:
    """``headwater pipelines run --watch`` in a subprocess, its lines read as they come."""

    def __init__(self, root: Path, master: str) -> None:
        self.start = time.perf_counter()
        self.proc = subprocess.Popen(
            [*headwater_command("run", master), "--watch"],
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self.read, daemon=True).start()

    def read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def until(self, text: str, timeout: float = 600) -> float:
        """The ``perf_counter`` time at which a line holding ``text`` came."""
        end = time.perf_counter() + timeout
        while time.perf_counter() < end:
            try:
                line = self.lines.get(timeout=1)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            self.seen.append(line)
            if text in line:
                return time.perf_counter()
        raise RuntimeError(f"--watch printed no '{text}':\n{''.join(self.seen[-20:])}")

    def stop(self) -> None:
        self.proc.send_signal(2)  # Ctrl-C
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# -- the measurements --------------------------------------------------------------------------


def error_runs(run_dir: Path, args: argparse.Namespace, sdp) -> dict[str, dict]:
    """The two dry-runs that must fail, on both runners."""
    results: dict[str, dict] = {}
    for name, text, expect in (
        ("syntax error", source(args.rows, syntax=True), "never closed"),
        ("graph error", source(args.rows, cycle=True), "cycl"),
    ):
        key = name.replace(" ", "_")
        ours_root = write_project(run_dir / f"ours-{key}", text)
        ours = timed_command(headwater_command("dry-run", args.master), ours_root)
        check_failed(f"headwater {name}", ours, expect)
        native = None
        if sdp is not None:
            native = sdp("dry-run", write_project(run_dir / f"sdp-{key}", text))
            check_failed(f"spark-pipelines {name}", native, "")
        results[name] = {"ours": ours, "sdp": native}
    return results


def check_failed(what: str, run: dict, expect: str) -> None:
    said = "\n".join(run["tail"]).lower()
    if run["returncode"] == 0 or expect not in said:
        raise RuntimeError(f"{what}: expected a failure naming '{expect}', got {run}")


def update_runs(run_dir: Path, args: argparse.Namespace, sdp) -> dict[str, dict]:
    """First and second update, each a new process; the second after an edit."""
    results: dict[str, dict] = {}
    sides = [("ours", lambda verb, root: timed_command(headwater_command(verb, args.master), root))]
    if sdp is not None:
        sides.append(("sdp", sdp))
    for side, run in sides:
        root = write_project(run_dir / f"{side}-cold", source(args.rows))
        for name, threshold in (("first update, cold", 10), ("second update, cold", 20)):
            if side == "sdp" and threshold != 10:  # see SDP_SECOND_RUN
                root = write_project(run_dir / f"{side}-cold-2", source(args.rows))
            (root / "transformations" / "orders.py").write_text(source(args.rows, threshold))
            done = run("run", root)
            if done["returncode"] != 0:
                raise RuntimeError(f"{side} {name} failed: {done}")
            results.setdefault(name, {"ours": None, "sdp": None})[side] = done
    return results


def watch_runs(run_dir: Path, args: argparse.Namespace) -> dict[str, float]:
    """headwater's development loop: launch to the first update's end, save to the
    second's."""
    root = write_project(run_dir / "ours-watch", source(args.rows))
    watch = Watch(root, args.master)
    try:
        first = watch.until(WATCHING) - watch.start
        time.sleep(1.0)  # a save a moment later, as an author's is
        saved = time.perf_counter()
        (root / "transformations" / "orders.py").write_text(source(args.rows, threshold=20))
        second = watch.until(WATCHING) - saved
    finally:
        watch.stop()
    completed = sum("[update] COMPLETED" in line for line in watch.seen)
    if completed != 2:
        raise RuntimeError(
            f"--watch ran {completed} complete updates, not 2:\n{''.join(watch.seen)}"
        )
    return {"first update, --watch": round(first, 3), "second update, warm": round(second, 3)}


# -- the report --------------------------------------------------------------------------------


def rows_of(runs: dict[str, dict], watch: dict[str, float]) -> list[dict]:
    rows = []
    for name, sides in runs.items():
        ours = sides["ours"]["seconds"]
        native = sides["sdp"]["seconds"] if sides["sdp"] else None
        rows.append(row(name, ours, native))
    cold_second = runs["second update, cold"]["sdp"]
    for name, seconds in watch.items():
        native = cold_second["seconds"] if cold_second and "warm" in name else None
        rows.append(row(name, seconds, native))
    return rows


def row(name: str, ours: float, native: float | None) -> dict:
    goal = GOALS.get(name)
    return {
        "name": name,
        "ours_s": ours,
        "native_s": native,
        "ratio": round(ours / native, 3) if native else None,
        "goal_s": goal,
        "meets_goal": None if goal is None else ours < goal,
    }


def report_text(env: dict, results: list[dict], sdp_note: str) -> str:
    table = [("measurement", "headwater (s)", "spark-pipelines (s)", "ratio", "goal")]
    for r in results:
        goal = "" if r["goal_s"] is None else f"< {r['goal_s']:.0f} s"
        if r["meets_goal"] is False:
            goal += "  (missed)"
        table.append(
            (
                r["name"],
                f"{r['ours_s']:.2f}",
                "-" if r["native_s"] is None else f"{r['native_s']:.2f}",
                "-" if r["ratio"] is None else f"{r['ratio']:.2f}",
                goal,
            )
        )
    head = [
        f"date:      {env['date_utc']}",
        f"machine:   {env['platform']}, {env['cpu_count']} CPUs, {env['mem_total']}, "
        f"load average at start {env['load_average']}",
        f"versions:  pyspark {env['pyspark']}, python {env['python']}",
        f"pipeline:  3 materialized views, {env['rows']} rows; master {env['spark_master']}",
        f"SDP:       {sdp_note}",
        "(second update, warm: spark-pipelines has no warm mode; its column is its cold "
        "second run)",
        f"({SDP_SECOND_RUN})",
        "",
    ]
    return "\n".join(head + markdown_table(table, right_aligned=(1, 2, 3)))


def environment(args: argparse.Namespace) -> dict:
    import pyspark

    mem = "unknown"
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        kb = int(meminfo.read_text().split("\n")[0].split()[1])
        mem = f"{kb / 1024 / 1024:.1f} GiB RAM"
    return {
        "date_utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "mem_total": mem,
        "load_average": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "python": platform.python_version(),
        "pyspark": pyspark.__version__,
        "spark_master": args.master,
        "rows": args.rows,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=300, help="rows of the pipeline's first table")
    p.add_argument("--no-sdp", action="store_true", help="headwater only")
    p.add_argument("--master", default="local[2]", help="Spark master of both runners")
    p.add_argument("--workdir", default=None, help="where the run directory goes (bench/data/)")
    p.add_argument("--keep", action="store_true", help="keep the run directory")
    p.add_argument("--json", dest="json_out", default=None, help="also write results here")
    args = p.parse_args(argv)
    env = environment(args)
    base = Path(args.workdir) if args.workdir else BENCH_DIR / "data"
    sdp, note = None, "skipped: --no-sdp"
    if not args.no_sdp:
        python, note = sdp_python(base)
        sdp = sdp_runner(python, args.master) if python else None
        note = f"spark-pipelines with {note}" if python else f"skipped: {note}"
    run_dir = make_run_dir(args.workdir, "bench-dev-loop-")
    try:
        runs = {**error_runs(run_dir, args, sdp), **update_runs(run_dir, args, sdp)}
        watch = watch_runs(run_dir, args)
    finally:
        remove_run_dir(run_dir, args.keep)
    results = rows_of(runs, watch)
    report = {
        "environment": env,
        "sdp": note,
        "results": {r["name"]: r for r in results},
        "runs": runs,
    }
    write_report(report, report_text(env, results, note), args.json_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
