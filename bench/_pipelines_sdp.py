"""The pipelines benchmark's third side: Spark's own runner, ``spark-pipelines run``, as a
subprocess in an environment of its own, timed from its log (see bench_pipelines.py)."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from _common import BENCH_DIR
from _pipelines_workload import PIPELINE_SOURCE, SDP_BRONZE, TABLES, write_project

# -- SDP -------------------------------------------------------------------------------------


def sdp_environment(args: argparse.Namespace) -> tuple[Path | None, str]:
    """SDP's virtualenv, created when missing (``pyspark[pipelines]`` of this pyspark's
    version, from the package index); ``(None, why)`` when it cannot be had."""
    import pyspark

    base = Path(args.workdir) if args.workdir else BENCH_DIR / "data"
    env = Path(args.sdp_env) if args.sdp_env else base / "sdp-venv"
    python = env / "bin" / "python"
    version = pyspark.__version__
    if not python.exists():
        print(f"creating SDP's environment in {env} (pyspark[pipelines]=={version})", flush=True)
        try:
            subprocess.run(
                [sys.executable, "-m", "venv", str(env)],
                check=True,
                capture_output=True,
                text=True,
            )
            subprocess.run(
                [
                    str(python),
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    f"pyspark[pipelines]=={version}",
                    "pandas<3",  # pyspark 4.x warns under pandas 3
                ],
                check=True,
                capture_output=True,
                text=True,
                timeout=900,
            )
        except subprocess.CalledProcessError as e:
            shutil.rmtree(env, ignore_errors=True)
            return None, f"installing into {env} failed: {(e.stderr or '').strip()[-600:]}"
        except subprocess.TimeoutExpired:
            shutil.rmtree(env, ignore_errors=True)
            return None, f"installing into {env} took over 900 s"
    probe = subprocess.run(
        [
            str(python),
            "-c",
            "import grpc, grpc_status, google.rpc.status_pb2, zstandard, yaml, pandas, pyarrow\n"
            "import pyspark, pyspark.sql.connect.session\n"
            "print(pyspark.__version__)",
        ],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        return None, f"{python} cannot import SDP's packages: {probe.stderr.strip()[-600:]}"
    if probe.stdout.strip() != version:
        return None, f"{env} has pyspark {probe.stdout.strip()}, not {version}"
    if not (env / "bin" / "spark-pipelines").exists():
        return None, f"{env}/bin/spark-pipelines is missing"
    return env, f"{env} (pyspark {version})"


def sdp_conf(spark) -> dict[str, str]:
    """The settings of headwater's session that SDP's spec may carry: runtime SQL confs
    only, since SDP also applies them to every flow, where a static conf is an error."""
    keys = ("spark.sql.shuffle.partitions", "spark.sql.session.timeZone")
    return {key: str(spark.conf.get(key)) for key in keys}


def run_sdp(env: Path, project: Path, master: str, timeout: float) -> dict[str, float]:
    """``spark-pipelines run`` on ``project`` (its tables land in ``project/spark-warehouse``);
    the seconds from its "Creating dataflow graph" log line to "Run is COMPLETED" (the run
    proper), and in all (JVMs and Connect server started, session stopped).

    The Connect server is the client's local one (``--remote local[N]``: the same master as
    ours; ``--master`` is refused, and ``--conf`` does not reach that server). Its JVM gets
    headwater's driver settings (memory, GC, no console progress) through
    ``PYSPARK_SUBMIT_ARGS``, the SQL confs come from the spec (:func:`sdp_conf`), so the
    two differ in runner only."""
    python = str(env / "bin" / "python")
    environ = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SPARK_HOME", "PYTHONPATH", "VIRTUAL_ENV", "SPARK_REMOTE")
    }
    environ.update(
        PYSPARK_PYTHON=python,
        PYSPARK_DRIVER_PYTHON=python,
        PYTHONUNBUFFERED="1",
        PATH=f"{env / 'bin'}{os.pathsep}{environ.get('PATH', '')}",
        PYSPARK_SUBMIT_ARGS="--driver-memory 2g --conf spark.ui.enabled=false "
        "--conf spark.ui.showConsoleProgress=false "
        "--conf spark.driver.extraJavaOptions=-XX:+UseParallelGC pyspark-shell",
    )
    command = [
        str(env / "bin" / "spark-pipelines"),
        "run",
        "--spec",
        "spark-pipeline.yml",
        "--remote",
        master,
    ]
    stderr_path = project / "sdp-stderr.log"
    marks: dict[str, float] = {}
    lines: list[str] = []
    start = time.perf_counter()
    with open(stderr_path, "w") as stderr:
        proc = subprocess.Popen(
            command,
            cwd=project,
            env=environ,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
        watchdog = threading.Timer(timeout, proc.kill)
        watchdog.start()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.append(line)
                if "Creating dataflow graph" in line:
                    marks.setdefault("graph", time.perf_counter())
                elif "Run is COMPLETED" in line:
                    marks.setdefault("completed", time.perf_counter())
            returncode = proc.wait()
        finally:
            watchdog.cancel()
    total = time.perf_counter() - start
    if returncode != 0 or "graph" not in marks or "completed" not in marks:
        tail = "".join(lines[-15:]) + stderr_path.read_text()[-1500:]
        raise RuntimeError(f"spark-pipelines run failed (exit {returncode}):\n{tail}")
    return {
        "run_s": marks["completed"] - marks["graph"],
        "startup_s": marks["graph"] - start,
        "total_s": total,
    }


def sdp_first_update(
    spark, args: argparse.Namespace, run_dir: Path, landing: Path, ours_counts: dict
) -> dict:
    """SDP's first update on the landing files, ``--repeat`` times on fresh projects (best
    kept), when ``--sdp`` asks and its environment can be had; otherwise why not.

    SDP's row counts are compared with ours but a difference does not fail the run (it is
    SDP's answer, not ours): it is reported, with the rows the table's Parquet files hold
    on disk when read without the file sink's log (``_spark_metadata``)."""
    if not args.sdp:
        return {"skipped": "not requested (--sdp)"}
    env, why = sdp_environment(args)
    if env is None:
        print(f"SDP skipped: {why}", file=sys.stderr, flush=True)
        return {"skipped": why}
    timings, mismatches = [], {}
    for i in range(args.repeat):
        project = write_project(
            run_dir / f"sdp-{i}",
            f"bench_sdp_{i}",
            landing,
            PIPELINE_SOURCE.format(bronze=SDP_BRONZE),
            conf=sdp_conf(spark),
        )
        timings.append(run_sdp(env, project, args.master, args.sdp_timeout))
        warehouse = project / "spark-warehouse"
        for name in TABLES:
            got = spark.read.parquet(str(warehouse / name)).count()
            if got != ours_counts[name]:
                on_disk = spark.read.parquet(str(warehouse / name / "*.parquet")).count()
                mismatches[f"{name} (run {i})"] = {
                    "sdp": got,
                    "ours": ours_counts[name],
                    "sdp_files_on_disk": on_disk,
                }
    if mismatches:
        print(f"SDP's row counts differ from ours: {mismatches}", file=sys.stderr, flush=True)
    best = min(timings, key=lambda t: t["run_s"])
    return {"environment": why, **best, "runs": timings, "mismatches": mismatches}
