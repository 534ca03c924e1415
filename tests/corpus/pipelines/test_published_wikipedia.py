"""The Wikipedia clickstream pipeline of the known platform's example notebooks, in Python
(``dlt``: ``dlt.read``, ``expect``, ``expect_or_fail``, sort and limit) and in SQL
(``CREATE OR REFRESH MATERIALIZED VIEW`` over ``json.`path```, ``CONSTRAINT ... ON
VIOLATION FAIL UPDATE``). The sample file is replaced by one of the same columns
(``prev_id, curr_id, n, prev_title, curr_title, type``) with external referrers (no
``prev_id``), pages without an id or a title, and, in a second update, a row with no
clicks that fails ``valid_count``."""

from __future__ import annotations

from pipeline_corpus import Edit, Pipeline, assert_rows, edited, expectation_counts, json_lines
from pipeline_sources import SOURCES

DATASET = "/databricks-datasets/wikipedia-datasets/data-001/clickstream/raw-uncompressed-json/2015_2_clickstream.json"
DATA_FILE = "clickstream/2015_2_clickstream.json"
PATH_EDIT = Edit(DATASET, "{landing}/" + DATA_FILE, "the sample dataset's path: a landing file")
RAW_COLUMNS = ("curr_id", "curr_title", "n", "prev_id", "prev_title", "type")


def clickstream() -> list[dict]:
    """Referrers of Apache_Spark (distinct counts, 13 of them so the top 10 cuts), 60
    other pages (two rows each for some; distinct totals so the top 50 cuts), pages with
    no id or no title (``valid_current_page`` warns), external referrers (no prev_id)."""
    rows = [
        {
            "prev_id": 1000 + i,
            "curr_id": 42,
            "n": 900 - 37 * i,
            "prev_title": f"Referrer_{i}",
            "curr_title": "Apache_Spark",
            "type": "link",
        }
        for i in range(12)
    ]
    rows.append(
        {
            "curr_id": 42,
            "n": 3,
            "prev_title": "other-google",
            "curr_title": "Apache_Spark",
            "type": "external",
        }
    )
    for p in range(60):
        rows.append(
            {
                "prev_id": 7,
                "curr_id": 2000 + p,
                "n": 11 * p + 5,
                "prev_title": "Main_Page",
                "curr_title": f"Page_{p}",
                "type": "link",
            }
        )
        if p % 3 == 0:
            rows.append(
                {
                    "curr_id": 2000 + p,
                    "n": 2 * p + 1,
                    "prev_title": "other-wikipedia",
                    "curr_title": f"Page_{p}",
                    "type": "external",
                }
            )
    rows.append(
        {"prev_id": 7, "n": 4, "prev_title": "Main_Page", "curr_title": "No_Id", "type": "link"}
    )
    rows.append(
        {
            "prev_id": 7,
            "curr_id": 3001,
            "n": 6,
            "prev_title": "Main_Page",
            "curr_title": None,
            "type": "redlink",
        }
    )
    return rows


def oracle(rows: list[dict]) -> dict[str, list[dict]]:
    raw = [{c: r.get(c) for c in RAW_COLUMNS} for r in rows]
    clean = [
        {
            "current_page_id": r["curr_id"],
            "current_page_title": r["curr_title"],
            "click_count": r["n"],
            "previous_page_id": r["prev_id"],
            "previous_page_title": r["prev_title"],
        }
        for r in raw
    ]
    spark_refs = sorted(
        (r for r in clean if r["current_page_title"] == "Apache_Spark"),
        key=lambda r: -r["click_count"],
    )
    assert spark_refs[9]["click_count"] > spark_refs[10]["click_count"]  # the cut is exact
    totals: dict = {}
    for r in clean:
        totals[r["current_page_title"]] = totals.get(r["current_page_title"], 0) + r["click_count"]
    top = sorted(totals.items(), key=lambda kv: -kv[1])
    assert top[49][1] > top[50][1]
    failing_page = sum(
        1 for r in clean if r["current_page_id"] is None or r["current_page_title"] is None
    )
    return {
        "clickstream_raw": raw,
        "clickstream_clean": clean,
        "top_spark_referrers": [
            {"referrer": r["previous_page_title"], "click_count": r["click_count"]}
            for r in spark_refs[:10]
        ],
        "top_pages": [{"current_page_title": t, "total_clicks": n} for t, n in top[:50]],
        "valid_current_page": (len(clean) - failing_page, failing_page),
        "valid_count": (len(clean), 0),
    }


def check(pipeline: Pipeline, result, expected: dict, top_referrers: str) -> None:
    assert result.ok, result.failed()
    for table in ("clickstream_raw", "clickstream_clean", "top_pages"):
        assert_rows(pipeline.rows(table), expected[table])
    assert_rows(pipeline.rows(top_referrers), expected["top_spark_referrers"])
    counts = expectation_counts(pipeline.quality(), "clickstream_clean", result.update_id)
    assert counts == {
        "valid_current_page": expected["valid_current_page"],
        "valid_count": expected["valid_count"],
    }


def fails_on_a_page_without_clicks(pipeline: Pipeline, rows: list[dict], expected: dict) -> None:
    """A second update over a file with a row of zero clicks: ``valid_count`` fails the
    cleaned view's refresh (nothing of it committed) and the views that read it are not
    refreshed; the raw view takes the new file."""
    bad = [
        *rows,
        {
            "prev_id": 9,
            "curr_id": 77,
            "n": 0,
            "prev_title": "X",
            "curr_title": "Zero",
            "type": "link",
        },
    ]
    pipeline.land(DATA_FILE, json_lines(bad))
    second = pipeline.run()
    assert not second.ok
    failed = second.failed()
    assert [f.name.split(".")[-1] for f in failed] == ["clickstream_clean"]
    assert "valid_count" in str(failed[0].error)
    assert_rows(pipeline.rows("clickstream_raw"), oracle(bad)["clickstream_raw"])
    assert_rows(pipeline.rows("clickstream_clean"), expected["clickstream_clean"])


def run_wikipedia(tmp_path, spark, key: str, file: str, top_referrers: str) -> None:
    pipeline = Pipeline.create(tmp_path, spark, key)
    rows = clickstream()
    pipeline.land(DATA_FILE, json_lines(rows))
    pipeline.source(file, edited(SOURCES[key].text(), [PATH_EDIT], **pipeline.places()))
    expected = oracle(rows)
    check(pipeline, pipeline.run(), expected, top_referrers)
    fails_on_a_page_without_clicks(pipeline, rows, expected)


def test_wikipedia_python(tmp_path, spark):
    run_wikipedia(tmp_path, spark, "wikipedia_python", "Wikipedia.py", "top_spark_referrers")


def test_wikipedia_sql(tmp_path, spark):
    run_wikipedia(
        tmp_path, spark, "wikipedia_sql", "Wikipedia.sql", "top_spark_referers"
    )  # its spelling
