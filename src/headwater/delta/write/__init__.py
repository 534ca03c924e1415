"""Writing tables: batch writes (:mod:`.batch`), the streaming sink (:mod:`.sink`), creating
and replacing tables, ALTER TABLE, CONVERT TO DELTA. May import ``read``, ``files``,
``log``, ``schema``; not ``dml`` (a sibling)."""
