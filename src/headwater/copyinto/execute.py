"""Running one COPY INTO: plan, read, write, and commit data and load record as one.

1. Validate the statement (:mod:`.spec`), load the target (:mod:`.target`), read its load
   record at the table's current version ``v`` (:mod:`.record`), list the source and keep
   the files not loaded yet (:mod:`.plan`).
2. Executors parse the files into Arrow batches (:mod:`.read`), and the SELECT list and
   the table's schema shape them (:mod:`.transform`).
3. The table's door appends the rows and the record as one commit (``append_recorded``).
   On headwater's engine Spark's native Parquet writer writes them into the table's
   folder, then one Delta commit adds the data files *and* records the loaded files in
   its ``commitInfo``. Before it lands on top of any version after ``v``, the commits in
   between are checked for COPY INTOs that loaded any of the same files: if none did (an
   append never conflicts with an append) it commits; if one did, the written files are
   deleted and the load is planned again from the new version, so those files are skipped
   and the rest loaded. No file is loaded twice, concurrently or after a crash, and none is
   lost: until the commit, neither the data nor the record exists. On delta-spark the
   record is the commit's ``userMetadata`` and a transaction id stands for the check
   (:func:`_commit`).
"""

from __future__ import annotations

import logging
import re

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from headwater import storage
from headwater.copyinto import record
from headwater.copyinto.plan import (
    FilePlan,
    ReadSchema,
    balanced_groups,
    plan_files,
    read_schema,
    source_base,
)
from headwater.copyinto.read import (
    BadDataError,
    ReadTask,
    corrupt_accumulator,
    source_dataframe,
)
from headwater.copyinto.spec import CopySpec, parse
from headwater.copyinto.target import Target, resolve
from headwater.copyinto.transform import shape
from headwater.engines.door import LoadRecord, RecordedAppend, is_conflict
from headwater.errors import ConcurrentModificationException

log = logging.getLogger(__name__)

RESULT_SCHEMA = "num_affected_rows long, num_inserted_rows long, num_skipped_corrupt_files long"
VALIDATE_SCHEMA = (
    "num_validated_files long, num_validated_rows long, num_skipped_corrupt_files long, "
    "schema string"
)
MAX_REPLANS = 10


def copy_into(
    spark: SparkSession,
    target: str,
    source: str,
    file_format: str,
    *,
    select: list[str] | None = None,
    columns: list[str] | None = None,
    by_position: bool = False,
    files: list[str] | None = None,
    pattern: str | None = None,
    format_options: dict[str, str] | None = None,
    copy_options: dict[str, str] | None = None,
    validate: str | int | None = None,
) -> DataFrame:
    """Load the files under ``source`` into the Delta table ``target`` once each.

    ``target``: a table name or ``delta.`/path```. ``file_format``: CSV, JSON, PARQUET,
    AVRO, ORC, TEXT or BINARYFILE. ``select``: the expressions of ``FROM (SELECT ... FROM
    'path')``. ``columns`` / ``by_position``: headerless CSV columns mapped by position (with
    a header or another format, ``columns`` restricts the load to those table columns).
    ``files`` (at most 1000 names) or ``pattern`` (a glob), relative to ``source``.
    ``format_options``: Spark reader options plus ``rescuedDataColumn``, ``mode``,
    ``ignoreCorruptFiles``. ``copy_options``: ``force``, ``mergeSchema``.

    Returns one row ``num_affected_rows, num_inserted_rows, num_skipped_corrupt_files``
    (all zero when every file was loaded before). With ``validate`` nothing is written:
    ``"ALL"`` checks every file and returns one row ``num_validated_files,
    num_validated_rows, num_skipped_corrupt_files, schema`` (the table's schema after such a
    load, as DDL); ``n`` returns the first ``n`` rows as they would be loaded. Problems are
    raised, as the load would raise them.
    """
    spec = parse(
        source, file_format, select=select, columns=columns, by_position=by_position,
        files=files, pattern=pattern, format_options=format_options,
        copy_options=copy_options, validate=validate,
    )  # fmt: skip
    last: Exception | None = None
    for attempt in range(MAX_REPLANS):
        tgt = resolve(spark, target)
        loaded: set[str] = set()
        if tgt.snapshot is not None and not spec.force:
            loaded = record.loaded_files(
                tgt.root, tgt.snapshot.version, tgt.table_id(), cache=spec.validate is None
            )
        plan = plan_files(spec, loaded)
        if spec.validate is not None:
            return _validate(spark, spec, tgt, plan)
        if not plan.files:
            log.info("COPY INTO %s: no new files in %s", target, spec.source)
            return _result(spark, 0, 0)
        try:
            return _load(spark, spec, tgt, plan)
        except record.LoadConflictError as e:
            last = e
            log.info("COPY INTO %s: %s; planning again (%d)", target, e, attempt + 1)
    raise ConcurrentModificationException(
        f"COPY INTO {target} kept meeting concurrent loads of the same files ({last}); "
        "nothing was committed by this one. Run it again."
    )


def _result(spark: SparkSession, rows: int, corrupt: int) -> DataFrame:
    return spark.createDataFrame([(rows, rows, corrupt)], RESULT_SCHEMA)


def _prepare(spark: SparkSession, spec: CopySpec, tgt: Target, plan: FilePlan):
    """(rows to write or None when no file is readable, table schema, read schema,
    accumulator of corrupt files)."""
    rs: ReadSchema = read_schema(spark, spec, tgt, plan)
    files = [f for f in plan.files if f.path not in rs.corrupt]
    acc = corrupt_accumulator(spark)
    if not files or not (rs.data.fields or spec.rescue_column):  # nothing, or no columns
        return None, tgt.schema, rs, acc
    groups = balanced_groups(files, spark.sparkContext.defaultParallelism)
    task = ReadTask(
        groups=[[(f.path, f.size) for f in g] for g in groups],
        format=spec.format,
        data=rs.data,
        options=spec.reader_options,
        rescue=spec.rescue_column,
        mode=spec.mode,
        ignore_corrupt=spec.ignore_corrupt,
        ignore_missing=spec.ignore_missing,
        base=source_base(spec),
        partition_keys=plan.partition_keys,
    )
    out, schema = shape(source_dataframe(spark, task, acc), spec, tgt)
    return out, schema, rs, acc


def _load(spark: SparkSession, spec: CopySpec, tgt: Target, plan: FilePlan) -> DataFrame:
    out, schema, rs, acc = _prepare(spark, spec, tgt, plan)
    if out is None and tgt.schemaless:  # not recorded: loaded once a file has columns
        log.warning("COPY INTO %s: no file with columns to take a schema from", tgt.text)
        return _result(spark, 0, len(rs.corrupt))
    nrows, corrupt, version = _commit(spec, tgt, plan, out, schema, rs, acc)
    log.info(
        "COPY INTO %s: %d file(s), %d row(s) at version %s", tgt.text,
        len(plan.files) - len(corrupt), nrows, version,
    )  # fmt: skip
    return _result(spark, nrows, len(corrupt))


def _commit(spec, tgt, plan, out, schema, rs, acc) -> tuple[int, set[str], int | None]:
    """The rows and the load record committed as one, through the table's door
    (``append_recorded``): on headwater's engine the files are written, then committed with
    the record in the ``commitInfo``, checked against every commit since the plan
    (:class:`.record.NotLoadedConcurrently`); on delta-spark through its writer, the record
    as the commit's ``userMetadata`` with the transaction (``record.APP_ID``, the planned
    version): a load planned at the same version that committed first makes this one fail
    or commit nothing. Either way a load that lost is planned again, so no file loads
    twice."""
    base = storage.filesystem(source_base(spec))[1]

    def load_record() -> LoadRecord:
        corrupt = set(acc.value) | rs.corrupt
        loaded = [f for f in plan.files if f.path not in corrupt]
        return LoadRecord(
            {record.RECORD_KEY: record.entry(base, [f.path for f in loaded], corrupt)},
            {
                "numCopiedFiles": len(loaded),
                "numCopiedBytes": sum(f.size for f in loaded),
                "numSkippedCorruptFiles": len(corrupt),
            },
        )

    files = {f.path for f in plan.files}
    append = RecordedAppend(
        operation=record.OPERATION,
        parameters=_parameters(spec),
        schema=schema,
        read=tgt.snapshot,
        record=load_record,
        # The transaction every load into a table carries: of two loads planned at one
        # version, the second fails or commits nothing on delta-spark, whose commit takes
        # no requirement of ours; headwater's records it too, so either engine's load that
        # lost such a race plans again.
        txn=None if spec.force else (record.APP_ID, tgt.version or 0),
        requirement=None if spec.force else record.NotLoadedConcurrently(files),
        record_after_read=spec.ignore_corrupt,
    )
    try:
        result = _run(lambda: tgt.door.append_recorded(out, append))
    except record.LoadConflictError:
        raise
    except Exception as e:
        if is_conflict(e):
            raise record.LoadConflictError(files) from e
        raise
    if result.version is None:  # a load planned at the same version committed first
        raise record.LoadConflictError(files)
    return result.num_rows, set(acc.value) | rs.corrupt, result.version


def _parameters(spec: CopySpec) -> dict[str, str]:
    """The load's parameters in the table's history."""
    return {
        "source": spec.source,
        "fileFormat": spec.format.upper(),
        "force": str(spec.force).lower(),
        "mergeSchema": str(spec.merge_schema).lower(),
        **({"pattern": spec.pattern} if spec.pattern else {}),
    }


def _validate(spark: SparkSession, spec: CopySpec, tgt: Target, plan: FilePlan) -> DataFrame:
    """Read and shape like a load, write nothing (the rows go to Spark's ``noop`` sink)."""
    out, schema, rs, acc = (
        _prepare(spark, spec, tgt, plan) if plan.files else (None, tgt.schema, None, None)
    )
    if spec.validate != "all":
        if out is None:
            return spark.createDataFrame([], schema)
        limit = int(spec.validate or 0)
        rows = _run(lambda: out.limit(limit).collect())
        return spark.createDataFrame(rows, out.schema)
    nrows = 0
    if out is not None:
        seen = Observation("copy_into_validate")
        _run(
            lambda: (
                out.observe(seen, F.count(F.lit(1)).alias("rows"))
                .write.format("noop")
                .mode("overwrite")
                .save()
            )
        )
        nrows = int(seen.get["rows"])
    corrupt = (set(acc.value) | rs.corrupt) if rs is not None and acc is not None else set()
    return spark.createDataFrame(
        [(len(plan.files) - len(corrupt), nrows, len(corrupt), _ddl(schema))], VALIDATE_SCHEMA
    )


def _ddl(schema: StructType) -> str:
    return ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in schema)


_BAD_DATA = re.compile(r"BadDataError: (.+)")


def _run(action):
    """Run a Spark action; an executor's :class:`BadDataError` comes back as itself, not
    wrapped in a Python worker traceback."""
    try:
        return action()
    except BadDataError:
        raise
    except Exception as e:
        m = _BAD_DATA.search(str(e))
        if m:
            raise BadDataError(m.group(1).strip()) from e
        raise
