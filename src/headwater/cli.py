"""The ``headwater`` command."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="headwater", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the end-to-end demo on embedded defaults")
    demo.add_argument("--output", default="demo-output", help="where tables and checkpoints go")
    demo.add_argument("--master", default=None, help="Spark master (default local[*])")
    demo.add_argument(
        "--warehouse", default=None, help="where tables go (default OUTPUT/warehouse)"
    )
    demo.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting"
    )
    demo.add_argument(
        "--delta-engine",
        choices=("headwater", "delta-spark"),
        default=None,
        help="the Delta engine (default headwater; delta-spark needs headwater[delta-spark])",
    )
    sql = sub.add_parser("sql", help="SQL shell (interactive, or run -e TEXT / -f FILE and exit)")
    given = sql.add_mutually_exclusive_group()
    given.add_argument("-e", "--execute", help="run these statements (';'-separated) and exit")
    given.add_argument("-f", "--file", help="run the statements in this file and exit")
    sql.add_argument(
        "--warehouse", default=None, help="where named tables live (default ./spark-warehouse)"
    )
    sql.add_argument("--master", default=None, help="Spark master (default local[*])")
    from headwater.pipelines.cli import add_parser

    add_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "demo":
        from headwater.demo import run

        conf = dict(item.split("=", 1) for item in args.conf)
        run(args.output, args.master, args.warehouse, conf, args.delta_engine)
    elif args.command == "pipelines":
        from headwater.pipelines.cli import main as pipelines_main

        return pipelines_main(args)
    elif args.command == "sql":
        from headwater.shell import main as sql_main

        return sql_main(args.execute, args.file, args.warehouse, args.master)
    return 0


if __name__ == "__main__":
    sys.exit(main())
