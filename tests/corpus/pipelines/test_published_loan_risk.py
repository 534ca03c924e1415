"""The Loan Risk pipeline of the known platform's example notebooks, in Python (``dlt``:
``dlt.read``, ``expect_or_drop`` on names with spaces, ``partition_cols``, module-level
column lists, materialized views reading views) and in SQL (``CREATE OR REFRESH
MATERIALIZED VIEW`` over ``parquet.`path```, ``CONSTRAINT ... ON VIOLATION DROP ROW``).
The Lending Club sample is replaced by a Parquet folder of the columns the pipeline uses,
typed as in the sample (rates, dates and lengths as text), with every value the cleaning
handles: ``10+ years``, ``< 1 year``, ``n/a``, ``Source Verified``, statuses kept and left
out, negative or missing average balances, missing states, issue years on both sides of
the train/validation cut."""

from __future__ import annotations

import re
import struct
from decimal import ROUND_HALF_UP, Decimal

from pipeline_corpus import (
    PRE_ANSI_RUNTIME,
    Edit,
    Pipeline,
    assert_rows,
    edited,
    expectation_counts,
    project,
)
from pipeline_sources import SOURCES

SAMPLE = "/databricks-datasets/samples/lending_club/parquet/"
PATH_EDIT = Edit(
    SAMPLE, "{landing}/lending_club/parquet/", "the sample dataset's folder: a landing folder"
)
SCHEMA = (
    "loan_status string, int_rate string, revol_util string, issue_d string, earliest_cr_line string, "
    "emp_length string, verification_status string, total_pymnt double, loan_amnt double, grade string, "
    "annual_inc double, dti double, addr_state string, term string, home_ownership string, purpose string, "
    "application_type string, delinq_2yrs double, total_acc double, avg_cur_bal double"
)
CATEGORICALS = [
    "term",
    "home_ownership",
    "purpose",
    "addr_state",
    "verification_status",
    "application_type",
]
NUMERICS = [
    "loan_amnt",
    "emp_length",
    "annual_inc",
    "dti",
    "delinq_2yrs",
    "revol_util",
    "total_acc",
    "credit_length_in_years",
]
FEATURES = [*CATEGORICALS, *NUMERICS[:-1]]  # the features view's columns before the derived ones


def loans() -> list[tuple]:
    statuses = ("Fully Paid", "Charged Off", "Default", "Current", "Late (31-120 days)")
    lengths = ("10+ years", "< 1 year", "3 years", "n/a", None)
    checks = ("Source Verified", "Verified", "Not Verified")
    return [
        (
            statuses[i % 5],
            f"{5 + i % 9}.{i % 100:02d}%",
            None if i % 7 == 3 else f"{20 + i}.5%",
            f"{('Jan', 'Jun', 'Dec')[i % 3]}-{2012 + i % 7}",
            f"Aug-{1990 + i % 11}",
            lengths[i % 5 if i % 4 else (i // 4) % 5],
            checks[i % 3],
            1000.0 + 123.45 * i,
            1000.0 + 100 * i,
            "ABCDEFG"[i % 7],
            40000.0 + 1000 * i,
            float(i % 30),
            None if i % 11 == 5 else ("CA", "NY", "TX")[i % 3],
            (" 36 months", " 60 months")[i % 2],
            ("RENT", "OWN", "MORTGAGE")[i % 3],
            ("car", "debt_consolidation")[i % 2],
            "INDIVIDUAL",
            float(i % 3),
            float(10 + i),
            None if i % 13 == 6 else (-50.0 if i % 6 == 1 else 500.0 * i),
        )
        for i in range(40)
    ]


def f32(text: str | None) -> float | None:
    if text is None or text.strip() == "":
        return None
    return struct.unpack("f", struct.pack("f", float(text)))[0]


def employment(text: str | None, sql: bool) -> float | None:
    """The Python notebook trims and maps ``< 1`` to 0; the SQL one maps it to nothing
    (so NULL) and drops ``+``."""
    if text is None:
        return None
    text = re.sub(r"([ ]*[a-zA-Z].*)|(n/a)", "", text)
    if sql:
        return f32(text.replace("< 1", "").replace("+", ""))
    text = text.strip().replace("< 1", "0").strip()
    return f32(re.sub(r"10\+", "10", text).strip())


SQL_CLEAN = [
    "bad_loan",
    "int_rate",
    "revol_util",
    "issue_year",
    "earliest_year",
    "credit_length_in_years",
    "emp_length",
    "verification_status",
    "net",
    "grade",
    "loan_amnt",
    "annual_inc",
    "dti",
    "addr_state",
    "term",
    "home_ownership",
    "purpose",
    "application_type",
    "delinq_2yrs",
    "total_acc",
    "avg_cur_bal",
]


def oracle(rows: list[tuple], sql: bool = False) -> dict[str, list[dict]]:
    names = [c.split()[0] for c in SCHEMA.split(", ")]
    raw = [dict(zip(names, r, strict=True)) for r in rows]
    clean = []
    for r in raw:
        if r["loan_status"] not in ("Default", "Charged Off", "Fully Paid"):
            continue
        issue, earliest = float(r["issue_d"][4:8]), float(r["earliest_cr_line"][4:8])
        net = Decimal(repr(r["total_pymnt"] - r["loan_amnt"])).quantize(
            Decimal("0.01"), ROUND_HALF_UP
        )
        row = r | {
            "bad_loan": "false" if r["loan_status"] == "Fully Paid" else "true",
            "int_rate": f32(r["int_rate"].replace("%", "")),
            "revol_util": f32(r["revol_util"].replace("%", "")) if r["revol_util"] else None,
            "issue_year": issue,
            "earliest_year": earliest,
            "credit_length_in_years": issue - earliest,
            "emp_length": employment(r["emp_length"], sql),
            "verification_status": r["verification_status"]
            .replace("Source Verified", "Verified")
            .strip(),
            "net": float(net),
        }
        if row["avg_cur_bal"] is None or row["avg_cur_bal"] >= 0:
            clean.append(row)
    summary_columns = [
        "grade",
        "loan_amnt",
        "annual_inc",
        "dti",
        "credit_length_in_years",
        "addr_state",
        "bad_loan",
        "net",
    ]
    features = project(
        clean, [*FEATURES, "credit_length_in_years", "bad_loan", "int_rate", "net", "issue_year"]
    )
    model = [*CATEGORICALS, *NUMERICS, "bad_loan", "int_rate", "net", "issue_year"]
    summary = project(clean, summary_columns)
    return {
        "lendingclub_raw": raw,
        "lendingclub_clean": project(clean, SQL_CLEAN) if sql else clean,
        "summary_data": summary if sql else [r for r in summary if r["addr_state"] is not None],
        "features": features,
        "train_data": project([f for f in features if f["issue_year"] <= 2015], model),
        "valid_data": project([f for f in features if f["issue_year"] > 2015], model),
    }


def run_loan_risk(tmp_path, spark, key: str, file: str) -> None:
    pipeline = Pipeline.create(tmp_path, spark, key)
    pipeline.spec(PRE_ANSI_RUNTIME)
    rows = loans()
    spark.createDataFrame(rows, SCHEMA).coalesce(1).write.parquet(
        str(pipeline.landing / "lending_club" / "parquet")
    )
    pipeline.source(file, edited(SOURCES[key].text(), [PATH_EDIT], **pipeline.places()))
    result = pipeline.run()
    assert result.ok, result.failed()
    expected = oracle(rows, sql=file.endswith(".sql"))
    for table, want in expected.items():
        assert_rows(pipeline.rows(table), want)
    kept = [
        r
        for r in expected["lendingclub_raw"]
        if r["loan_status"] in ("Default", "Charged Off", "Fully Paid")
    ]
    negative = sum(1 for r in kept if r["avg_cur_bal"] is not None and r["avg_cur_bal"] < 0)
    quality = pipeline.quality()
    assert expectation_counts(quality, "lendingclub_clean") == {
        "avg_cur_bal": (len(kept) - negative, negative)
    }
    if file.endswith(".py"):
        no_state = sum(1 for r in expected["lendingclub_clean"] if r["addr_state"] is None)
        summary = expectation_counts(quality, "summary_data")
        assert summary == {
            "valid addr_state": (len(expected["lendingclub_clean"]) - no_state, no_state)
        }


def test_loan_risk_python(tmp_path, spark):
    run_loan_risk(tmp_path, spark, "loan_risk_python", "Loan Risk.py")


def test_loan_risk_sql(tmp_path, spark):
    run_loan_risk(tmp_path, spark, "loan_risk_sql", "Loan Risk.sql")
