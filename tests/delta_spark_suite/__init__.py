"""delta-spark's own Python tests (delta-io/delta python/delta/tests), run on headwater.

A package so that its modules, which keep upstream's names (test_sql.py, ...), import as
``delta_spark_suite.<name>`` and cannot clash with the main suite's; see README.md.
"""
