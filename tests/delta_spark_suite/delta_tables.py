"""``delta.tables`` of the engine the suite runs on (see ``engine``)."""

import sys

from delta_spark_suite.engine import engine_module

sys.modules[__name__] = engine_module(".tables")
