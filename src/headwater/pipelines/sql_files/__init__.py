"""The SQL front, Spark-free: pipeline SQL files parsed into datasets, flows and AUTO CDC flows
(:mod:`.definitions`), and what a query reads with its text rewritten for Spark
(:mod:`.queries`). Kept Spark-free so the check before Spark starts can use it. May import
``define`` and ``layout``."""
