"""A space-filling curve over a few columns, so rows near each other in every one of them
land in the same file and each file's min/max statistics span a narrow range.

Spark 4 has no z-order function, so the curve is built from Spark expressions and stays
in the JVM: each column is mapped to an order-preserving double, cut into up to 1024
equal-depth buckets at approximate quantiles (one aggregation job) and bucketed by
``Bucketizer`` (a binary search per value); the bucket numbers' bits are then interleaved
into one long (a Z-order / Morton value). The rows are range-partitioned on it into the
requested number of files and sorted within each. One column needs no curve: its own
order is the best layout.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, DateType, StringType, TimestampNTZType, TimestampType

NAME = "zorder"  # what the ZCUBE_ZORDER_CURVE tag records
MAX_BITS = 10  # bits (buckets = 2**bits) per column
_KEY = "__hw_curve"


def cluster(
    df: DataFrame, columns: Sequence[str], num_files: int, partition_by: Sequence[str] = ()
) -> DataFrame:
    """``df`` laid out along the curve over ``columns``: ``num_files`` range partitions
    (within each table partition's range, when ``partition_by`` is given), each sorted."""
    parts = [F.col(f"`{p}`") for p in partition_by]
    if len(columns) == 1:
        key = F.col(f"`{columns[0]}`")
        return df.repartitionByRange(num_files, *parts, key).sortWithinPartitions(*parts, key)
    keyed = with_curve(df, columns)
    return (
        keyed.repartitionByRange(num_files, *parts, F.col(_KEY))
        .sortWithinPartitions(*parts, F.col(_KEY))
        .drop(_KEY)
    )


def with_curve(df: DataFrame, columns: Sequence[str]) -> DataFrame:
    """``df`` with the curve value of each row in column ``__hw_curve`` (a long)."""
    from pyspark.ml.feature import Bucketizer  # JVM-side; imported only when clustering

    types = {f.name: f.dataType for f in df.schema.fields}
    bits = max(1, min(MAX_BITS, 62 // len(columns)))
    ords = [f"__hw_ord{i}" for i in range(len(columns))]
    bucket_cols = [f"__hw_bucket{i}" for i in range(len(columns))]
    ordered = df.select(
        "*", *[_as_double(c, types[c]).alias(o) for c, o in zip(columns, ords, strict=True)]
    )
    probabilities = [i / 2**bits for i in range(1, 2**bits)]
    quantiles = ordered.approxQuantile(ords, probabilities, 1.0 / 2 ** (bits + 1))
    splits = [_splits(q) for q in quantiles]
    bucketed = Bucketizer(
        splitsArray=splits, inputCols=ords, outputCols=bucket_cols, handleInvalid="keep"
    ).transform(ordered)
    top = 2**bits - 1
    ids = [F.least(F.col(b).cast("long"), F.lit(top)) for b in bucket_cols]
    terms = [
        F.shiftleft(F.shiftright(b, bit).bitwiseAND(F.lit(1)), bit * len(ids) + j)
        for bit in range(bits)
        for j, b in enumerate(ids)
    ]
    value = terms[0]
    for term in terms[1:]:
        value = value.bitwiseOR(term)
    return bucketed.withColumn(_KEY, value).drop(*ords, *bucket_cols)


def _splits(quantiles: list[float]) -> list[float]:
    inner = sorted({q for q in quantiles if q not in (float("inf"), float("-inf")) and q == q})
    return [float("-inf"), *inner, float("inf")]


def _as_double(name: str, dtype: DataType) -> Column:
    """An order-preserving double of the column (nulls first, as -inf)."""
    col = F.col(f"`{name}`")
    if isinstance(dtype, StringType):
        # The first six bytes as a 48-bit number: exact in a double, ordered as the bytes.
        head = F.substring(col.cast("binary"), 1, 6)
        value = F.conv(F.rpad(F.hex(head), 12, "0"), 16, 10).cast("double")
    elif isinstance(dtype, DateType):
        value = F.unix_date(col).cast("double")
    elif isinstance(dtype, (TimestampType, TimestampNTZType)):
        value = F.unix_micros(col.cast("timestamp")).cast("double")
    else:
        value = col.cast("double")
    return F.coalesce(value, F.lit(float("-inf")))
