"""The test suite's own JVM options (scripts/test-jvm-opts.sh) reach only the Spark drivers
tests start in subprocesses: a worker's session that ran with C1 only made the main suite
2.5x slower (2026-11-27, when xdist's workers inherited the options the controller had set)."""

from __future__ import annotations

import os

C1_ONLY = "-XX:TieredStopAtLevel=1"


def test_the_workers_own_session_starts_without_the_short_lived_drivers_options(spark):
    bean = spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    arguments = list(bean.getInputArguments())
    assert C1_ONLY not in arguments
    assert not any(a.startswith("-XX:SharedArchiveFile") for a in arguments)
    driver_opts = os.environ.get("HEADWATER_TEST_DRIVER_OPTS", "")
    if C1_ONLY in driver_opts:  # set by scripts/test.sh: later drivers get them
        assert driver_opts in os.environ["SPARK_SUBMIT_OPTS"]
