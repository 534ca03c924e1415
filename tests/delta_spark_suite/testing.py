"""The base class delta-spark's tests import (``delta.testing.utils.DeltaTestCase``), on
headwater's session instead of one built with delta-spark's jars.

Upstream's base is pyspark's ``ReusedSQLTestCase``, which starts a SparkContext per test
class and stops it afterwards; the main suite keeps one session per test process (Spark's
start costs seconds and a second context in one process is refused), so ``spark`` here is
that session, set on each class by this folder's conftest. The rest is upstream's: a fresh
temporary folder per test (``tempPath``/``tempFile``), ``tempTable()`` and pyspark's
``table(...)``/``sql_conf(...)`` helpers (``SQLTestUtils``).
"""

from __future__ import annotations

import shutil
import tempfile
import unittest
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.testing.sqlutils import SQLTestUtils


class DeltaTestCase(unittest.TestCase, SQLTestUtils):
    spark: SparkSession  # the test process's one session (conftest.py binds it)

    def setUp(self) -> None:
        super().setUp()
        self.tempPath = tempfile.mkdtemp()
        self.tempFile = str(Path(self.tempPath) / "tempFile")

    def tearDown(self) -> None:
        super().tearDown()
        shutil.rmtree(self.tempPath, ignore_errors=True)

    @contextmanager
    def tempTable(self) -> Iterator[str]:
        table_name = "table_" + str(uuid.uuid4()).replace("-", "_")
        with self.table(table_name):
            yield table_name
