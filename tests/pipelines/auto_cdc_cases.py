"""The AUTO CDC tests' shared cases: a stream of users' change events (the known system's
documented example, users 123-126), its expected SCD1/SCD2 tables, and a flow over it."""

from __future__ import annotations

USERS = """
import dlt
from pyspark.sql.functions import col, expr


@dlt.table
def users():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .schema("userId bigint, name string, city string, operation string, sequenceNum bigint")
        .load(spark.conf.get("source_dir") + "/users")
    )
"""

# The documented example: inserts, a delete and two updates arriving out of order.
EXAMPLE = [
    {"userId": 124, "name": "Raul", "city": "Oaxaca", "operation": "INSERT", "sequenceNum": 1},
    {"userId": 123, "name": "Isabel", "city": "Monterrey", "operation": "INSERT", "sequenceNum": 1},
    {"userId": 125, "name": "Mercedes", "city": "Tijuana", "operation": "INSERT", "sequenceNum": 2},
    {"userId": 126, "name": "Lily", "city": "Cancun", "operation": "INSERT", "sequenceNum": 2},
    {"userId": 123, "name": None, "city": None, "operation": "DELETE", "sequenceNum": 6},
    {"userId": 125, "name": "Mercedes", "city": "Guadalajara", "operation": "UPDATE", "sequenceNum": 6},
    {"userId": 125, "name": "Mercedes", "city": "Mexicali", "operation": "UPDATE", "sequenceNum": 5},
    {"userId": 123, "name": "Isabel", "city": "Chihuahua", "operation": "UPDATE", "sequenceNum": 5},
]  # fmt: skip

SCD1 = [(124, "Raul", "Oaxaca"), (125, "Mercedes", "Guadalajara"), (126, "Lily", "Cancun")]
SCD2 = [
    (123, "Isabel", "Monterrey", 1, 5),
    (123, "Isabel", "Chihuahua", 5, 6),
    (124, "Raul", "Oaxaca", 1, None),
    (125, "Mercedes", "Tijuana", 2, 5),
    (125, "Mercedes", "Mexicali", 5, 6),
    (125, "Mercedes", "Guadalajara", 6, None),
    (126, "Lily", "Cancun", 2, None),
]
SCD2_CITY_UNTRACKED = [
    (123, "Isabel", "Chihuahua", 1, 6),
    (124, "Raul", "Oaxaca", 1, None),
    (125, "Mercedes", "Guadalajara", 2, None),
    (126, "Lily", "Cancun", 2, None),
]


def cdc(scd: int, extra: str = "", call: str = "create_auto_cdc_flow") -> str:
    return (
        USERS
        + f"""
dlt.create_streaming_table("target")
dlt.{call}(
    target="target",
    source="users",
    keys=["userId"],
    sequence_by=col("sequenceNum"),
    apply_as_deletes=expr("operation = 'DELETE'"),
    except_column_list=["operation", "sequenceNum"],
    stored_as_scd_type={scd},
    {extra}
)
"""
    )


def target(project) -> list[tuple]:
    df = project.spark.table(f"{project.database}.target")
    return sorted((tuple(r) for r in df.collect()), key=lambda r: tuple(map(str, r)))


def ordered(rows: list[tuple]) -> list[tuple]:
    return sorted(rows, key=lambda r: tuple(map(str, r)))


def progress(result, flow: str = "target") -> dict:
    found = [
        e.details
        for e in result.events
        if e.event_type == "flow_progress" and e.flow_name == flow and "metrics" in e.details
    ]
    return found[-1]["metrics"]
