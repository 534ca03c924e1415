"""Delta is the format of a table written or created without one, on either engine, as on
the known platform: the README's Auto Loader snippet (``writeStream...toTable(...)``, no
``.format``) made a Parquet table on a delta-spark session. A default the user set
(``spark.sql.sources.default``) is kept. Runs on both engines (the on-delta-spark tier)."""

from __future__ import annotations

import json
import os

from headwater import api, engines


def is_delta(spark, name: str) -> bool:
    found = api.find(spark, name)
    return found is not None and found.exists()


def test_tables_written_or_created_without_a_format_are_delta(spark, tmp_path):
    spark.sql("CREATE SCHEMA IF NOT EXISTS default_format")
    spark.range(3).write.saveAsTable("default_format.batch")
    land = tmp_path / "land"
    land.mkdir()
    (land / "a.json").write_text("\n".join(json.dumps({"id": i}) for i in range(4)) + "\n")
    checkpoint = str(tmp_path / "checkpoint")
    # The README's snippet, as users write it.
    (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.schemaLocation", checkpoint)
        .load(str(land))
        .writeStream.option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .toTable("default_format.events")
        .awaitTermination()
    )
    spark.sql("CREATE TABLE default_format.created (id BIGINT)")
    spark.sql("CREATE TABLE default_format.selected AS SELECT 1 AS id")
    path = str(tmp_path / "by_path")
    spark.range(5).write.save(path)
    for name in ("batch", "events", "created", "selected"):
        assert is_delta(spark, f"default_format.{name}"), f"default_format.{name} is not Delta"
    assert spark.table("default_format.events").count() == 4
    assert os.path.isdir(os.path.join(path, "_delta_log"))
    assert spark.read.load(path).count() == 5
    assert spark.conf.get(engines.DEFAULT_FORMAT) == "delta"


def test_a_default_format_the_user_set_is_kept(spark):
    mine = spark.newSession()  # a session of the user's, on the same engine
    mine.conf.set(engines.DEFAULT_FORMAT, "parquet")
    engines.default_to_delta(mine)  # what install() does
    assert mine.conf.get(engines.DEFAULT_FORMAT) == "parquet"
    mine.sql("CREATE SCHEMA IF NOT EXISTS default_format")
    mine.range(3).write.saveAsTable("default_format.kept")
    assert not is_delta(mine, "default_format.kept")
    assert all(f.endswith(".parquet") for f in mine.table("default_format.kept").inputFiles())
    fresh = spark.newSession()  # nothing set: Delta becomes the default
    engines.default_to_delta(fresh)
    assert fresh.conf.get(engines.DEFAULT_FORMAT) == "delta"
