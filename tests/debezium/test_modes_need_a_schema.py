"""The decoding modes of ``debezium.changes`` apply to messages without schemas (given
``schema=``); with schemas in the messages the types come from them, so a mode given
without ``schema`` is refused before any Spark work, not silently ignored."""

from __future__ import annotations

import pytest

from headwater import debezium
from headwater.errors import OptionError


@pytest.mark.parametrize(
    ("modes", "named"),
    [
        ({"decimal_handling_mode": "string"}, "decimal_handling_mode"),
        ({"time_precision_mode": "connect"}, "time_precision_mode"),
        ({"millis_columns": ["at"]}, "millis_columns"),
        (
            {"decimal_handling_mode": "precise", "time_precision_mode": "adaptive"},
            "decimal_handling_mode, time_precision_mode",
        ),
    ],
)
def test_a_mode_without_a_schema_is_refused_in_one_line(modes, named):
    with pytest.raises(OptionError) as refused:
        debezium.changes(None, **modes)  # refused before the frame is looked at
    (line,) = str(refused.value).splitlines()
    assert line.startswith(f"{named} decode messages without schemas, with schema=")
    assert "give schema=" in line
