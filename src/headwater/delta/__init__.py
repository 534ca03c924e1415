"""Delta Lake tables on plain PySpark: the log through delta-rs, data through Spark's Parquet I/O."""

from headwater.delta.options import WriteSpec
from headwater.delta.read.batch import read_delta
from headwater.delta.write.batch import WriteResult, write

__all__ = ["WriteResult", "WriteSpec", "read_delta", "write"]
