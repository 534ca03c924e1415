"""Hive-style partition directories (``k=v/``) as Spark writes and reads them.

The escaping rules are Spark's (``ExternalCatalogUtils.escapePathName``), so a directory we
parse is exactly what Spark's own partition discovery would parse.
"""

from __future__ import annotations

import re

NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
_ESCAPED = re.compile(r"%([0-9A-Fa-f]{2})")
_MUST_ESCAPE = set("\"#%'*/:=?\\\x7f{[]^") | {chr(c) for c in range(0x20)}


def unescape(text: str) -> str:
    return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), text)


def escape(text: str) -> str:
    return "".join(f"%{ord(c):02X}" if c in _MUST_ESCAPE else c for c in text)


def partition_dir(values: dict[str, str | None], columns: list[str]) -> str:
    return "/".join(
        f"{escape(c)}={NULL_PARTITION if values.get(c) in (None, '') else escape(str(values[c]))}"
        for c in columns
    )


def parse_partition_dir(rel_path: str, columns: list[str]) -> dict[str, str | None]:
    """Partition values of a file from its ``k=v/.../file`` path (relative to the table)."""
    if not columns:
        return {}
    found: dict[str, str | None] = {}
    for segment in rel_path.split("/")[:-1]:
        if "=" not in segment:
            continue
        key, value = segment.split("=", 1)
        value = unescape(value)
        found[unescape(key)] = None if value == NULL_PARTITION else value
    missing = [c for c in columns if c not in found]
    if missing:
        raise ValueError(f"file {rel_path} lacks partition directories for {missing}")
    return {c: found[c] for c in columns}
