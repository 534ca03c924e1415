"""Materialized views refreshed by the least work that gives the exact result: what
changed in a view's inputs since its last refresh, read from their Delta logs
(:mod:`.inputs`), and the technique chosen for that change under the view's refresh
policy (:mod:`.plan`, pure); a small change to a simple group aggregate refreshed on the
driver in Arrow without a Spark job (:mod:`.arrow_refresh`, with its arithmetic in
:mod:`.arrow_combine`, Spark-free). May import ``define`` and ``layout``; the runner
executes the plan."""
