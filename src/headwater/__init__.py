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
    lazy | options | originals | sqltypes | storage
    errors
"""

from types import ModuleType

from headwater.lazy import submodule
from headwater.session import install, session, uninstall

__all__ = ["install", "session", "sql", "uninstall"]
__version__ = "0.1.0"


def __getattr__(name: str) -> ModuleType:
    # ``headwater.sql(spark, text)`` (the SQL package is callable), ``headwater.pipelines``,
    # ``headwater.copyinto``...: each package loaded on first use.
    return submodule(__name__, name)
