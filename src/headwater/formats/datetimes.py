"""Spark datetime patterns (``dd/MM/yyyy HH:mm``) parsed with Arrow, exactly or not at all.

Spark parses ``dateFormat`` / ``timestampFormat`` with java.time's strict resolver. Arrow's
strptime is looser (``30/02`` rolls over into March, field widths are not checked, there are
no fractions of a second), so it is not used: a pattern becomes an RE2 regex with one named
group per field, which checks widths and literals as Spark does, and the groups are put back
together as ISO-8601 text, which Arrow's cast parses and range-checks (no February 30th).
Both steps are vectorised, so a custom pattern keeps a clean file on Arrow's path.

Pattern letters whose meaning cannot be rebuilt that way (day-of-week, era, week fields, zone
names, optional sections, ...) are refused by name rather than approximated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from headwater.errors import OptionError

__all__ = ["DatetimePattern", "compile_pattern", "to_iso"]

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH_NAMES = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
)  # fmt: skip
_ZONES = {  # letter, count -> the offsets Spark accepts in parsing
    ("X", 1): r"Z|[+-]\d{2}(?:\d{2})?",
    ("X", 2): r"Z|[+-]\d{4}",
    ("X", 3): r"Z|[+-]\d{2}:\d{2}",
    ("x", 1): r"[+-]\d{2}(?:\d{2})?",
    ("x", 2): r"[+-]\d{4}",
    ("x", 3): r"[+-]\d{2}:\d{2}",
    ("Z", 1): r"[+-]\d{4}",
    ("Z", 2): r"[+-]\d{4}",
    ("Z", 3): r"[+-]\d{4}",
    ("Z", 5): r"Z|[+-]\d{2}:\d{2}",
}
_NUMBERS = {"d": "day", "H": "hour", "h": "hour12", "m": "minute", "s": "second"}
_UNSUPPORTED = {
    "G": "the era", "u": "a day-of-week number", "D": "the day of the year",
    "Q": "the quarter", "q": "the quarter", "E": "the day of the week",
    "e": "the day of the week", "c": "the day of the week", "F": "the aligned week of month",
    "w": "the week of the year", "W": "the week of the month", "Y": "the week-based year",
    "K": "the hour of am/pm (0-11)", "k": "the clock hour of the day (1-24)",
    "V": "a time-zone ID", "z": "a time-zone name", "O": "a localized zone offset",
    "n": "nanoseconds", "N": "nano-of-day", "A": "milli-of-day", "B": "the period of day",
}  # fmt: skip


@dataclass(frozen=True)
class DatetimePattern:
    """A compiled Spark pattern: ``regex`` (RE2, anchored, case-insensitive as Spark parses)
    has one named group per field in ``fields``."""

    text: str
    regex: str
    fields: tuple[str, ...]
    slices: tuple[tuple[int, int], ...] | None = None  # where each field is, if fixed-width

    @property
    def zoned(self) -> bool:
        return "zone" in self.fields


def _refuse(option: str, text: str, why: str) -> OptionError:
    return OptionError(
        f"Option '{option}' = '{text}' {why}, which headwater cannot parse exactly as Spark "
        "does. Use the letters y (yy, yyyy), M (M to MMMM), d, H, h with a, m, s, S (fractions), "
        "X/x/Z (offsets) and quoted literals, or drop the option to read ISO-8601 values."
    )


def _tokens(text: str, option: str) -> list[str | tuple[str, int]]:
    """Literal text, or (letter, how many times it repeats)."""
    out: list[str | tuple[str, int]] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "'":
            if text[i + 1 : i + 2] == "'":
                out.append("'")
                i += 2
                continue
            j, literal = i + 1, []
            while j < len(text) and not (text[j] == "'" and text[j + 1 : j + 2] != "'"):
                literal.append(text[j])
                j += 2 if text[j] == "'" else 1
            if j >= len(text):
                raise OptionError(f"Option '{option}' = '{text}' has an unclosed quote (').")
            out.append("".join(literal))
            i = j + 1
        elif c.isascii() and c.isalpha():
            j = i
            while j < len(text) and text[j] == c:
                j += 1
            out.append((c, j - i))
            i = j
        elif c in "[]{}#":
            raise _refuse(option, text, f"uses '{c}' (optional sections)")
        else:
            out.append(c)
            i += 1
    return out


_WIDTHS = {r"\d{2}": 2, r"\d{4}": 4, "[a-z]{3}": 3, "[ap]m": 2, r"[+-]\d{4}": 5,
           r"[+-]\d{2}:\d{2}": 6}  # fmt: skip


def _literal(text: str) -> str:
    return "".join(c if c.isalnum() or c == " " or not c.isascii() else "\\" + c for c in text)


def _field(letter: str, n: int, option: str, text: str) -> tuple[str, str]:
    """The group name and regex of a run of one pattern letter."""
    if letter == "y" and n in (2, 4):
        return ("year2", r"\d{2}") if n == 2 else ("year", r"\d{4}")
    if letter in "ML" and n <= 4:
        return [("month", r"\d{1,2}"), ("month", r"\d{2}"), ("month3", "[a-z]{3}"),
                ("monthname", "[a-z]+")][n - 1]  # fmt: skip
    if letter in _NUMBERS and n <= 2:
        return _NUMBERS[letter], r"\d{1,2}" if n == 1 else r"\d{2}"
    if letter == "S" and n <= 9:
        return "fraction", rf"\d{{1,{n}}}"
    if letter == "a" and n == 1:
        return "ampm", "[ap]m"
    if (letter, n) in _ZONES:
        return "zone", _ZONES[(letter, n)]
    what = _UNSUPPORTED.get(letter, f"the pattern letter '{letter}'")
    raise _refuse(option, text, f"uses '{letter * n}' ({what})")


def compile_pattern(text: str, option: str, zone_allowed: bool = True) -> DatetimePattern:
    """The pattern of option ``option`` (named in errors as typed), or an OptionError naming
    what cannot be parsed exactly."""
    if not text:
        raise OptionError(f"Option '{option}' is empty; give a pattern such as 'yyyy-MM-dd'.")
    parts: list[str] = []
    fields: list[str] = []
    slices: list[tuple[int, int]] = []
    offset: int | None = 0  # None once a field or literal has a variable width
    for token in _tokens(text, option):
        if isinstance(token, str):
            parts.append(_literal(token))
            offset = offset + len(token) if offset is not None and token.isascii() else None
            continue
        group, regex = _field(*token, option, text)
        same = [f for f in fields if f == group or f[:5] == group[:5] == "month"]
        if same:
            raise _refuse(option, text, f"sets one field twice ('{token[0] * token[1]}')")
        fields.append(group)
        parts.append(f"(?P<{group}>{regex})")
        width = _WIDTHS.get(regex)
        if offset is not None and width is not None:
            slices.append((offset, offset + width))
            offset += width
        else:
            offset = None
    if ("hour12" in fields) != ("ampm" in fields) or ("hour" in fields and "hour12" in fields):
        raise _refuse(option, text, "mixes 'h' and 'a' inconsistently (use 'hh ... a' or 'HH')")
    if "zone" in fields and not zone_allowed:
        raise _refuse(option, text, "has a zone offset, which a timestamp without time zone lacks")
    fixed = tuple(slices) if offset is not None else None
    return DatetimePattern(text, "(?i)^" + "".join(parts) + "$", tuple(fields), fixed)


Pad = Callable[[pa.Array], pa.Array]


def _two(values: pa.Array) -> pa.Array:
    return pc.utf8_lpad(values, width=2, padding="0")


def _as_is(values: pa.Array) -> pa.Array:
    return values


def _month(groups: dict[str, pa.Array], n: int, pad: Pad) -> pa.Array:
    for name, table in (("month3", _MONTHS), ("monthname", _MONTH_NAMES)):
        if name in groups:
            index = pc.index_in(pc.utf8_lower(groups[name]), value_set=pa.array(table))
            return _two(pc.cast(pc.add(index, 1), pa.string()))
    return pad(groups["month"]) if "month" in groups else pa.repeat("01", n)


def _hour(groups: dict[str, pa.Array], n: int, pad: Pad) -> pa.Array:
    if "hour" in groups:
        return pad(groups["hour"])
    if "hour12" not in groups:
        return pa.repeat("00", n)
    h = pc.cast(groups["hour12"], pa.int8())
    pm = pc.equal(pc.utf8_lower(groups["ampm"]), "pm")
    hour = pc.add(pc.if_else(pc.equal(h, 12), 0, h), pc.if_else(pm, 12, 0))
    in_range = pc.and_(pc.greater_equal(h, 1), pc.less_equal(h, 12))
    return _two(pc.cast(pc.if_else(in_range, hour, None), pa.string()))


def to_iso(pattern: DatetimePattern, values: pa.Array, date_only: bool) -> pa.Array:
    """``values`` rewritten as ISO-8601 text (``yyyy-MM-dd[ HH:mm:ss[.ffffff][zone]]``; fields
    the pattern lacks take Spark's defaults: 1970-01-01 00:00:00); null where a value does not
    match the pattern. Whether the text is a real date is left to Arrow's cast."""
    pad: Pad = _two
    if pattern.slices is not None:  # fixed widths: a regex match and byte slices (4x faster)
        matched = pc.fill_null(pc.match_substring_regex(values, pattern.regex), False)
        ascii_only = pc.if_else(matched, values, pa.scalar(None, pa.string())).view(pa.binary())
        found = [pc.binary_slice(ascii_only, a, b).view(pa.string()) for a, b in pattern.slices]
        pad = _as_is
    else:
        extracted = pc.extract_regex(values, pattern.regex)
        matched, found = extracted.is_valid(), extracted.flatten()
    groups = dict(zip(pattern.fields, found, strict=True))
    n = len(values)

    def part(name: str, default: str) -> pa.Array:
        return pad(groups[name]) if name in groups else pa.repeat(default, n)

    if "year" in groups:
        year = groups["year"]
    elif "year2" in groups:
        year = pc.binary_join_element_wise(pa.repeat("20", n), groups["year2"], "")
    else:
        year = pa.repeat("1970", n)
    iso = pc.binary_join_element_wise(year, _month(groups, n, pad), part("day", "01"), "-")
    if not date_only:
        hms = [_hour(groups, n, pad), part("minute", "00"), part("second", "00")]
        time = pc.binary_join_element_wise(*hms, ":")
        if "fraction" in groups:  # Spark keeps microseconds: digits beyond six are dropped
            time = pc.binary_join_element_wise(
                time, pc.utf8_slice_codeunits(groups["fraction"], 0, 6), "."
            )
        if "zone" in groups:
            time = pc.binary_join_element_wise(time, pc.utf8_upper(groups["zone"]), "")
        iso = pc.binary_join_element_wise(iso, time, " ")
    return pc.if_else(matched, iso, pa.scalar(None, pa.string()))
