"""The dataflow graph: reads of datasets by name while a definition runs, SQL queries as flow
functions, each flow evaluated in dependency order against stand-ins (:mod:`.analysis`), and
the Spark-free check before Spark starts (:mod:`.precheck`). May import ``cdc``,
``sql_files``, ``define``, ``layout``."""
