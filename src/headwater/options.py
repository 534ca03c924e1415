"""Option values as users type them (``"true"``, ``"10m"``, ``"a, b"``), and the error for
an option nobody knows.

Spark hands options around as strings with case-insensitive names. Every package that
takes options (the ``delta`` format, Auto Loader, COPY INTO) parses values here, and
refuses unknown names through :func:`unknown_option`, so a misspelt option is always an
error that names it as the user typed it and suggests the closest known name.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from headwater.errors import OptionError


def unknown_option(
    given: str, known: Iterable[str], context: str, canonical: Mapping[str, str] | None = None
) -> OptionError:
    """The error for option ``given`` (as typed), unknown in ``context``: it names the
    closest known option (``known`` in lower case; ``canonical`` spells them)."""
    spell = canonical or {}
    names = sorted(known)
    import difflib  # here: only a misspelt option needs it (24 ms to import)

    hint = difflib.get_close_matches(given.lower(), names, n=1, cutoff=0.6)
    suggestion = f" Did you mean '{spell.get(hint[0], hint[0])}'?" if hint else ""
    listed = ", ".join(sorted(spell.get(k, k) for k in names))
    return OptionError(
        f"Unknown option '{given}' for {context}.{suggestion} Known options: {listed}."
    )


def as_bool(value: str | bool | None, name: str, default: bool = False) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise OptionError(f"Option '{name}' must be true or false, not '{value}'.")


def as_int(value: str | int | None, name: str, default: int | None = None) -> int | None:
    if value is None:
        return default
    try:
        number = int(str(value).strip())
    except ValueError:
        raise OptionError(f"Option '{name}' must be an integer, not '{value}'.") from None
    if number < 0:
        raise OptionError(f"Option '{name}' must not be negative, not {number}.")
    return number


_SIZE_UNITS = {
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "g": 1024**3,
    "gb": 1024**3,
}


def as_bytes(value: str | int | None, name: str) -> int | None:
    """A byte size: ``1048576``, ``10m``, ``1g``."""
    if value is None:
        return None
    text = str(value).strip().lower()
    digits = text.rstrip("bkmgt")
    unit = text[len(digits) :] or "b"
    if not digits.isdigit() or unit not in _SIZE_UNITS:
        raise OptionError(
            f"Option '{name}' must be a byte size such as 1048576, 10m or 1g, not '{value}'."
        )
    return int(digits) * _SIZE_UNITS[unit]


def split_columns(value: str | list[str] | None) -> list[str]:
    if not value:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    text = str(value).strip()
    if text.startswith("["):
        return [str(v) for v in json.loads(text)]
    return [c.strip().strip("`") for c in text.split(",") if c.strip()]
