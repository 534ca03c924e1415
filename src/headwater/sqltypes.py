"""Spark SQL type strings (``bigint``, ``decimal(10,2)``, ``array<struct<a:int>>``) parsed in Python.

PySpark parses DDL through the JVM, which Python data sources (planned in a separate worker
process) do not have. Schema hints and user-given schemas need it there.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, TypeVar, cast

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from headwater.errors import OptionError

if TYPE_CHECKING:
    import pyarrow as pa

_PRIMITIVES: dict[str, DataType] = {
    "boolean": BooleanType(), "bool": BooleanType(), "tinyint": ByteType(), "byte": ByteType(),
    "smallint": ShortType(), "short": ShortType(), "int": IntegerType(), "integer": IntegerType(),
    "bigint": LongType(), "long": LongType(), "float": FloatType(), "real": FloatType(),
    "double": DoubleType(), "string": StringType(), "binary": BinaryType(), "date": DateType(),
    "timestamp": TimestampType(), "timestamp_ltz": TimestampType(), "timestamp_ntz": TimestampNTZType(),
}  # fmt: skip
_TOKEN = re.compile(r"\s*(`(?:[^`]|``)*`|[A-Za-z_][A-Za-z0-9_]*|\d+|[<>(),:.])")


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise OptionError(f"Cannot parse type text at '{text[pos:]}' in '{text}'.")
        out.append(m.group(1))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def peek(self) -> str | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok.lower() != expected):
            raise OptionError(
                f"Expected {expected or 'more'} in type '{self.text}', found {tok or 'the end'}."
            )
        self.i += 1
        return tok

    def name(self) -> str:
        tok = self.take()
        return tok[1:-1].replace("``", "`") if tok.startswith("`") else tok

    def dtype(self) -> DataType:
        word = self.take().lower()
        if word == "array":
            self.take("<")
            element = self.dtype()
            self.take(">")
            return ArrayType(element, True)
        if word == "map":
            self.take("<")
            key = self.dtype()
            self.take(",")
            value = self.dtype()
            self.take(">")
            return MapType(key, value, True)
        if word == "struct":
            self.take("<")
            fields = []
            while self.peek() != ">":
                name = self.name()
                if self.peek() == ":":
                    self.take(":")
                fields.append(StructField(name, self.dtype(), True))
                if self.peek() == ",":
                    self.take(",")
            self.take(">")
            return StructType(fields)
        if word in ("decimal", "dec", "numeric"):
            precision, scale = 10, 0
            if self.peek() == "(":
                self.take("(")
                precision = int(self.take())
                if self.peek() == ",":
                    self.take(",")
                    scale = int(self.take())
                self.take(")")
            return DecimalType(precision, scale)
        if word in ("varchar", "char"):
            self.take("(")
            self.take()
            self.take(")")
            return StringType()
        if word in ("geometry", "geography"):
            return self.geo(word)
        if word not in _PRIMITIVES:
            raise OptionError(f"Unknown type '{word}' in '{self.text}'.")
        return _PRIMITIVES[word]

    def geo(self, word: str) -> DataType:
        """``geometry(4326)``, ``geometry(OGC:CRS84)``, ``geography(4326)``,
        ``geography(OGC:CRS84, SPHERICAL)``: Spark's geospatial types (pyspark 4.1 and
        later), parsed as Spark spells them in DDL and in a Delta schema."""
        try:
            from pyspark.sql.types import GeographyType, GeometryType
        except ImportError:
            raise OptionError(
                f"Type '{self.text}' needs pyspark's geospatial types (pyspark 4.1 or later)."
            ) from None
        self.take("(")
        parts = [self.take()]
        while self.peek() not in (")", ",", None):
            parts.append(self.take())  # OGC : CRS84
        crs = "".join(parts)
        algorithm = None
        if self.peek() == ",":
            self.take(",")
            algorithm = self.take().lower()
        self.take(")")
        if algorithm not in (None, "spherical"):
            raise OptionError(
                f"Edge interpolation '{algorithm}' in '{self.text}': Spark has spherical only."
            )
        srid: int | str = int(crs) if crs.isdigit() else crs
        cls = GeometryType if word == "geometry" else GeographyType
        if isinstance(srid, str):  # a CRS name: Spark's JSON form, which it parses itself
            from pyspark.sql.types import _parse_datatype_json_string

            text = f"{word}({crs}, SPHERICAL)" if word == "geography" else f"{word}({crs})"
            try:
                return _parse_datatype_json_string(json.dumps(text))
            except Exception as e:
                raise OptionError(
                    f"Unknown coordinate reference system in '{self.text}': {e}"
                ) from None
        return cls(srid)


def parse_type(text: str) -> DataType:
    parser = _Parser(text)
    result = parser.dtype()
    if parser.peek() is not None:
        raise OptionError(f"Unexpected '{parser.peek()}' in type '{text}'.")
    return result


def parse_columns(text: str) -> list[tuple[list[str], DataType]]:
    """``"a int, s.b string, `odd name` bigint"`` -> ``[(["a"], int), (["s","b"], string), ...]``."""
    parser = _Parser(text)
    columns: list[tuple[list[str], DataType]] = []
    while parser.peek() is not None:
        path = [parser.name()]
        while parser.peek() == ".":
            parser.take(".")
            path.append(parser.name())
        if parser.peek() == ":":
            parser.take(":")
        columns.append((path, parser.dtype()))
        if parser.peek() is not None:
            parser.take(",")
    return columns


def parse_schema(text: str) -> StructType:
    return StructType([StructField(".".join(p), t, True) for p, t in parse_columns(text)])


D = TypeVar("D", bound=DataType)


def as_nullable(dtype: D) -> D:
    """The same type with every field, element and value nullable (what tables store)."""
    out: DataType = dtype
    if isinstance(dtype, StructType):
        out = StructType(
            [StructField(f.name, as_nullable(f.dataType), True, f.metadata) for f in dtype]
        )
    elif isinstance(dtype, ArrayType):
        out = ArrayType(as_nullable(dtype.elementType), True)
    elif isinstance(dtype, MapType):
        out = MapType(as_nullable(dtype.keyType), as_nullable(dtype.valueType), True)
    return cast(D, out)


def arrow_schema(schema: StructType) -> pa.Schema:
    """``schema`` as Arrow batches of it must be typed: timestamps ``timestamp[us, tz=UTC]``
    (the one spelling Spark takes from Arrow for every session time zone)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")
