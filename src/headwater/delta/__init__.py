"""Delta Lake tables on plain PySpark: the log through delta-rs, data through Spark's Parquet I/O."""

from headwater.delta.read import read_delta
from headwater.delta.write import WriteResult, write_dataframe

__all__ = ["WriteResult", "read_delta", "write_dataframe"]
