"""Table names -> Delta tables, persistent across sessions (see :mod:`.catalog`)."""

from headwater.catalog.catalog import Catalog
from headwater.catalog.names import TableName, parse
from headwater.catalog.registry import TableEntry

__all__ = ["Catalog", "TableEntry", "TableName", "parse"]
