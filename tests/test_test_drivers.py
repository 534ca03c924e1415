"""The test suite's own JVM options (scripts/test-jvm-opts.sh) reach every Spark driver the
tests start, the worker's own session among them; with C1 only, the code cache must be the
size tiered compilation has: the 48 MB C1 alone reserves fills within a minute, then the
JVM disables its compiler and runs everything interpreted (2.5x slower, 2026-11-27). Their
``-Dspark.*`` properties (no generated code) reach the sessions' SQL settings."""

from __future__ import annotations

import os

C1_ONLY = "-XX:TieredStopAtLevel=1"


def vm_option(spark, name: str) -> str:
    jvm = spark._jvm
    bean_class = jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean")
    bean = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(bean_class)
    return str(bean.getVMOption(name).getValue())


def test_the_workers_own_session_starts_with_the_test_drivers_options(spark):
    bean = spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    arguments = list(bean.getInputArguments())
    driver_opts = os.environ.get("HEADWATER_TEST_DRIVER_OPTS", "")
    if C1_ONLY in driver_opts:  # set by scripts/test.sh and tier.sh
        assert driver_opts in os.environ["SPARK_SUBMIT_OPTS"]
        assert C1_ONLY in arguments


def test_the_drivers_spark_properties_reach_the_sessions_sql_settings(spark):
    """A ``-Dspark.x=y`` in the drivers' options is a setting of every session they start
    (SparkConf reads spark.* system properties): scripts/test-jvm-opts.sh turns code
    generation off this way, for the tests' small data."""
    given = dict(
        option[2:].split("=", 1)
        for option in os.environ.get("HEADWATER_TEST_DRIVER_OPTS", "").split()
        if option.startswith("-Dspark.")
    )
    for key, value in given.items():
        assert spark.conf.get(key) == value
    if "spark.sql.codegen.wholeStage" in given:
        plan = spark.range(3).selectExpr("id * 2 AS x")._jdf.queryExecution().executedPlan()
        assert plan.getClass().getSimpleName() != "WholeStageCodegenExec"


def test_a_c1_only_driver_has_a_full_size_code_cache(spark):
    if vm_option(spark, "TieredStopAtLevel") == "1":
        assert int(vm_option(spark, "ReservedCodeCacheSize")) >= 240 * 2**20
