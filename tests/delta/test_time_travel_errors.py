"""Time travel outside the versions a table's log holds fails as delta-spark fails:
``DELTA_VERSION_NOT_FOUND`` (past the latest version or before the earliest kept one),
``DELTA_TIMESTAMP_GREATER_THAN_COMMIT`` (after the latest commit) and
``DELTA_TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION`` (before the first kept commit), whichever
way the read is spelt: reader options, SQL ``VERSION AS OF`` / ``TIMESTAMP AS OF`` / ``@v``,
by path or by name, and the typed API."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from deltalake import DeltaTable as RsTable

from headwater import api
from headwater.delta.log.delta_log import DeltaLog
from headwater.delta.tables import DeltaTable
from headwater.errors import DeltaAnalysisError, HeadwaterError


def _two_versions(spark, path: str) -> None:
    spark.range(3).write.format("delta").save(path)
    spark.range(3, 5).write.format("delta").mode("append").save(path)


def _raises(error_class: str, message: str, read) -> None:
    with pytest.raises(HeadwaterError) as caught:  # SQL's error keeps the condition
        read().collect()
    assert caught.value.getErrorClass() == error_class, repr(caught.value)
    assert message in str(caught.value), str(caught.value)


def _stamp(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).isoformat()


def test_version_past_the_latest_every_spelling(spark, table_path):
    _two_versions(spark, table_path)
    spark.read.format("delta").load(table_path).write.format("delta").saveAsTable("tt_named")
    expected = "Cannot time travel Delta table to version 5. Available versions: [0, 1]."
    reads = [
        lambda: spark.read.format("delta").option("versionAsOf", 5).load(table_path),
        lambda: spark.sql(f"SELECT * FROM delta.`{table_path}` VERSION AS OF 5"),
        lambda: api.table(spark, f"delta.`{table_path}`").read(version=5),
    ]
    for read in reads:
        _raises("DELTA_VERSION_NOT_FOUND", expected, read)
    named = "Cannot time travel Delta table to version 3. Available versions: [0, 0]."
    for read in [
        lambda: spark.read.option("versionAsOf", 3).table("tt_named"),
        lambda: spark.sql("SELECT * FROM tt_named VERSION AS OF 3"),
        lambda: spark.sql("SELECT * FROM tt_named@v3"),
    ]:
        _raises("DELTA_VERSION_NOT_FOUND", named, read)
    with pytest.raises(DeltaAnalysisError) as caught:
        spark.read.format("delta").option("versionAsOf", 5).load(table_path)
    assert caught.value.getSqlState() == "22003"


def test_version_before_the_earliest_kept_one(spark, table_path):
    _two_versions(spark, table_path)
    spark.range(5, 6).write.format("delta").mode("append").save(table_path)
    RsTable(table_path).create_checkpoint()  # at version 2
    spark.range(6, 7).write.format("delta").mode("append").save(table_path)
    for v in (0, 1):  # the log cleanup a checkpoint allows
        (Path(table_path) / "_delta_log" / f"{v:020d}.json").unlink()
    expected = "Cannot time travel Delta table to version {}. Available versions: [2, 3]."
    for version in (0, 1, -1):
        _raises(
            "DELTA_VERSION_NOT_FOUND",
            expected.format(version),
            lambda v=version: spark.read.format("delta").option("versionAsOf", v).load(table_path),
        )
    assert spark.read.format("delta").option("versionAsOf", 2).load(table_path).count() == 6
    assert spark.read.format("delta").option("versionAsOf", 3).load(table_path).count() == 7


def test_timestamp_after_the_latest_commit_and_before_the_first(spark, table_path):
    _two_versions(spark, table_path)
    history = {h["version"]: h["timestamp"] for h in DeltaLog(table_path).history()}
    later = _stamp(history[1] + 60_000)
    reads = [
        lambda: spark.read.format("delta").option("timestampAsOf", later).load(table_path),
        lambda: spark.sql(f"SELECT * FROM delta.`{table_path}` TIMESTAMP AS OF '{later}'"),
        lambda: api.table(spark, f"delta.`{table_path}`").read(timestamp=later),
    ]
    for read in reads:
        _raises("DELTA_TIMESTAMP_GREATER_THAN_COMMIT", "is after the table's latest version", read)
    earlier = _stamp(history[0] - 60_000)
    _raises(
        "DELTA_TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION",
        "is before the earliest version available to this table",
        lambda: spark.read.format("delta").option("timestampAsOf", earlier).load(table_path),
    )
    # the latest commit's own timestamp still reads the latest version
    at_latest = _stamp(history[1])
    assert (
        spark.read.format("delta").option("timestampAsOf", at_latest).load(table_path).count() == 5
    )


def test_restore_outside_the_kept_versions_says_so_in_restores_words(spark, table_path):
    _two_versions(spark, table_path)
    table = DeltaTable.forPath(spark, table_path)
    history = {h["version"]: h["timestamp"] for h in DeltaLog(table_path).history()}
    _raises(
        "DELTA_CANNOT_RESTORE_TABLE_VERSION",
        "Cannot restore table to version 5. Available versions: [0, 1].",
        lambda: table.restoreToVersion(5),
    )
    _raises(
        "DELTA_CANNOT_RESTORE_TIMESTAMP_GREATER",
        "as it is after the latest version available",
        lambda: table.restoreToTimestamp(_stamp(history[1] + 60_000)),
    )
    _raises(
        "DELTA_CANNOT_RESTORE_TIMESTAMP_EARLIER",
        "as it is before the earliest version available",
        lambda: spark.sql(
            f"RESTORE delta.`{table_path}` TO TIMESTAMP AS OF '{_stamp(history[0] - 60_000)}'"
        ),
    )
    assert spark.read.format("delta").load(table_path).count() == 5  # nothing restored
