"""Data-quality expectations, checked in the same pass as the write.

A dataset's expectations become columns of the rows a flow writes: one "failed" flag per
rule, read by the filters of the actions (drop, quarantine), by a ``raise_error`` that
stops the write on the first row breaking a ``fail`` rule (so nothing of that batch or
refresh is committed), and by an :class:`~pyspark.sql.Observation` that counts them as the
rows go by. No extra Spark job ever runs over the data to compute metrics.

A row fails a rule when its constraint is false. A NULL result passes, as the known
system's documentation defines failure ("the boolean returns false"); write
``x IS NOT NULL AND x > 0`` to reject nulls too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, StringType, StructType

from headwater.errors import ExpectationViolationError, PipelineDefinitionError
from headwater.pipelines.define.elements import Dataset, Expectation

FAILED_EXPECTATIONS = "_failed_expectations"  # the quarantine table's array of rule names
SOURCE_FILE = "_source_file"  # the quarantine table's column naming a row's source file
# Auto Loader adds this column (headwater.fileMetadataColumn) to the rows of the flows of a
# dataset with quarantine rules; it reaches the quarantine table as ``_source_file`` when
# the flow's query keeps it, and never the dataset.
FILE_METADATA = "__hw_file_metadata"
RESCUED = "_rescued_data"
QUARANTINE_TABLE = "pipelines.quarantine.table"  # table property naming it
_MARK = "[HW_EXPECTATION]"
_SEP = "\x1f"


def quarantine_name(dataset: Dataset, key: str) -> str:
    """Where the rows breaking a quarantine rule of ``dataset`` (qualified as ``key``) go:
    ``<name>_quarantine`` beside it, or the table property ``pipelines.quarantine.table``."""
    named = dataset.table_properties.get(QUARANTINE_TABLE)
    if named:
        return named if "." in named or "." not in key else f"{key.rsplit('.', 1)[0]}.{named}"
    return f"{key}_quarantine"


@dataclass
class Quality:
    """The data-quality metrics of one flow update, accumulated over its batches."""

    dataset: str
    expectations: tuple[Expectation, ...]
    passed: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    dropped_records: int = 0
    quarantined_records: int = 0

    def __post_init__(self) -> None:
        self.passed = self.passed or [0] * len(self.expectations)
        self.failed = self.failed or [0] * len(self.expectations)

    def add(self, observed: Mapping[str, Any], written: int | None = None) -> None:
        """Add one batch's counts. ``written``: the rows the dataset's write committed,
        from which the rows dropped follow, so the pass over the rows need not count them;
        without it, the observed ``dropped`` count is used."""
        rows = int(observed.get("rows") or 0)
        for i in range(len(self.expectations)):
            failed = int(observed.get(f"f{i}") or 0)
            self.failed[i] += failed
            self.passed[i] += rows - failed
        quarantined = int(observed.get("quarantined") or 0)
        self.quarantined_records += quarantined
        if written is None:
            self.dropped_records += int(observed.get("dropped") or 0)
        else:
            self.dropped_records += rows - written - quarantined

    def as_event(self) -> dict[str, Any]:
        """``flow_progress.data_quality`` as the known system's event log has it (plus the
        action of each rule and the rows quarantined)."""
        return {
            "dropped_records": self.dropped_records,
            "quarantined_records": self.quarantined_records,
            "expectations": [
                {
                    "name": e.name,
                    "dataset": self.dataset,
                    "action": e.action,
                    "passed_records": self.passed[i],
                    "failed_records": self.failed[i],
                }
                for i, e in enumerate(self.expectations)
            ],
        }


@dataclass(frozen=True)
class Checked:
    """A flow's rows after the checks: those for the dataset, and those for quarantine."""

    passed: DataFrame
    quarantined: DataFrame | None


class Rules:
    """The expectations of one dataset, applied to the rows of a flow into it."""

    def __init__(self, dataset: str, expectations: Sequence[Expectation]) -> None:
        self.dataset = dataset
        self.expectations = tuple(expectations)

    def __bool__(self) -> bool:
        return bool(self.expectations)

    @property
    def quarantines(self) -> bool:
        return any(e.action == "quarantine" for e in self.expectations)

    def quality(self) -> Quality:
        return Quality(self.dataset, self.expectations)

    def validate(self, spark: SparkSession, schema: StructType, where: Dataset) -> None:
        """Each constraint must parse, name only columns of ``schema`` and be boolean:
        a named error at the dataset's definition otherwise, before anything runs."""
        empty = spark.createDataFrame([], schema)
        for e in self.expectations:
            problem = None
            try:
                found = empty.select(condition(e).alias("holds")).schema[0].dataType
                if not isinstance(found, BooleanType):
                    problem = (
                        "PIPELINE_EXPECTATION_NOT_BOOLEAN",
                        f"is {found.simpleString()}, not a boolean",
                    )
            except AnalysisException as error:
                kind = error.getCondition() or ""
                if "UNRESOLVED_COLUMN" in kind or "UNRESOLVED_FIELD" in kind:
                    columns = ", ".join(schema.fieldNames())
                    problem = (
                        "PIPELINE_EXPECTATION_UNKNOWN_COLUMN",
                        f"names a column the rows do not have (their columns: {columns})",
                    )
                else:
                    first = str(error).strip().splitlines()[0]
                    problem = (
                        "PIPELINE_EXPECTATION_INVALID",
                        f"is not a valid expression: {first}",
                    )
            if problem:
                raise PipelineDefinitionError(
                    f"[{problem[0]}] Expectation '{e.name}' ({e.constraint}) on "
                    f"'{self.dataset}' {problem[1]}. An expectation is a SQL boolean "
                    "expression over the columns of the dataset's rows.",
                    where.origin.file,
                    where.origin.line,
                )

    def counts(self, df: DataFrame) -> dict[str, int]:
        """The counts :meth:`check` observes (without ``dropped``), by a pass of their own
        over ``df`` (a fail rule's bad row stops it, as it would stop the write)."""
        observation = Observation()
        self.check(df, observation, count_outcomes=False).passed.write.format("noop").mode(
            "overwrite"
        ).save()
        return dict(observation.get)

    def check(
        self, df: DataFrame, observation: Observation | str, count_outcomes: bool = True
    ) -> Checked:
        """``df`` with the rules applied: fail rules stop the query on their first bad row,
        drop rules remove rows, quarantine rules divert them; ``observation`` receives the
        counts (``rows``, ``f<i>`` per rule, ``quarantined`` and, with ``count_outcomes``,
        ``dropped``) as rows pass. Each count costs: a writer that knows how many rows it
        wrote leaves ``dropped`` out (see :meth:`Quality.add`)."""
        columns = [F.col(f"`{c}`") for c in df.columns if c != FILE_METADATA]
        flags = [F.col(f"`__hw_failed_{i}`") for i in range(len(self.expectations))]
        flagged = df.select(
            *[F.col(f"`{c}`") for c in df.columns],
            *[
                (~F.coalesce(condition(e), F.lit(True))).alias(f"__hw_failed_{i}")
                for i, e in enumerate(self.expectations)
            ],
        )
        by_action = {
            action: [f for f, e in zip(flags, self.expectations, strict=True) if e.action == action]
            for action in ("fail", "drop", "quarantine")
        }
        if by_action["fail"]:
            flagged = flagged.filter(
                F.when(
                    any_of(by_action["fail"]), F.raise_error(self._violation(df, flags))
                ).otherwise(F.lit(True))
            )
        dropped = any_of(by_action["drop"])
        quarantined = any_of(by_action["quarantine"])
        outcomes = []
        if count_outcomes and by_action["drop"]:
            outcomes.append(F.sum((dropped & ~quarantined).cast("long")).alias("dropped"))
        if by_action["quarantine"]:
            outcomes.append(F.sum(quarantined.cast("long")).alias("quarantined"))
        counted = flagged.observe(
            observation,
            F.count(F.lit(1)).alias("rows"),
            *[F.sum(f.cast("long")).alias(f"f{i}") for i, f in enumerate(flags)],
            *outcomes,
        )
        passed = counted.filter(~(dropped | quarantined)).select(*columns)
        if not by_action["quarantine"]:
            return Checked(passed, None)
        names = F.filter(
            F.array(
                *[F.when(f, F.lit(e.name)) for f, e in zip(flags, self.expectations, strict=True)]
            ),
            lambda name: name.isNotNull(),
        )
        to_quarantine = counted.filter(quarantined).select(
            *columns, names.alias(FAILED_EXPECTATIONS), source_file(df).alias(SOURCE_FILE)
        )
        return Checked(passed, to_quarantine)

    def _violation(self, df: DataFrame, flags: list[Column]) -> Column:
        """The text ``raise_error`` carries: the dataset, the first fail rule the row
        broke, its constraint, and the row."""
        fail = [(f, e) for f, e in zip(flags, self.expectations, strict=True) if e.action == "fail"]
        rule = F.coalesce(*[F.when(f, F.lit(e.name + _SEP + e.constraint)) for f, e in fail])
        row = F.to_json(
            F.struct(*[F.col(f"`{c}`") for c in df.columns if c != FILE_METADATA]),
            {"ignoreNullFields": "false"},
        )
        return F.concat(F.lit(_MARK + self.dataset + _SEP), rule, F.lit(_SEP), row, F.lit(_SEP))


def violation(error: BaseException | str, flow: str) -> ExpectationViolationError | None:
    """The named error for a write a fail rule stopped (None: another failure)."""
    text = str(error)
    at = text.find(_MARK)
    if at < 0:
        return None
    dataset, name, constraint, row, *_ = (text[at + len(_MARK) :] + _SEP * 4).split(_SEP)
    return ExpectationViolationError(
        f"[EXPECTATION_VIOLATION] Flow '{flow}' failed: expectation '{name}' ({constraint}) "
        f"on dataset '{dataset}' was violated by the row {row}. Nothing of the failing batch "
        f"was written. Fix the data, or change the expectation's action (expect_or_drop, "
        "expect_or_quarantine), then run the update again: it continues from the batch that "
        "failed.",
        expectation=name,
        dataset=dataset,
        row=row,
    )


def source_file(df: DataFrame) -> Column:
    """Where a row came from: Auto Loader's file metadata when the flow kept it, else the
    ``_file_path`` a rescued row carries in ``_rescued_data``, else NULL."""
    found = []
    if FILE_METADATA in df.columns:
        found.append(F.col(f"{FILE_METADATA}.file_path"))
    if RESCUED in df.columns and isinstance(df.schema[RESCUED].dataType, StringType):
        found.append(F.get_json_object(F.col(RESCUED), "$._file_path"))
    return F.coalesce(*found, F.lit(None).cast("string"))


def condition(e: Expectation) -> Column:
    return e.column if e.column is not None else F.expr(e.constraint)


def any_of(flags: Sequence[Column]) -> Column:
    if not flags:
        return F.lit(False)
    found = flags[0]
    for flag in flags[1:]:
        found = found | flag
    return found
