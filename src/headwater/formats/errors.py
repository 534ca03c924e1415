"""The errors a file's contents can raise while it is read, each naming the file.

They are separate from option errors (:class:`headwater.errors.OptionError`): a bad option
fails before any file is opened, these fail on one file, so callers can skip that file
(``ignoreCorruptFiles``), stop to evolve the schema, or stop the load.
"""

from __future__ import annotations

from headwater.errors import HeadwaterError


class CorruptFileError(HeadwaterError):
    """A file that cannot be read (bad compression or encoding, a malformed record without a
    rescue column). Names the file so users and ``ignoreCorruptFiles`` can act on it."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"corrupt or unreadable file {path}: {reason}")
        self.path, self.reason = path, reason


class NewColumnsFound(HeadwaterError):
    """Raised (only when detect_new=True) when a file has columns the schema lacks."""

    def __init__(self, path: str, columns: list[str]):
        super().__init__(f"file {path} has columns not in the schema: {', '.join(columns)}")
        self.path, self.columns = path, list(columns)


class MalformedRecordError(HeadwaterError):
    """A malformed record under ``mode`` FAILFAST. Not a :class:`CorruptFileError`: the file is
    readable and the user asked to stop at the first bad record, so ``ignoreCorruptFiles``
    does not skip it (as in Spark)."""

    default_error_class = "MALFORMED_RECORD_IN_PARSING"

    def __init__(self, path: str, detail: str):
        super().__init__(
            f"[MALFORMED_RECORD_IN_PARSING] Malformed record in file {path}: {detail}. Parse "
            "mode: FAILFAST. Set the option 'mode' to PERMISSIVE to read null in its place, or "
            "DROPMALFORMED to skip such records."
        )
        self.path, self.detail = path, detail
