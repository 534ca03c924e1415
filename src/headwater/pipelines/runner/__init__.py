"""Running an update: its phases (:mod:`.update`), one flow of each kind (:mod:`.flows`), the
continuous scheduler, expectations in the write's own pass, the event log, terminal progress
and the edit-run loop. May import every room below it (``graph``, ``cdc``, ``sql_files``,
``define``, ``layout``); not ``report`` (a sibling)."""
