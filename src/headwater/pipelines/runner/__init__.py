"""Running an update: its phases (:mod:`.update`) over a frozen context (:mod:`.context`),
the dataset manager (:mod:`.datasets`), the schedulers (:mod:`.triggered`,
:mod:`.continuous`), one flow to its end (:mod:`.flow_execution`) by its kind's plan
(:mod:`.flows`), expectations in the write's own pass, the event log, terminal progress
and the edit-run loop. May import every room below it (``graph``, ``cdc``, ``sql_files``,
``define``, ``layout``); not ``report`` (a sibling)."""
