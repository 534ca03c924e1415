"""Values as JSON text: what rescued data holds and what a string column shows for an object.

One encoder for every format, so a value reads the same in ``_rescued_data`` whichever file
or path it came from.
"""

from __future__ import annotations

import base64
import json

__all__ = ["clean", "dumps"]


def clean(value):
    """Drop null members of objects: Arrow cannot tell a missing member from a null one."""
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [clean(v) for v in value]
    return value


def _default(value):
    """Parquet values JSON lacks: temporal ones as ISO text, decimals exactly, bytes base64."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, tuple):  # a map entry from Arrow
        return list(value)
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


# One encoder for all: json.dumps with options builds a new encoder per call (3x slower).
dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=_default).encode
