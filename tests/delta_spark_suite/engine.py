"""Which engine the vendored tests run on, and its ``delta`` modules.

The upstream modules changed only their import lines, and those name the three modules
here (``delta_package``, ``delta_tables``, ``delta_exceptions``). Each becomes the real
module of the session's engine: headwater's ``headwater.delta`` by default, delta-spark's
own ``delta`` when ``$HEADWATER_DELTA_ENGINE`` says delta-spark (the tier that runs the
suite on delta-spark sets it, and the session fixture reads the same variable). So on
delta-spark the suite runs exactly as upstream's, beside headwater's Auto Loader and
pipelines hooks, and on headwater's engine it tests headwater's implementation of the API.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

from headwater.engines import DELTA_SPARK, parse

ON_DELTA_SPARK = parse(os.environ.get("HEADWATER_DELTA_ENGINE")) == DELTA_SPARK


def engine_module(suffix: str = "") -> ModuleType:
    """``delta<suffix>`` of the engine the suite runs on."""
    base = "delta" if ON_DELTA_SPARK else "headwater.delta"
    return importlib.import_module(base + suffix)
