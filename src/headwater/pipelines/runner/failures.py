"""A failure in one line: what failed and, where the error says it, the fix.

A flow's error reaches the runner wrapped: a stream's is Spark's ``StreamingQueryException``
whose text is the JVM's (``[FOREACH_BATCH_USER_FUNCTION_ERROR] ... Return Message:
Traceback ...`` with the Python traceback of the batch function inside it), a failed task's
is ``Job aborted due to stage failure: ... SparkArithmeticException: [DIVIDE_BY_ZERO] ...``.
The line users need is the innermost error's message; the rest are stack traces, which
belong in a log file (the ``headwater pipelines`` command keeps them under the pipeline's
storage). The exceptions keep them as their causes.
"""

from __future__ import annotations

import re

from headwater.errors import PipelineError

TRACEBACK = "Traceback (most recent call last):"
# An error class as Spark and headwater tag messages: [DIVIDE_BY_ZERO], [DELTA_X.Y]
ERROR_CLASS = re.compile(r"\[[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*\] ")
# Wrappers whose own words say nothing of the failure, before the error that does.
WRAPPERS = ("terminated with exception", "Job aborted due to stage failure", "Reason: ")
# ``pyspark.errors.exceptions.captured.ArithmeticException: [DIVIDE_BY_ZERO] ...``
QUALIFIED = re.compile(r"(?:[A-Za-z_][\w]*\.)+(?=[A-Za-z_]\w*(?:Exception|Error): )")


def one_line(error: BaseException | str) -> str:
    """The innermost message of ``error`` on one line: the exception a Python traceback
    inside the text ends with, else the text's first line (from its last error class, when
    the line is a wrapper's: a failed stream's, a failed job's)."""
    text = error if isinstance(error, str) else str(getattr(error, "desc", None) or error)
    lines = text.split("\n")
    if any(line.startswith(TRACEBACK) or line.endswith(TRACEBACK) for line in lines):
        found = raised(lines)
        if found:
            return found
    first = next((line.strip() for line in lines if line.strip()), "")
    if any(wrapper in first for wrapper in WRAPPERS):
        tags = list(ERROR_CLASS.finditer(first))
        if tags:
            first = first[tags[-1].start() :]
    if not isinstance(error, str) and not first:
        return type(error).__name__
    return first


def raised(lines: list[str]) -> str | None:
    """The last exception line of the last Python traceback in ``lines``: the first line
    after it that is not indented (its frames are), without the exception's module path
    and, when the message carries an error class, without its type."""
    start = max(i for i, line in enumerate(lines) if line.rstrip().endswith(TRACEBACK))
    for line in lines[start + 1 :]:
        if line.strip() and not line[0].isspace():
            message = QUALIFIED.sub("", line.strip(), count=1)
            kind, sep, rest = message.partition(": ")
            return rest if sep and ERROR_CLASS.match(rest) else message
    return None


def in_one_line(error: BaseException) -> BaseException:
    """``error`` when its text is one line already, else a :class:`PipelineError` of its
    :func:`one_line` with ``error`` as its cause (its text and traces stay there): what a
    failed flow records, and what ``pipelines.run``'s result shows."""
    line = one_line(error)
    if str(error) == line:
        return error
    failure = PipelineError(line)
    failure.__cause__ = error
    return failure
