"""DELETE, UPDATE (:mod:`.delete_update`) and MERGE (:mod:`.merge`): the target's rows with
their files, rewrites or deletion vectors, committed as one version. May import ``read``,
``files``, ``log``, ``schema``; not ``write`` (a sibling)."""
