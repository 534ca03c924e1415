"""Tables other engines wrote (../shared/compat/delta-tables): the reference rows, or a
named error — never wrong rows. The reference is delta-rs's DataFusion reader."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder
from pyspark.sql.types import VariantVal

from headwater.errors import HeadwaterError
from tests.conftest import REPO

CORPUS = REPO.parent / "shared" / "compat" / "delta-tables"
TABLES = (
    sorted(p.name for p in CORPUS.iterdir() if (p / "_delta_log").is_dir())
    if CORPUS.is_dir()
    else []
)
# Where the reference reader is wrong: delta-rs overflows INT96 nanoseconds for year 9999,
# which Spark wrote and reads back (and so do we).
EXPECTED_INSTEAD = {
    "table_with_edge_timestamps": [
        {
            "BIG_DATE": dt.datetime(9999, 12, 31),
            "NORMAL_DATE": dt.datetime(2022, 1, 1),
            "SOME_VALUE": 1,
        },
        {
            "BIG_DATE": dt.datetime(9999, 12, 30),
            "NORMAL_DATE": dt.datetime(2022, 2, 1),
            "SOME_VALUE": 2,
        },
    ],
}
OUTCOMES: dict[str, str] = {}


def _reference(path: Path) -> pa.Table | Exception:
    try:
        return pa.table(
            QueryBuilder()
            .register("t", DeltaTable(str(path)))
            .execute("select * from t")
            .read_all()
        )
    except Exception as e:  # the reference engine itself refuses: missing files, unknown features
        return e


def _canonical(rows: list[dict]) -> list[str]:
    def norm(v):
        if isinstance(v, VariantVal):  # the reference gives Delta's encoding as a struct
            return {"metadata": bytes(v.metadata), "value": bytes(v.value)}
        if isinstance(v, dt.datetime) and v.tzinfo is not None:
            return v.astimezone(dt.timezone.utc).replace(tzinfo=None)
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        if isinstance(v, list) and v and all(isinstance(x, tuple) and len(x) == 2 for x in v):
            return {str(k): norm(x) for k, x in v}  # an Arrow map: key/value pairs
        if isinstance(v, list):
            return [norm(x) for x in v]
        if isinstance(v, tuple):  # map entries as arrow gives them
            return [norm(x) for x in v]
        return v

    return sorted(
        json.dumps({k: norm(v) for k, v in r.items()}, default=str, sort_keys=True) for r in rows
    )


@pytest.mark.skipif(not TABLES, reason="compat corpus not present beside the repository")
@pytest.mark.parametrize("name", TABLES)
def test_corpus_table_reads_like_its_writer_or_fails_by_name(spark, name):
    path = CORPUS / name
    reference = _reference(path)
    try:
        ours = spark.read.format("delta").load(str(path))
        rows = [r.asDict(recursive=True) for r in ours.collect()]
    except HeadwaterError as e:
        OUTCOMES[name] = f"named error: {type(e).__name__}"
        assert name in str(e) or str(path) in str(e) or "Delta" in str(e)
        return
    except Exception as e:  # Spark's own error for a missing data file names the file
        message = str(e)
        assert isinstance(reference, Exception), (
            f"{name}: we failed where the reference read it: {message[:300]}"
        )
        named = (
            "does not exist",
            "FileNotFound",
            "not found",
            "referenced by the Delta log but missing",
        )
        assert any(n in message for n in named), message[:500]
        OUTCOMES[name] = "named error: missing file"
        return
    if isinstance(reference, Exception):
        # Only acceptable when the reference fails for a feature it lacks, not for missing data.
        assert "Failed to fetch metadata" not in str(reference), (
            f"{name}: read although files are missing"
        )
        OUTCOMES[name] = f"read (reference refused: {str(reference)[:60]})"
        return
    if reference.num_rows > 50_000:
        assert len(rows) == reference.num_rows
        OUTCOMES[name] = f"pass ({len(rows)} rows, count only)"
        return
    expected = _canonical(EXPECTED_INSTEAD.get(name) or reference.to_pylist())
    assert _canonical(rows) == expected, f"{name}: rows differ from the writing engine's"
    OUTCOMES[name] = f"pass ({len(rows)} rows)"


def _earlier_versions(path: Path, most: int = 6) -> list[int]:
    """Up to ``most`` earlier versions whose commit the log still holds, spread evenly."""
    log = path / "_delta_log"
    versions = sorted(int(p.stem) for p in log.glob("*.json") if p.stem.isdigit())[:-1]
    if len(versions) <= most:
        return versions
    step = len(versions) / most
    return sorted({versions[int(i * step)] for i in range(most)})


@pytest.mark.skipif(not TABLES, reason="compat corpus not present beside the repository")
@pytest.mark.parametrize("name", TABLES)
def test_corpus_table_earlier_versions_read_like_the_reference(spark, name):
    path = CORPUS / name
    checked = []
    for version in _earlier_versions(path):
        try:
            reference = pa.table(
                QueryBuilder()
                .register("t", DeltaTable(str(path), version=version))
                .execute("select * from t")
                .read_all()
            )
        except Exception:
            continue  # the log (or the data) no longer allows this version
        try:
            df = spark.read.format("delta").option("versionAsOf", version).load(str(path))
            rows = [r.asDict(recursive=True) for r in df.collect()]
        except HeadwaterError as e:
            assert "feature" in str(e) or "missing" in str(e), str(e)
            continue
        assert _canonical(rows) == _canonical(reference.to_pylist()), (
            f"{name}@{version}: rows differ from the reference"
        )
        checked.append(version)
    OUTCOMES[f"{name} (earlier)"] = f"versions {checked}"


CDF_TABLES = [
    name
    for name in TABLES
    if any(
        '"delta.enableChangeDataFeed":"true"' in p.read_text()
        for p in (CORPUS / name / "_delta_log").glob("*.json")
    )
]


def _utc_millis(t: dt.datetime) -> int:
    return int(t.replace(tzinfo=t.tzinfo or dt.timezone.utc).timestamp() * 1000)


def _has_in_commit_timestamps(path: Path) -> bool:
    return any(
        '"delta.enableInCommitTimestamps":"true"' in p.read_text()
        for p in (path / "_delta_log").glob("*.json")
    )


def _file_times(path: Path) -> dict[int, int]:
    """Each commit's time as delta-spark reads it without in-commit timestamps: the commit
    file's modification time in milliseconds, made to increase (+1 ms where it goes back).
    delta-rs gives commitInfo.timestamp instead, which a copy of the table keeps while its
    files' times change, so the reference's _commit_timestamp is not compared."""
    times: dict[int, int] = {}
    last = None
    for f in sorted((path / "_delta_log").glob("[0-9]" * 20 + ".json")):
        ms = f.stat().st_mtime_ns // 1_000_000
        if last is not None and ms <= last:
            ms = last + 1
        times[int(f.stem)] = last = ms
    return times


@pytest.mark.skipif(not CDF_TABLES, reason="compat corpus not present beside the repository")
@pytest.mark.parametrize("name", CDF_TABLES)
def test_corpus_change_feed_reads_like_the_reference(spark, name):
    path = CORPUS / name
    try:
        reference = pa.table(DeltaTable(str(path)).load_cdf(starting_version=0).read_all())
    except Exception as e:
        OUTCOMES[f"{name} (cdf)"] = f"reference refused: {str(e)[:60]}"
        return
    try:
        df = (
            spark.read.format("delta")
            .option("readChangeFeed", "true")
            .option("startingVersion", 0)
            .load(str(path))
        )
        rows = [r.asDict(recursive=True) for r in df.drop("_commit_timestamp").collect()]
        times = dict(df.selectExpr("_commit_version", "unix_millis(_commit_timestamp)").collect())
    except HeadwaterError as e:
        OUTCOMES[f"{name} (cdf)"] = f"named error: {type(e).__name__}"
        assert "deletion vectors" in str(e) or "change data" in str(e), str(e)
        return
    expected = reference.drop_columns(["_commit_timestamp"]).to_pylist()
    assert _canonical(rows) == _canonical(expected), f"{name}: change feed differs"
    if _has_in_commit_timestamps(path):  # both engines read the in-commit timestamp
        commit_times = {
            r["_commit_version"]: _utc_millis(r["_commit_timestamp"])
            for r in reference.select(["_commit_version", "_commit_timestamp"]).to_pylist()
        }
    else:
        commit_times = _file_times(path)
    assert times == {v: t for v, t in commit_times.items() if v in times}, (
        f"{name}: _commit_timestamp is not the commit's time"
    )
    OUTCOMES[f"{name} (cdf)"] = f"pass ({len(rows)} change rows)"


@pytest.mark.skipif(
    not (CORPUS / "spark-shredded-variant-preview-delta").is_dir(), reason="corpus not present"
)
def test_shredded_variants_read_as_the_same_values_as_unshredded(spark):
    """The reference refuses variant shredding; the corpus holds the same rows written
    unshredded, so those are the expected values."""

    def as_json(name):
        df = spark.read.format("delta").load(str(CORPUS / name))
        return sorted(r[0] for r in df.selectExpr("to_json(struct(*))").collect())

    shredded = as_json("spark-shredded-variant-preview-delta")
    assert len(shredded) == 102
    assert shredded == as_json("spark-variant-checkpoint")


def test_corpus_outcomes_are_listed():
    """Prints each table's outcome (run with -s to see the list)."""
    for name in TABLES:
        print(f"{name:45s} {OUTCOMES.get(name, 'not run')}")
    for name, outcome in sorted(OUTCOMES.items()):
        if name not in TABLES:
            print(f"{name:45s} {outcome}")
