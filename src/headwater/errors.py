"""Errors users see. Each names the table, option, column or file at fault and what to do.

One tree: every error headwater raises on purpose is a :class:`HeadwaterError` with an
``error_class`` (``TABLE_OR_VIEW_NOT_FOUND``, ``DELTA_CONCURRENT_APPEND``, ...), as Spark's
own errors carry one, so code can branch on the class rather than on message text. A
message that starts with ``[SOME_CLASS]`` takes that class. The conflict errors keep
delta-spark's class names (``ConcurrentAppendException``, ...), which code written for
delta-spark catches; :mod:`headwater.delta.exceptions` exports them under its module name.
"""

from __future__ import annotations

import re
from typing import ClassVar

from pyspark.errors import AnalysisException

_LEADING_CLASS = re.compile(r"^\[([A-Z][A-Z0-9_]+)\]")


class HeadwaterError(Exception):
    """Base class of every error headwater raises on purpose."""

    default_error_class: ClassVar[str] = "HEADWATER_ERROR"

    def __init__(self, message: str = "", *, error_class: str | None = None) -> None:
        super().__init__(message)
        leading = _LEADING_CLASS.match(message)
        self.error_class: str = error_class or (
            leading.group(1) if leading else self.default_error_class
        )

    def __str__(self) -> str:
        return Exception.__str__(self)  # the message as given, whatever else is mixed in

    def getErrorClass(self) -> str:
        return self.error_class

    def getCondition(self) -> str:
        return self.error_class


class DeltaError(HeadwaterError):
    """A Delta table operation could not be carried out.

    Its text starts with its error condition (``[DELTA_PATH_EXISTS] Cannot write ...``), as
    delta-spark's errors do: code written for delta-spark that looks for the condition in
    the message finds it (the generic ``DELTA_ERROR`` and ``DELTA_ANALYSIS_ERROR``, which
    name no condition of delta-spark's, are not shown)."""

    default_error_class = "DELTA_ERROR"

    def __init__(self, message: str = "", *, error_class: str | None = None) -> None:
        super().__init__(message, error_class=error_class)
        if not _LEADING_CLASS.match(message) and self.error_class not in _GENERIC:
            self.args = (f"[{self.error_class}] {message}",)


_GENERIC = frozenset({"DELTA_ERROR", "DELTA_ANALYSIS_ERROR"})


class DeltaAnalysisError(DeltaError, AnalysisException):
    """A Delta error that delta-spark raises as an ``AnalysisException`` (the table is
    missing, already there, not Delta; the data does not fit): code written for
    delta-spark catches ``pyspark.errors.AnalysisException`` and must catch these too."""

    default_error_class = "DELTA_ANALYSIS_ERROR"

    def __init__(self, message: str = "", *, error_class: str | None = None) -> None:
        super().__init__(message, error_class=error_class)
        self._errorClass = self.error_class  # what PySpark's getters read
        self._messageParameters = {}

    def getSqlState(self) -> str | None:
        return _SQL_STATES.get(self.error_class)

    def getMessage(self) -> str:
        text = str(self)
        return text if _LEADING_CLASS.match(text) else f"[{self.error_class}] {text}"


# SQLSTATEs delta-spark gives the same conditions (42P01: undefined table, ...).
_SQL_STATES = {
    "TABLE_OR_VIEW_NOT_FOUND": "42P01",
    "DELTA_TABLE_NOT_FOUND": "42P01",
    "PATH_NOT_FOUND": "42K03",  # Spark's, for a path that does not exist
    "TABLE_OR_VIEW_ALREADY_EXISTS": "42P07",
    "DELTA_TABLE_ALREADY_EXISTS": "42P07",
    "DELTA_MISSING_DELTA_TABLE": "42P01",
    "DELTA_SCHEMA_MISMATCH": "KD000",
    "DELTA_FAILED_TO_MERGE_FIELDS": "22005",
    "DELTA_VERSION_NOT_FOUND": "22003",
    "DELTA_TIMESTAMP_GREATER_THAN_COMMIT": "42816",
    "DELTA_TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION": "42816",
    "DELTA_CANNOT_RESTORE_TABLE_VERSION": "22003",
    "DELTA_CANNOT_RESTORE_TIMESTAMP_GREATER": "22003",
    "DELTA_CANNOT_RESTORE_TIMESTAMP_EARLIER": "22003",
}


class TableNotFoundError(DeltaAnalysisError):
    """No Delta table at a path, or no table by that name."""

    default_error_class = "TABLE_OR_VIEW_NOT_FOUND"


class VersionNotFoundError(DeltaAnalysisError):
    """Time travel to a version or timestamp outside what the table's log holds (the error
    class says which side: ``DELTA_TIMESTAMP_GREATER_THAN_COMMIT``, ...)."""

    default_error_class = "DELTA_VERSION_NOT_FOUND"


class TableAlreadyExistsError(DeltaAnalysisError):
    """A create or an ``errorifexists`` write found a table already there."""

    default_error_class = "TABLE_OR_VIEW_ALREADY_EXISTS"


class NotADeltaTableError(DeltaAnalysisError):
    """A path holds files but no Delta transaction log."""

    default_error_class = "DELTA_MISSING_DELTA_TABLE"


class SchemaMismatchError(DeltaAnalysisError):
    """Written data does not fit the table schema (and no option allows the change)."""

    default_error_class = "DELTA_SCHEMA_MISMATCH"


class UnsupportedFeatureError(DeltaError):
    """The table uses a Delta protocol feature headwater cannot honour yet."""

    default_error_class = "DELTA_UNSUPPORTED_FEATURE"


class CorruptLogError(DeltaError):
    """The transaction log is unreadable or refers to files that are missing."""

    default_error_class = "DELTA_CORRUPT_LOG"


class ConstraintViolationError(DeltaError):
    """A row to be written breaks a CHECK constraint of the table; nothing was committed."""

    default_error_class = "DELTA_VIOLATE_CONSTRAINT"


class StreamingSourceChangedError(DeltaError):
    """A streaming read met a commit that changed existing rows."""

    default_error_class = "DELTA_SOURCE_TABLE_IGNORE_CHANGES"


class StorageError(HeadwaterError):
    """A store cannot be used safely as configured (it ignores conditional writes, refuses
    the credentials, ...): refused before anything is written there."""

    default_error_class = "HEADWATER_STORAGE"


class OptionError(HeadwaterError, ValueError):
    """An option is unknown or has an invalid value."""

    default_error_class = "INVALID_OPTION"


class UnsupportedOperationError(HeadwaterError):
    """A PySpark entry point that cannot work on this table or session (``bucketBy`` on a
    Delta write, a Spark Connect session): refused rather than silently done otherwise."""

    default_error_class = "UNSUPPORTED_OPERATION"


class EngineUnsupportedError(UnsupportedOperationError):
    """What one Delta engine does and the session's engine cannot: the message names the
    engine that can (``headwater.session(delta_engine=...)``)."""

    default_error_class = "HEADWATER_ENGINE_UNSUPPORTED"


# -- concurrent commits: delta-spark's exception names -------------------------------------


class ConcurrentModificationException(DeltaError):
    """A concurrent commit conflicts with this one; nothing of this one was committed.
    Running the operation again (on the new version) is safe."""

    default_error_class = "DELTA_CONCURRENT_MODIFICATION"


class ConcurrentWriteException(ConcurrentModificationException):
    """Kept retrying, but concurrent commits kept taking the next version."""

    default_error_class = "DELTA_CONCURRENT_WRITE"


class MetadataChangedException(ConcurrentModificationException):
    """A concurrent commit changed the table's metadata (schema, properties)."""

    default_error_class = "DELTA_METADATA_CHANGED"


class ProtocolChangedException(ConcurrentModificationException):
    """A concurrent commit changed the table's protocol, or created the table first."""

    default_error_class = "DELTA_PROTOCOL_CHANGED"


class ConcurrentAppendException(ConcurrentModificationException):
    """A concurrent commit added files this operation would have read."""

    default_error_class = "DELTA_CONCURRENT_APPEND"


class ConcurrentDeleteReadException(ConcurrentModificationException):
    """A concurrent commit removed a file this operation read."""

    default_error_class = "DELTA_CONCURRENT_DELETE_READ"


class ConcurrentDeleteDeleteException(ConcurrentModificationException):
    """A concurrent commit removed a file this operation also removes."""

    default_error_class = "DELTA_CONCURRENT_DELETE_DELETE"


class ConcurrentTransactionException(ConcurrentModificationException):
    """A concurrent commit recorded progress of the same application (``txnAppId``, a
    streaming query's checkpoint) this operation depends on."""

    default_error_class = "DELTA_CONCURRENT_TRANSACTION"


class PipelineError(HeadwaterError):
    """A declarative pipeline could not be loaded, analysed or run."""

    default_error_class = "PIPELINE_ERROR"


class PipelineDefinitionError(PipelineError):
    """A pipeline source, its spec or its graph is wrong: names the file and line (or the
    spec field) at fault, and nothing has been written."""

    default_error_class = "PIPELINE_DEFINITION_ERROR"

    def __init__(
        self,
        message: str,
        file: str | None = None,
        line: int | None = None,
        *,
        error_class: str | None = None,
    ) -> None:
        self.file = file
        self.line = line
        where = f"{file}:{line}: " if file and line else f"{file}: " if file else ""
        lead = _LEADING_CLASS.match(message)
        text = (
            f"{lead.group(0)} {where}{message[lead.end() :].lstrip()}" if lead else where + message
        )
        super().__init__(text, error_class=error_class)


class ExpectationViolationError(PipelineError):
    """A row broke an ``expect_or_fail`` rule: the flow stopped and wrote nothing of the
    batch (or refresh) that held the row."""

    default_error_class = "EXPECTATION_VIOLATION"

    def __init__(self, message: str, *, expectation: str, dataset: str, row: str) -> None:
        super().__init__(message)
        self.expectation = expectation
        self.dataset = dataset
        self.row = row


class FlowFailedError(PipelineError):
    """A flow of a pipeline update failed; its downstream flows were skipped."""

    default_error_class = "PIPELINE_FLOW_FAILED"
