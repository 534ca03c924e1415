"""What the Spark-free reader tests share: reading a file into rows of the declared schema
(checking every batch's Arrow schema), and the values they compare with."""

from __future__ import annotations

import datetime
import json

from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StringType, StructField, StructType

from headwater.formats import parse_format_options, read_file
from tests.formats.helpers import RESCUE

UTC = datetime.timezone.utc


def jsonl(*rows) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)


def read(path, fmt, sch, options=None, rescue=RESCUE, detect_new=False, batch_rows=65536):
    """All rows of the file; every batch must carry exactly the promised Arrow schema."""
    fields = list(sch.fields) + ([StructField(rescue, StringType())] if rescue else [])
    expected = to_arrow_schema(StructType(fields), timezone="UTC")
    rows = []
    opts = parse_format_options(fmt, options or {})
    for batch in read_file(path, sch, opts, rescue, detect_new, batch_rows):
        assert batch.schema == expected
        assert batch.num_rows <= batch_rows
        rows.extend(batch.to_pylist())
    return rows


def fopts(fmt: str, options: dict):
    return parse_format_options(fmt, options)


def rescued(path: str, **values) -> str:
    return json.dumps({**values, "_file_path": path}, separators=(",", ":"))


def ts(*args) -> datetime.datetime:
    return datetime.datetime(*args, tzinfo=UTC)


def cloud_opts(fmt: str, **format_options):
    """The options of ``fmt`` and Auto Loader's default (columns as strings) for inference."""
    return parse_format_options(fmt, format_options), False
