"""What a pipeline keeps under its spec's ``storage`` besides tables: the folders
(:mod:`.folders`: checkpoints, AUTO CDC state, the event log's place) and the event log's
format (:mod:`.event_format`: its columns and the records its ``details`` hold), shared by
the runner that writes them, AUTO CDC and the report that reads them. A ground floor of
``pipelines``: it imports no other room."""
