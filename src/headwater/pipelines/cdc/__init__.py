"""AUTO CDC execution: each micro-batch of change events applied as one MERGE into the target
and its key state (SCD1, SCD2), and snapshots turned into events. May import ``define`` and
``layout``; not ``sql_files`` (a sibling)."""
