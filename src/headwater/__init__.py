"""headwater: Delta Lake tables, Auto Loader, COPY INTO and pipelines on plain PySpark."""

from typing import Any

from headwater.session import install, session, uninstall

__all__ = ["install", "session", "sql", "uninstall"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # ``headwater.sql(spark, text)``: the SQL package is callable, and loaded on first use
    # (it pulls in sqlglot, which sessions that never run SQL do not need).
    if name == "sql":
        import headwater.sql as sql_package

        return sql_package
    raise AttributeError(f"module 'headwater' has no attribute {name!r}")
