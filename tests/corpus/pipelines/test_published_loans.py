"""The loans pipeline of the known platform's demos, three ways: the SQL notebook before the
platform's new syntax (``CREATE STREAMING LIVE TABLE``, ``cloud_files``, ``LIVE.x``,
``stream(LIVE.x)``, ``CREATE LIVE TABLE``), the same notebook today (``CREATE STREAMING
TABLE``, ``STREAM read_files``, ``STREAM delta.`path```, ``CREATE MATERIALIZED VIEW``), and
its Python twin (``dlt``: a streaming view joined with a batch table, expectations of every
action, ``cluster_by``, ``union``). Auto Loader reads JSON transactions and CSV loans; the
accounting treatments are a Delta table at a path.

The data has the generator notebook's columns and formats (dates as ``MM-dd-yyyy HH:mm:ss``
text, which the expectation ``next_payment_date > date('2020-12-31')`` compares with a date:
as the runtime the demo was written for, ANSI mode off, does not cast text that is no date,
NULL, and a NULL passes), with treatments no reference row has (the inner joins drop them), balances at and
below zero (dropped, or kept by the quarantine table), unknown grades and empty recoveries;
a second update brings a transaction without a cost centre, which fails
``cleaned_new_txs`` and the views that read it while the others take the new rows."""

from __future__ import annotations

from pipeline_corpus import (
    PRE_ANSI_RUNTIME,
    Edit,
    Pipeline,
    assert_rows,
    csv_text,
    edited,
    expectation_counts,
    json_lines,
)
from pipeline_sources import SOURCES

VOLUME = "/Volumes/main__build/dbdemos_dlt_loan/raw_data"
VOLUME_EDIT = Edit(VOLUME, "{landing}", "the demo's volume: the landing folder", count=4)
TREATMENTS = {
    0: "held_to_maturity",
    1: "available_for_sale",
    2: "amortised_cost",
    3: "loans_and_recs",
    4: "held_for_hedge",
    5: "fv_designated",
}
TX_COLUMNS = [
    "acc_fv_change_before_taxes",
    "accounting_treatment_id",
    "accrued_interest",
    "arrears_balance",
    "base_rate",
    "balance",
    "behavioral_curve_id",
    "cost_center_code",
    "count",
    "country_code",
    "date",
    "encumbrance_type",
    "end_date",
    "first_payment_date",
    "guarantee_scheme",
    "id",
    "imit_amount",
    "last_payment_date",
    "minimum_balance_eur",
    "next_payment_date",
    "purpose",
    "status",
    "type",
]
LOAN_HEADER = (
    "id",
    "member_id",
    "loan_amnt",
    "grade",
    "addr_state",
    "revol_bal",
    "recoveries",
    "accounting_treatment_id",
)
COUNTRIES = ("FR", "DE", "US", "JP")


def transaction(i: int, **overrides) -> dict:
    """One transaction as the generator writes it (Spark's JSON writer leaves out NULLs)."""
    row = {
        "id": i,
        "acc_fv_change_before_taxes": 100 + 7 * i,
        "purpose": ("admin", "deposit", "fees")[i % 3],
        "accounting_treatment_id": i % 8,  # 6 and 7 have no reference row
        "accrued_interest": 100 + i,
        "arrears_balance": (i * 37) % 500,  # 0 for i = 0 and every 500th
        "base_rate": ("ZERO", "UKBRBASE", "FDTR", None)[i % 4],
        "behavioral_curve_id": i % 6,
        "cost_center_code": COUNTRIES[i % 3],
        "country_code": COUNTRIES[(i + 1) % 4],
        "date": f"0{1 + i % 9}-1{i % 10}-2024 0{i % 10}:15:00",
        "end_date": f"0{1 + i % 9}-2{i % 10}-2026 10:00:00",
        "next_payment_date": f"0{1 + i % 9}-0{1 + i % 9}-2025 11:00:00",
        "first_payment_date": f"0{1 + i % 9}-0{1 + i % 9}-2025 12:00:00",
        "last_payment_date": f"0{1 + i % 9}-0{1 + i % 9}-2025 13:00:00",
        "count": (i * 13) % 500,
        "balance": (i * 53) % 500 - 30,  # -30 .. 469, some at or below zero
        "imit_amount": (i * 11) % 500,
        "minimum_balance_eur": (i * 17) % 500,
        "type": ("bonds", "call", "savings")[i % 3],
        "status": ("active", "cancelled", "other")[i % 3],
        "guarantee_scheme": ("repo", "none")[i % 2],
        "encumbrance_type": ("be_pf", "us_fdic")[i % 2],
    }
    row.update(overrides)
    return {k: v for k, v in row.items() if v is not None}


def loans() -> list[tuple]:
    grades = ("A", "B", "C", "G", "H", None)  # H and none: not a valid grade
    states = ("CA", "NY", "TX")
    return [
        (
            1000 + i,
            50 + i,
            1000 * (i + 1),
            grades[i % 6],
            states[i % 3],
            100 * i + 7,
            None if i % 5 == 4 else 1.5 * i,
            i % 7,
        )
        for i in range(24)
    ]


def oracle(txs: list[dict], historical: list[tuple], python: bool) -> dict[str, list]:
    raw = [{**dict.fromkeys(TX_COLUMNS), **t, "_rescued_data": None} for t in txs]
    new = [
        {**r, "accounting_treatment": TREATMENTS[r["accounting_treatment_id"]]}
        for r in raw
        if r["accounting_treatment_id"] in TREATMENTS
    ]
    cleaned = [r for r in new if r["balance"] > 0 and r["arrears_balance"] > 0]
    quarantined = [r for r in new if r["balance"] <= 0 or r["arrears_balance"] <= 0]
    loans_rows = [
        {**dict(zip(LOAN_HEADER, row, strict=True)), "_rescued_data": None} for row in historical
    ]
    hist = [
        {**r, "accounting_treatment": TREATMENTS[r["accounting_treatment_id"]]}
        for r in loans_rows
        if r["accounting_treatment_id"] in TREATMENTS
    ]
    if python:  # the Python twin drops loans whose recoveries are not an integer
        hist = [r for r in hist if r["recoveries"] is not None]
    by_state: dict = {}
    for r in hist:
        by_state[r["addr_state"]] = by_state.get(r["addr_state"], 0) + r["revol_bal"]
    by_country: dict = {}
    counts: dict = {}
    by_cost_center: dict = {}
    for r in cleaned:
        by_country[r["country_code"]] = by_country.get(r["country_code"], 0) + r["balance"]
        counts[r["country_code"]] = counts.get(r["country_code"], 0) + r["count"]
        by_cost_center[r["cost_center_code"]] = (
            by_cost_center.get(r["cost_center_code"], 0) + r["balance"]
        )
    totals = [{"bal": v, "location_code": k} for k, v in (*by_state.items(), *by_country.items())]
    if not python:  # SQL's UNION is distinct; the Python union keeps duplicates
        totals = [dict(t) for t in {tuple(sorted(t.items())) for t in totals}]
    return {
        "raw_txs": raw,
        "cleaned_new_txs": cleaned,
        "quarantine_bad_txs": quarantined,
        "historical_txs": hist,
        "total_loan_balances": totals,
        "new_loan_balances_by_cost_center": [
            {"sum_balance": v, "cost_center_code": k} for k, v in by_cost_center.items()
        ],
        "new_loan_balances_by_country": [
            {"sum_count": v, "country_code": k} for k, v in counts.items()
        ],
    }


def expected_quality(txs: list[dict], python: bool) -> dict[str, dict[str, tuple[int, int]]]:
    joined = [t for t in txs if t["accounting_treatment_id"] in TREATMENTS]
    good = sum(1 for t in joined if t["balance"] > 0 and t["arrears_balance"] > 0)
    found = {
        # next_payment_date is text no date can be cast from: NULL, which passes
        "cleaned_new_txs": {
            "Payments should be this year": (len(joined), 0),
            "Balance should be positive": (good, len(joined) - good),
            "Cost center must be specified": (len(joined), 0),
        },
        "quarantine_bad_txs": {
            "Payments should be this year": (len(joined), 0),
            "Balance should be positive": (len(joined) - good, good),
        },
    }
    if python:
        hist = [r for r in loans() if r[7] in TREATMENTS]
        # a NULL grade makes the condition NULL, which passes (as above)
        valid = sum(1 for r in hist if r[3] in (None, "A", "B", "C", "D", "E", "F", "G"))
        whole = sum(1 for r in hist if r[6] is not None)
        found["historical_txs"] = {
            "Grade should be valid": (valid, len(hist) - valid),
            "Recoveries shoud be int": (whole, len(hist) - whole),
        }
    return found


def run_loans(tmp_path, spark, key: str, python: bool) -> None:
    pipeline = Pipeline.create(tmp_path, spark, key)
    pipeline.spec(PRE_ANSI_RUNTIME)
    places = pipeline.places()
    spark.createDataFrame(
        sorted(TREATMENTS.items()), "id bigint, accounting_treatment string"
    ).write.format("delta").save(f"{pipeline.landing}/ref_accounting_treatment")
    pipeline.land("historical_loans/part-0.csv", csv_text(LOAN_HEADER, loans()))
    first = [transaction(i) for i in range(40)]
    pipeline.land("raw_transactions/part-0.json", json_lines(first))
    name = SOURCES[key].path.rsplit("/", 1)[-1]
    pipeline.source(name, edited(SOURCES[key].text(), [VOLUME_EDIT], **places))

    result = pipeline.run()
    assert result.ok, result.failed()
    expected = oracle(first, loans(), python)
    for table, rows in expected.items():
        assert_rows(pipeline.rows(table), rows)
    quality = pipeline.quality()
    for dataset, counts in expected_quality(first, python).items():
        assert expectation_counts(quality, dataset, result.update_id) == counts, dataset

    # A transaction without a cost centre fails cleaned_new_txs (and what reads it).
    second = [transaction(i) for i in range(40, 60)] + [transaction(60, cost_center_code=None)]
    pipeline.land("raw_transactions/part-1.json", json_lines(second))
    result = pipeline.run()
    assert not result.ok
    assert [f.name.split(".")[-1] for f in result.failed()] == ["cleaned_new_txs"]
    assert "Cost center must be specified" in str(result.failed()[0].error)
    after = oracle(first + second, loans(), python)
    for table in ("raw_txs", "quarantine_bad_txs"):
        assert_rows(pipeline.rows(table), after[table])
    for table in ("cleaned_new_txs", "new_loan_balances_by_country", "total_loan_balances"):
        assert_rows(pipeline.rows(table), expected[table])


def test_loans_python(tmp_path, spark):
    run_loans(tmp_path, spark, "loans_python", python=True)


def test_loans_sql(tmp_path, spark):
    run_loans(tmp_path, spark, "loans_sql", python=False)


def test_loans_sql_legacy(tmp_path, spark):
    run_loans(tmp_path, spark, "loans_sql_legacy", python=False)
