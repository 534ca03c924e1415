"""headwater: Delta Lake tables, Auto Loader, COPY INTO and pipelines on plain PySpark.

Packages, each importing only those below it (``docs/architecture.md`` has the full map;
``lint-imports`` enforces it)::

    cli | demo | shell        the command, the demo, the SQL shell
    session                   headwater.session() / install() / uninstall()
    adapter                   PySpark's reader/writer hooks, as one table of patches
    sql                       statements Spark's parser lacks
    copyinto                  COPY INTO
    api | autoloader          typed table API (by name or path) | the cloudFiles source
    catalog | formats         table names | reading file formats, one option table each
    delta                     Delta tables: log, one commit path, reads, writes, DML
    options | originals | sqltypes | storage
    errors
"""

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
