"""COPY INTO: idempotent batch loads of files into a Delta table.

``copy_into(spark, "bronze.orders", "/landing/orders", "JSON")`` loads every file under the
source that the table has not loaded before, in one Delta commit that also records the
files (see :mod:`.record`), so a rerun, a crash at any moment followed by a rerun, or a
concurrent run over the same files loads each file exactly once. The SQL statement
``COPY INTO ...`` (``headwater.sql``) calls :func:`copy_into`.

Behaviour, where it is a choice:

* Result: one row ``num_affected_rows, num_inserted_rows, num_skipped_corrupt_files``, all
  zero when there is nothing new (and then nothing is committed). ``validate="ALL"`` writes
  nothing and returns ``num_validated_files, num_validated_rows, num_skipped_corrupt_files,
  schema`` (the table schema after such a load); ``validate=n`` returns the first ``n``
  rows as they would be stored. Either raises what the load would raise.
* A file is identified by its path: once loaded it is skipped even if rewritten, until
  ``COPY_OPTIONS('force'='true')``. Files skipped as corrupt (``ignoreCorruptFiles``) count
  as loaded. The record follows the log's history: a RESTORE does not un-load files.
  ``loaded_files(spark, table)`` lists the record.
* Values that do not fit the table (a column it lacks, a value of another type, a malformed
  record) fail the load naming the file (``mode`` FAILFAST, our default: Spark's PERMISSIVE
  would turn them into nulls silently). ``FORMAT_OPTIONS('rescuedDataColumn'=...)`` keeps
  them as JSON in that column instead, as Auto Loader does; ``mode`` DROPMALFORMED or
  PERMISSIVE drop the row or load null, when asked for.
* Schemaless targets: ``create_schemaless_table(spark, name)`` (what ``CREATE TABLE t``
  without columns maps to) registers a name with no Delta log yet; the first COPY INTO
  with ``mergeSchema`` creates the table with the inferred schema. JSON, Parquet, Avro and
  ORC types are inferred; CSV columns are strings unless ``inferSchema``.
* Concurrent loads of the same files: the later commit sees the earlier one's record, drops
  its own written files and plans again, so it loads the rest (often nothing) instead of
  failing. Over different files both commit.
* FORMAT_OPTIONS come from the same option table as Auto Loader's (:mod:`headwater.formats`):
  each is honoured (``dateFormat``, ``nullValue``, ...) or refused by name, never ignored.

Modules: :mod:`.spec` (the statement, validated), :mod:`.target` (the table, schemaless
tables), :mod:`.record` (the load record in the log), :mod:`.plan` (files and read schema),
:mod:`.read` (executors: files to Arrow), :mod:`.transform` (SELECT list, table schema),
:mod:`.execute` (the whole load, and VALIDATE).
"""

from __future__ import annotations

from headwater.copyinto.execute import RESULT_SCHEMA, VALIDATE_SCHEMA, copy_into
from headwater.copyinto.read import BadDataError
from headwater.copyinto.record import LoadConflictError
from headwater.copyinto.spec import MAX_FILES, CopyIntoError
from headwater.copyinto.target import create_schemaless_table

__all__ = [
    "MAX_FILES",
    "RESULT_SCHEMA",
    "VALIDATE_SCHEMA",
    "BadDataError",
    "CopyIntoError",
    "LoadConflictError",
    "copy_into",
    "create_schemaless_table",
    "loaded_files",
]


def loaded_files(spark, target: str) -> list[str]:
    """The source files the table ``target`` has loaded through COPY INTO (sorted paths)."""
    from headwater.copyinto.record import loaded_files as _loaded
    from headwater.copyinto.target import resolve

    tgt = resolve(spark, target)
    if tgt.snapshot is None:
        return []
    return sorted(_loaded(tgt.root, tgt.snapshot.version, tgt.table_id()))
