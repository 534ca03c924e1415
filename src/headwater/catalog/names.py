"""Table names as users type them: ``t``, ``db.t``, ``spark_catalog.db.t``, backquoted parts,
and ``delta.`/path``` for a table by path."""

from __future__ import annotations

import re
from dataclasses import dataclass

from headwater.errors import OptionError

DEFAULT_DATABASE = "default"
_PART = re.compile(r"`((?:[^`]|``)*)`|([^.`\s]+)")


@dataclass(frozen=True)
class TableName:
    database: str
    table: str

    def __str__(self) -> str:
        return f"{self.database}.{self.table}"

    @property
    def quoted(self) -> str:
        return f"`{self.database}`.`{self.table}`"


def parse_parts(text: str) -> list[str]:
    parts: list[str] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _PART.match(text, pos)
        if not m:
            raise OptionError(f"Invalid table name '{text}'.")
        parts.append(m.group(1).replace("``", "`") if m.group(1) is not None else m.group(2))
        pos = m.end()
        if pos < len(text):
            if text[pos] != ".":
                raise OptionError(f"Invalid table name '{text}'.")
            pos += 1
    return parts


def delta_path(text: str) -> str | None:
    """The path of a ``delta.`/path``` name, else None."""
    parts = parse_parts(text)
    if len(parts) == 2 and parts[0].lower() == "delta" and ("/" in parts[1] or ":" in parts[1]):
        return parts[1]
    return None


def parse(text: str) -> TableName:
    if not text or not str(text).strip():
        raise OptionError("A table name is required (for example 'db.table').")
    parts = parse_parts(str(text))
    if len(parts) == 3 and parts[0].lower() == "spark_catalog":
        parts = parts[1:]
    if len(parts) == 1:
        return TableName(DEFAULT_DATABASE, parts[0].lower())
    if len(parts) == 2:
        return TableName(parts[0].lower(), parts[1].lower())
    raise OptionError(f"Invalid table name '{text}': use 'table' or 'database.table'.")
