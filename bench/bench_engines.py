"""headwater's Delta engine against delta-spark (Delta's own Spark connector), in one run on
pyspark 4.2 with the same data.

The two engines cannot share a Python process or a JVM (see ``tests/engines/peer.py``), so
each runs in a child process of its own, started side by side; this process starts no
Spark and only sends each child the same operations (``bench/_engines_work.py``) in turn,
alternating which engine goes first. Each engine generates its own copy of the inputs
(same generators, same seeds, same sizes) under its own directory and times the action
itself inside its process. Operations:

* **batch write**: ``--rows`` generated rows (six columns, cached first) written with
  ``df.write.format("delta")``; each file is a contiguous ``id`` range;
* **full scan + aggregate**: ``groupBy(k).agg(sum(x), count(*))`` of that table;
* **filtered scan**: a 1% ``id`` range, three columns, aggregated; min/max statistics let
  an engine skip all but a file or two; the files Spark's scan read are reported;
* **MERGE**: ``--merge-rows`` source rows (10% updates, 90% inserts) into a ``--rows``
  target (bench_merge.py's tables), by ``MERGE INTO delta.`<path>```, on a copy of the
  target without and with ``delta.enableDeletionVectors``;
* **streaming append**: the Parquet source read as a file stream (``--batches`` micro-batches)
  into Delta, ``trigger(availableNow=True)``;
* **Auto Loader**: headwater's ``cloudFiles`` source (JSON, inferred types, ``--loader-rows``
  rows) into a Delta table of each engine: on delta-spark the sink is delta-spark's.

Unless ``--smoke``, every operation first runs once on tiny inputs on both engines,
untimed (JVM warm-up). Both engines' answers must agree (aggregates, row counts,
checksums), so a fast wrong answer fails the run. The ratio is headwater / delta-spark
(lower is better; the goal is <= 1.0). Also reported: the files each engine's table holds
and leaves on disk.

Run from the repository root with the delta-spark tier's virtual environment::

    .venv-delta-spark/bin/python bench/bench_engines.py --rows 10000000
    .venv-delta-spark/bin/python bench/bench_engines.py --smoke
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

from _common import make_run_dir, markdown_table, remove_run_dir

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import _engines_work as work  # noqa: E402

from tests.engines.peer import Peer  # noqa: E402

ENGINES = ("headwater", "delta-spark")
GOAL = 1.0
SMOKE = {"rows": 5_000, "merge_rows": 500, "loader_rows": 2_000, "batches": 1}
WARM_UP = {"rows": 20_000, "merge_rows": 2_000, "loader_rows": 4_000, "batches": 2}

# operation key -> printed name
OPERATIONS = {
    "write": "batch write",
    "scan": "full scan + aggregate",
    "filtered_scan": "filtered scan (1% id range)",
    "merge": "MERGE (files rewritten)",
    "merge_dv": "MERGE (deletion vectors)",
    "streaming": "streaming append (availableNow)",
    "auto_loader": "Auto Loader (cloudFiles json) -> Delta",
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--rows", type=int, default=10_000_000, help="rows written, scanned, streamed; MERGE target"
    )
    p.add_argument("--merge-rows", type=int, default=1_000_000, help="MERGE source rows")
    p.add_argument("--loader-rows", type=int, default=1_000_000, help="Auto Loader rows (JSON)")
    p.add_argument("--batches", type=int, default=8, help="streaming append's micro-batches")
    p.add_argument("--smoke", action="store_true", help="tiny sizes, no warm-up: a quick check")
    p.add_argument(
        "--shuffle-partitions", type=int, default=200, help="spark.sql.shuffle.partitions, both"
    )
    p.add_argument("--driver-memory", default="2g", help="each engine's driver memory")
    p.add_argument("--workdir", default=None, help="where the run directory is made (bench/data)")
    p.add_argument("--keep", action="store_true", help="keep the run directory")
    p.add_argument("--json", dest="json_out", default=None, help="also write results here")
    args = p.parse_args(argv)
    if args.smoke:
        for key, value in SMOKE.items():
            setattr(args, key, value)
    if min(args.rows, args.merge_rows, args.loader_rows) < 100 or args.batches < 1:
        p.error("--rows, --merge-rows, --loader-rows must be at least 100, --batches 1")
    return args


def run_operations(peers: dict[str, Peer], run_dir: Path, sizes: dict, tag: str) -> dict:
    """Every operation on both engines (the order alternating), each engine in its own
    directory ``<run_dir>/<tag>-<engine>``; results by operation, then engine."""
    bases = {name: str(run_dir / f"{tag}-{name}") for name in peers}
    started = time.perf_counter()
    prepared = {
        name: peer.call(
            work.prepare, bases[name], sizes["rows"], sizes["merge_rows"], sizes["loader_rows"]
        )
        for name, peer in peers.items()
    }
    loader_files = prepared[ENGINES[0]]["loader_files"]
    print(f"  [{tag}] inputs made in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    calls = {
        "write": (work.batch_write, sizes["rows"]),
        "scan": (work.full_scan,),
        "filtered_scan": (work.filtered_scan, sizes["rows"]),
        "merge": (work.merge, False),
        "merge_dv": (work.merge, True),
        "streaming": (work.streaming_append, sizes["rows"], sizes["batches"]),
        "auto_loader": (work.auto_loader, loader_files),
    }
    results: dict[str, dict] = {}
    for i, (key, (fn, *extra)) in enumerate(calls.items()):
        order = ENGINES if i % 2 == 0 else ENGINES[::-1]
        results[key] = {name: peers[name].call(fn, bases[name], *extra) for name in order}
        answers = {name: r.get("answer") for name, r in results[key].items()}
        if not same_answers(*answers.values()):
            raise RuntimeError(f"the engines disagree on {OPERATIONS[key]}: {answers}")
        print(
            f"  [{tag}] {OPERATIONS[key]}: "
            + ", ".join(f"{name} {results[key][name]['seconds']:.2f} s" for name in ENGINES),
            file=sys.stderr,
            flush=True,
        )
    results["prepared"] = prepared
    return results


def same_answers(a: object, b: object) -> bool:
    """Equal, but for floating-point sums in the last digits (the engines add in other
    orders)."""
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-3)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_answers(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def summarise(results: dict) -> list[dict]:
    rows = []
    for key, name in OPERATIONS.items():
        ours, theirs = results[key]["headwater"], results[key]["delta-spark"]
        ratio = ours["seconds"] / theirs["seconds"] if theirs["seconds"] > 0 else float("inf")
        rows.append(
            {
                "key": key,
                "name": name,
                "headwater_s": ours["seconds"],
                "delta_spark_s": theirs["seconds"],
                "ratio": ratio,
                "meets_goal": ratio <= GOAL,
                "headwater_files": ours.get("files"),
                "delta_spark_files": theirs.get("files"),
                "headwater_files_read": ours.get("files_read"),
                "delta_spark_files_read": theirs.get("files_read"),
            }
        )
    return rows


def describe_files(files: object) -> str:
    """``active / on disk (+ deletion vector files)`` for a table, the count for a scan."""
    if isinstance(files, dict):
        text = f"{files['active_files']} / {files['parquet_on_disk']}"
        if files["dv_files_on_disk"]:
            text += f" + {files['dv_files_on_disk']} dv"
        return text
    return "" if files is None else str(files)


def format_report(report: dict) -> str:
    env, args = report["environment"], report["arguments"]
    lines = [
        f"date:      {env['date_utc']}",
        f"machine:   {env['platform']}, {env['cpu_count']} CPUs",
        f"versions:  {env['engines']}, python {env['python']}",
        f"run:       {args['rows']:,} rows (write, scans, stream, MERGE target), "
        f"MERGE source {args['merge_rows']:,} rows, Auto Loader {args['loader_rows']:,} rows; "
        f"local[2] per engine, {args['shuffle_partitions']} shuffle partitions, "
        f"driver memory {args['driver_memory']} (JVM max heap: "
        + ", ".join(f"{name} {gib} GiB" for name, gib in env["heap_gib"].items())
        + "); one run each"
        + ("" if args["smoke"] else ", after an untimed warm-up on tiny inputs"),
        "",
    ]
    table = [("operation", "headwater (s)", "delta-spark (s)", "ratio", "goal <= 1.0")]
    for r in report["summary"]:
        table.append(
            (
                r["name"],
                f"{r['headwater_s']:.3f}",
                f"{r['delta_spark_s']:.3f}",
                f"{r['ratio']:.2f}",
                "met" if r["meets_goal"] else "missed",
            )
        )
    lines += markdown_table(table)
    lines += ["", "files (table: active / Parquet on disk; filtered scan: files read of files)"]
    files = [("operation", "headwater", "delta-spark")]
    for r in report["summary"]:
        if r["key"] == "filtered_scan":
            files.append(
                (
                    r["name"],
                    f"{r['headwater_files_read']} of {r['headwater_files']}",
                    f"{r['delta_spark_files_read']} of {r['delta_spark_files']}",
                )
            )
        elif r["headwater_files"] is not None:
            files.append(
                (
                    r["name"],
                    describe_files(r["headwater_files"]),
                    describe_files(r["delta_spark_files"]),
                )
            )
    lines += markdown_table(files, right_aligned=(1, 2))
    lines += ["", "ratio = headwater / delta-spark time, measured in each engine's process."]
    return "\n".join(lines)


def main(argv: list[str] | None = None, running: dict[str, Peer] | None = None) -> dict:
    """``running``: both engines' processes already started (the tier's smoke test passes
    its own, so the check costs no JVM start); else started and stopped here."""
    args = parse_args(argv)
    run_dir = make_run_dir(args.workdir, "bench-engines-")
    # Both children take their driver memory from here (headwater's session sets the same).
    os.environ["PYSPARK_SUBMIT_ARGS"] = f"--driver-memory {args.driver_memory} pyspark-shell"
    # Python workers of this venv on both (headwater's session sets it; Auto Loader's
    # source imports headwater in delta-spark's workers too).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    peers = running or {name: Peer.start(name, run_dir) for name in ENGINES}
    try:
        for peer in peers.values():
            if running is None:
                peer.wait_ready()
        versions = {
            name: peer.call(work.configure, args.shuffle_partitions) for name, peer in peers.items()
        }
        if not args.smoke:
            run_operations(peers, run_dir, WARM_UP, "warm-up")
        sizes = {key: getattr(args, key) for key in SMOKE}
        results = run_operations(peers, run_dir, sizes, "run")
    finally:
        for peer in peers.values():
            if running is None:
                peer.stop()
        remove_run_dir(run_dir, args.keep)
    report = {
        "arguments": vars(args),
        "summary": summarise(results),
        "results": results,
        "environment": {
            "date_utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
            "python": platform.python_version(),
            "engines": versions["headwater"]["versions"],
            "heap_gib": {name: v["heap_gib"] for name, v in versions.items()},
        },
    }
    print(format_report(report), flush=True)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    return report


if __name__ == "__main__":
    main()
