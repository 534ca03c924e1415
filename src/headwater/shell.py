"""The ``headwater sql`` shell: statements typed, piped, given with ``-e`` or read from a file.

Each statement's result is printed as an aligned table. Interactively a statement may span
lines and runs when a line ends it with ``;`` (outside strings and comments: the tokenizer
decides); an error is printed and the prompt comes back. Non-interactively the first error
stops the run (exit code 1), as a script runner should.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import os
import sys
from typing import IO, Any

from pyspark.sql import DataFrame, SparkSession

from headwater.sql.text import is_complete

HISTORY_FILE = "~/.headwater_sql_history"
PROMPT = "headwater> "
CONTINUE = "        -> "
MAX_ROWS = 1000
MAX_WIDTH = 80  # longer cells are cut (with "...") so tables stay readable
_NUMBERS = (int, float, decimal.Decimal)


def render(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, dict):
        return "{" + ", ".join(f"{render(k)} -> {render(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(render(v) for v in value) + "]"
    if isinstance(value, (bytes, bytearray)):
        return "0x" + bytes(value).hex()
    return str(value)


def _cut(text: str) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= MAX_WIDTH else text[: MAX_WIDTH - 3] + "..."


def format_table(columns: list[str], rows: list[tuple]) -> str:
    """``columns`` and ``rows`` as a table: numbers right-aligned, others left-aligned."""
    cells = [[_cut(render(v)) for v in row] for row in rows]
    widths = [len(c) for c in columns]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    numeric = [
        bool(rows) and all(r[i] is None or isinstance(r[i], _NUMBERS) for r in rows)
        for i in range(len(columns))
    ]

    def line(values: list[str]) -> str:
        return " | ".join(
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ).rstrip()

    out = [line(list(columns)), "-+-".join("-" * w for w in widths)]
    out += [line(row) for row in cells]
    return "\n".join(out)


def show(df: DataFrame, out: IO[str]) -> None:
    if not df.columns:
        print("OK", file=out)
        return
    rows = [tuple(r) for r in df.limit(MAX_ROWS + 1).collect()]
    more = len(rows) > MAX_ROWS
    print(format_table(df.columns, rows[:MAX_ROWS]), file=out)
    count = f"first {MAX_ROWS} rows shown" if more else f"{len(rows)} row{'s' * (len(rows) != 1)}"
    print(f"({count})\n", file=out)


def describe_error(e: BaseException) -> str:
    text = str(e)
    for marker in ("\nJVM stacktrace", "\n\tat ", "\n== SQL"):
        text = text.split(marker)[0]
    from headwater.sql.text import SqlError

    return text if isinstance(e, SqlError) else f"{type(e).__name__}: {text}"


def run_text(spark: SparkSession, text: str, out: IO[str], err: IO[str]) -> bool:
    """Run and print every statement of ``text``; False (after printing it) on an error."""
    from headwater.sql import statements

    try:
        for _, df in statements(spark, text):
            show(df, out)
    except Exception as e:
        print(f"Error: {describe_error(e)}", file=err)
        err.flush()
        return False
    finally:
        out.flush()
    return True


def interactive(spark: SparkSession, stdin: IO[str], out: IO[str], err: IO[str]) -> int:
    """The read-run-print loop. Prompts and readline history only on a terminal."""
    tty = stdin.isatty()
    history = os.path.expanduser(HISTORY_FILE)
    readline = _readline(history) if tty else None
    if tty:
        print("headwater SQL. End statements with ';'. Ctrl-D or 'exit' quits.", file=out)
    buffer: list[str] = []
    while True:
        try:
            line = input(CONTINUE if buffer else PROMPT) if tty else stdin.readline()
        except EOFError:
            break
        except KeyboardInterrupt:
            buffer = []
            print(file=out)
            continue
        if not tty and line == "":
            break
        line = line.rstrip("\n")
        if not buffer and line.strip().rstrip(";").lower() in ("exit", "quit", "\\q"):
            break
        buffer.append(line)
        text = "\n".join(buffer)
        if not text.strip():
            buffer = []
        elif is_complete(text):
            run_text(spark, text, out, err)
            buffer = []
    if "\n".join(buffer).strip():
        run_text(spark, "\n".join(buffer), out, err)
    if readline is not None:
        with contextlib.suppress(OSError):
            readline.write_history_file(history)
    return 0


def _readline(history: str):
    try:
        import readline
    except ImportError:  # not on every platform; the shell works without it
        return None
    with contextlib.suppress(OSError):
        readline.read_history_file(history)
    readline.set_history_length(1000)
    return readline


def main(execute: str | None, file: str | None, warehouse: str | None, master: str | None) -> int:
    """``headwater sql [-e TEXT | -f FILE] [--warehouse DIR] [--master URL]``."""
    import headwater

    if file is not None:
        with open(file, encoding="utf-8") as f:
            execute = f.read()
    spark = headwater.session("headwater-sql", master=master, warehouse=warehouse, log_level="OFF")
    try:
        if execute is not None:
            return 0 if run_text(spark, execute, sys.stdout, sys.stderr) else 1
        return interactive(spark, sys.stdin, sys.stdout, sys.stderr)
    finally:
        spark.stop()
