"""Tests of headwater on the delta-spark engine itself: run by the delta-spark tier with
``HEADWATER_DELTA_ENGINE=delta-spark`` (scripts/tier.sh), skipped elsewhere before any Spark
starts. The same tier runs the main suite's pipeline, Auto Loader and COPY INTO tests on
that engine (``ON_ENGINE`` in scripts/tier.sh): those are written once, for both engines."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ON_DELTA_SPARK = os.environ.get("HEADWATER_DELTA_ENGINE", "").lower() == "delta-spark"


def pytest_collection_modifyitems(config, items):
    if ON_DELTA_SPARK:
        return
    skip = pytest.mark.skip(reason="runs on the delta-spark engine: scripts/tier.sh delta-spark")
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(skip)
