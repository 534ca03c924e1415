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
    args = parser.parse_args(argv)
    if args.command == "demo":
        from headwater.demo import run

        run(args.output, args.master)
    return 0


if __name__ == "__main__":
    sys.exit(main())
