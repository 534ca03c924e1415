"""Which Delta engine this test process runs on, and the mark for tests that only make sense
on headwater's own engine.

The main suite's tests run unchanged on delta-spark in the ``on-delta-spark`` tier
(scripts/tier.sh sets ``$HEADWATER_DELTA_ENGINE``, which ``headwater.session()`` reads).
Tests that reach into headwater's engine — its ``Transaction``, its catalog's tables without
columns, its commitInfo fields — say so with :func:`headwater_engine_only` and a reason, and
are skipped there; everything else runs on both.
"""

from __future__ import annotations

import os

import pytest

from headwater import engines

ON_DELTA_SPARK = engines.parse(os.environ.get("HEADWATER_DELTA_ENGINE")) == engines.DELTA_SPARK


def headwater_engine_only(reason: str) -> pytest.MarkDecorator:
    """Skip on the delta-spark engine, saying what of headwater's engine the test needs."""
    return pytest.mark.skipif(ON_DELTA_SPARK, reason=f"headwater's engine only: {reason}")
