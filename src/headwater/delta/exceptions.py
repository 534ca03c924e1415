"""delta-spark's exception names, so ``from delta.exceptions import ConcurrentAppendException``
ports by changing the import to ``from headwater.delta.exceptions import ...``.

They are the conflict errors of headwater's one error tree (:mod:`headwater.errors`).
"""

from headwater.errors import (
    ConcurrentAppendException,
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    ConcurrentModificationException,
    ConcurrentTransactionException,
    ConcurrentWriteException,
    MetadataChangedException,
    ProtocolChangedException,
)

# delta-spark's Python name of the base class.
DeltaConcurrentModificationException = ConcurrentModificationException

__all__ = [
    "DeltaConcurrentModificationException",
    "ConcurrentAppendException",
    "ConcurrentDeleteDeleteException",
    "ConcurrentDeleteReadException",
    "ConcurrentModificationException",
    "ConcurrentTransactionException",
    "ConcurrentWriteException",
    "MetadataChangedException",
    "ProtocolChangedException",
]
