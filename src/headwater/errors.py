"""Errors users see. Each names the table, option, column or file at fault and what to do."""

from __future__ import annotations


class HeadwaterError(Exception):
    """Base class of every error headwater raises on purpose."""


class DeltaError(HeadwaterError):
    """A Delta table operation could not be carried out."""


class TableNotFoundError(DeltaError):
    """No Delta table at a path, or no table by that name."""


class TableAlreadyExistsError(DeltaError):
    """A create or an ``errorifexists`` write found a table already there."""


class NotADeltaTableError(DeltaError):
    """A path holds files but no Delta transaction log."""


class SchemaMismatchError(DeltaError):
    """Written data does not fit the table schema (and no option allows the change)."""


class ConcurrentModificationError(DeltaError):
    """A concurrent commit conflicts with this one; the write can be retried."""


class UnsupportedFeatureError(DeltaError):
    """The table uses a Delta protocol feature headwater cannot honour yet."""


class CorruptLogError(DeltaError):
    """The transaction log is unreadable or refers to files that are missing."""


class ConstraintViolationError(DeltaError):
    """A row to be written breaks a CHECK constraint of the table; nothing was committed."""


class StreamingSourceChangedError(DeltaError):
    """A streaming read met a commit that changed existing rows."""


class OptionError(HeadwaterError, ValueError):
    """An option is unknown or has an invalid value."""
