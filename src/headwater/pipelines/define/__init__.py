"""What a pipeline is, as users write it: the spec (``spark-pipeline.yml``), the graph's
elements, SDP's registry, the ``dlt``/``dp`` decorators, the AUTO CDC arguments, and the
loader that runs Python sources. A ground floor of ``pipelines``: it imports no other room."""
