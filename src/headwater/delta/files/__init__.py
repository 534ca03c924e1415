"""Data files: rows become Parquet files (Spark's writer or pyarrow, chosen by
:mod:`.io_choice`) with their stats, keeping the column rules every write keeps
(constraints, generated and default values, identity columns), change-data files, and data
files read back into Arrow on the executors. May import ``log`` and ``schema``."""
