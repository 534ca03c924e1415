"""Every format option headwater does not honour is refused by name, the same way, by Auto
Loader and by COPY INTO: before any file is read, saying what happens instead."""

from __future__ import annotations

import re

import pytest

from headwater.copyinto import CopyIntoError, copy_into
from headwater.formats.options import TABLES

# A value Spark users set for the options honoured only for one value.
_OTHER_VALUE = {"maxcharspercolumn": "100000", "locale": "fr-FR", "timezone": "Europe/Oslo"}


def _refusals() -> list[tuple[str, str, str]]:
    """(format, option, value) for every refused option and every other value of the options
    honoured for one value only."""
    out = []
    for fmt, table in TABLES.items():
        for key, option in table.items():
            if option.refused:
                out.append((fmt, option.name, "true"))
            elif option.only in ("true", "false"):
                out.append((fmt, option.name, "false" if option.only == "true" else "true"))
            elif option.only:
                out.append((fmt, option.name, _OTHER_VALUE.get(key, "LEGACY")))
    return out


REFUSALS = _refusals()


def test_the_refusals_cover_each_format_that_has_spark_options():
    formats = {fmt for fmt, _, _ in REFUSALS}
    assert formats == {"json", "csv", "text", "parquet", "avro", "orc"}
    assert len(REFUSALS) >= 40


@pytest.fixture(scope="module")
def landing(tmp_path_factory):
    land = tmp_path_factory.mktemp("land")
    (land / "a.json").write_text('{"id": 1}\n')
    return land


@pytest.mark.parametrize(("fmt", "name", "value"), REFUSALS, ids=lambda v: str(v))
def test_refused_by_auto_loader_and_copy_into(spark, landing, tmp_path, fmt, name, value):
    said = rf"'{re.escape(name)}'.*(not supported|write option)"
    reader = (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", fmt)
        .option("cloudFiles.schemaLocation", str(tmp_path / "schema"))
        .option(name, value)
    )
    with pytest.raises(Exception, match=said):
        reader.load(str(landing))
    with pytest.raises(CopyIntoError, match=said):
        copy_into(
            spark, f"delta.`{tmp_path / 'table'}`", str(landing), fmt.upper(),
            format_options={name: value},
        )  # fmt: skip
    assert not (tmp_path / "table").exists()
