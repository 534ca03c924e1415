"""``avg`` in a materialized view refreshed by the *group aggregate* technique (no Spark).

An average does not combine from averages, but it follows from the exact sum and count of
its values, and those combine (and take rows back) like any sum and count. The refresh
keeps them, per group, in a small state table outside the view (its readers see only the
query's columns): one Parquet folder per refresh under the flow's checkpoint folder,
written before the view's commit and named in that commit's refresh record, so the next
refresh reads exactly the state its view was made from, and a refresh that fails between
the two leaves only an unnamed folder (the rerun starts from the recorded one).

The view's ``avg`` is then derived as Spark's ``Average`` evaluates its buffer, and is
equal to a recompute only where that is provable:

* integral values (byte, short, int, long): Spark adds them into a double sum, exact while
  every partial sum is an integer below 2^53 in magnitude, which holds when the group's
  sum of absolute values is below 2^53 (kept exactly too, as decimal(38,0)). The kept
  sum is exact (decimal(38,0)); the average is ``double(sum) / double(count)``, Spark's
  own division. A group at or past the bound makes the refresh a full recompute.
* decimal(p, s) values: Spark's sum is decimal(p+10, s) (exact, or an overflow error),
  and the average is that sum divided by the count, rounded HALF_UP to decimal(p+4, s+4).
  The state keeps the same sum; the refresh divides it by the count as a decimal (Spark
  rounds the quotient HALF_UP at its division scale ``d``) and casts to the view's type.
  Two HALF_UP roundings equal one when no quotient lies within 10^-d of a half-unit of
  scale s+4, which holds while the count is below 10^(d-s-5) (the quotient's distance from
  such a point is a multiple of 1/(count * 10^(s+5)) and not 0); a larger group makes the
  refresh a full recompute, a type with no such room keeps the view recomputed.
* float and double values: their sums depend on the order of addition, so partial sums do
  not combine into Spark's: the view is recomputed.
"""

from __future__ import annotations

from dataclasses import dataclass

INTEGRAL = {"byte", "short", "integer", "long"}
MAX_PRECISION = 38
EXACT_DOUBLE = 2**53  # integers below this are exact doubles, and so are their sums
COUNT_DIGITS = 20  # the count is divided as decimal(20, 0), as Spark's Average does
ROWS = "__rows"  # the state's count(*) per group: a group with none is gone


@dataclass(frozen=True)
class Average:
    """One ``avg`` column of the view, and how its kept sum makes it."""

    column: str  # the view's column
    index: int  # its place among the view's averages (names its state columns)
    decimal: tuple[int, int] | None = None  # (precision, scale) of averaged decimals

    @property
    def sum(self) -> str:
        return f"__avg{self.index}_sum"

    @property
    def count(self) -> str:
        return f"__avg{self.index}_count"

    @property
    def magnitude(self) -> str:  # the sum of absolute values (the bound on partial sums)
        return f"__avg{self.index}_abs"

    @property
    def sum_type(self) -> str:
        """The kept sum's type: exact, and for decimals Spark's own sum buffer's."""
        if self.decimal is None:
            return "decimal(38,0)"
        p, s = self.decimal
        return f"decimal({min(MAX_PRECISION, p + 10)},{s})"

    @property
    def count_limit(self) -> int | None:
        """Decimals: the count below which the refresh's division rounds as Spark's."""
        if self.decimal is None:
            return None
        p, s = self.decimal
        return 10 ** (division_scale(min(MAX_PRECISION, p + 10), s) - s - 5)


def average_of(
    column: str, index: int, kind: str, precision: int = 0, scale: int = 0
) -> Average | str:
    """The average of values of type ``kind`` (a Spark type name: ``integer``,
    ``decimal``...), or why its refresh cannot equal a recompute."""
    if kind in INTEGRAL:
        return Average(column, index)
    if kind.startswith("decimal"):
        found = Average(column, index, (precision, scale))
        if division_scale(min(MAX_PRECISION, precision + 10), scale) - scale - 5 < 1:
            return (
                f"the average '{column}' of decimal({precision},{scale}) values has too few "
                "digits left to divide its kept sum as Spark does"
            )
        return found
    return (
        f"the average '{column}' is of {kind} values, whose sums depend on the order they "
        "are added in and do not combine exactly"
    )


def division_scale(p1: int, s1: int, p2: int = COUNT_DIGITS, s2: int = 0) -> int:
    """The scale of Spark's decimal(p1, s1) / decimal(p2, s2) (with
    ``spark.sql.decimalOperations.allowPrecisionLoss``, its default): scale
    max(6, s1 + p2 + 1), and where the precision passes 38, the scale is cut to what the
    integral digits leave, but not below min(scale, 6)."""
    scale = max(6, s1 + p2 + 1)
    precision = p1 - s1 + s2 + scale
    if precision <= MAX_PRECISION:
        return scale
    integral = precision - scale
    return max(MAX_PRECISION - integral, min(scale, 6))


def exact(average: Average, magnitude: int | None, count: int | None) -> bool:
    """Whether a group's average derived from its kept sum equals Spark's (``magnitude``:
    the group's largest sum of absolute values; ``count``: its largest count)."""
    if average.decimal is None:
        return magnitude is None or magnitude < EXACT_DOUBLE
    limit = average.count_limit
    return count is None or (limit is not None and count < limit)
