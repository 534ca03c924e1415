"""Errors raised inside a Python data source, given back to the user as themselves.

Spark wraps an exception raised while it instantiates a Python data source (``schema()``,
``reader()``) in ``[PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance:
Traceback ...``. The adapter catches that around the calls that plan a source and raises
the headwater error it carries, with its own class and message.
"""

from __future__ import annotations

import importlib
import re

from headwater.errors import HeadwaterError

_RAISED = re.compile(r"^(headwater(?:\.\w+)+)\.(\w+): ", re.MULTILINE)
_TAIL = re.compile(r"\n\s*SQLSTATE: \w+\s*$|\n\s*JVM stacktrace:.*$", re.DOTALL)


def carried(error: BaseException) -> HeadwaterError | None:
    """The headwater error a Spark exception's text carries, rebuilt; None if none."""
    text = str(error)
    found = list(_RAISED.finditer(text))
    if not found:
        return None
    last = found[-1]
    try:
        cls = getattr(importlib.import_module(last.group(1)), last.group(2))
    except (ImportError, AttributeError):
        return None
    if not (isinstance(cls, type) and issubclass(cls, HeadwaterError)):
        return None
    message = _TAIL.sub("", text[last.end() :]).strip()
    rebuilt = HeadwaterError.__new__(cls)
    HeadwaterError.__init__(rebuilt, message)
    return rebuilt
