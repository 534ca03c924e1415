"""``headwater pipelines report``: the event log read back as plain values (:mod:`.model`), the
graph drawn as SVG (:mod:`.svg`), the HTML page (:mod:`.page`). Spark-free. May import
``layout`` (where the event log is, and its format) and the rooms below ``runner``; not
``runner`` (a sibling)."""
