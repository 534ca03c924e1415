"""Changing which protocol features a table supports: ``upgradeTableProtocol``,
``addFeatureSupport`` / ``delta.feature.<name> = 'supported'``, ``dropFeatureSupport``.

A feature being *supported* (listed in the protocol) is different from it being *used*
(a property or column that needs it): other engines refuse tables listing features they
do not know, so adding one is explicit, and dropping one is allowed only once nothing uses
it. headwater adds only features whose rules its commits keep; a table listing any other
would be one it can no longer write.
"""

from __future__ import annotations

import json

from headwater.delta.log import protocol as protocols
from headwater.delta.log.actions import Protocol
from headwater.delta.log.commit import Transaction
from headwater.delta.log.delta_log import DeltaLog
from headwater.delta.log.operations import Operation
from headwater.errors import DeltaAnalysisError, UnsupportedFeatureError

READER_WRITER = protocols.READER_WRITER_FEATURES
WRITER_ONLY = protocols.KNOWN_FEATURES - READER_WRITER
# Supported but unused, these constrain nothing a headwater commit could break.
_SAFE_WHEN_UNUSED = frozenset({"checkConstraints", "generatedColumns", "identityColumns"})
# What a feature being used looks like, for dropFeatureSupport.
_ENABLING_PROPERTY = {
    "appendOnly": "delta.appendOnly",
    "changeDataFeed": "delta.enableChangeDataFeed",
    "deletionVectors": "delta.enableDeletionVectors",
}


def _known(name: str) -> str:
    by_lower = {f.lower(): f for f in READER_WRITER | WRITER_ONLY}
    found = by_lower.get(str(name).lower())
    if found is None:
        raise DeltaAnalysisError(
            f"[DELTA_UNSUPPORTED_FEATURES_IN_CONFIG] Unknown table feature '{name}'. Known "
            f"features: {', '.join(sorted(by_lower.values()))}.",
        )
    return found


def _as_table_features(current: Protocol) -> tuple[set[str], set[str]]:
    """The (reader, writer) features ``current`` implies, listed explicitly."""
    return set(protocols.reader_features(current)), set(protocols.writer_features(current))


def _normalized(readers: set[str], writers: set[str], floor: Protocol | None = None) -> Protocol:
    """The smallest protocol listing these features: a legacy one when the features are
    exactly what a legacy version implies (as delta-spark normalises after a drop)."""
    for version in sorted(protocols.LEGACY_WRITER_FEATURES):
        implied = set().union(
            *[f for v, f in protocols.LEGACY_WRITER_FEATURES.items() if v <= version]
        )
        reader_version = 2 if "columnMapping" in readers else 1
        if writers == implied and readers <= {"columnMapping"} and floor is None:
            return Protocol(reader_version, version)
    reader_version = 3 if readers - {"columnMapping"} else (2 if readers else 1)
    if floor is not None:
        reader_version = max(reader_version, floor.min_reader_version)
    return Protocol(
        reader_version,
        7,
        frozenset(readers) if reader_version >= 3 else None,
        frozenset(writers | readers | {"appendOnly", "invariants"}),
    )


def _commit(path: str, new: Protocol, operation: Operation) -> int:
    dlog = DeltaLog(path)
    snapshot = dlog.snapshot()
    if new == snapshot.protocol:
        return snapshot.version
    txn = Transaction(dlog, snapshot, operation)
    txn.update_protocol(new)
    return txn.commit()


def upgrade_protocol(path: str, reader_version: int, writer_version: int) -> int:
    """Raise the table's protocol to at least these versions, as delta-spark does it: a
    ``SET TBLPROPERTIES`` of ``delta.minReaderVersion`` / ``delta.minWriterVersion``,
    committed even when the table already has them (:func:`protocols.upgraded`)."""
    for label, value in (("readerVersion", reader_version), ("writerVersion", writer_version)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"The {label} needs to be an integer but got '{type(value)}'.")
    if not (1 <= reader_version <= 3 and 1 <= writer_version <= 7):
        raise ValueError(
            f"Protocol ({reader_version}, {writer_version}) does not exist: reader versions "
            "are 1-3 and writer versions 1-7."
        )
    dlog = DeltaLog(path)
    snapshot = dlog.snapshot()
    new = protocols.upgraded(snapshot.protocol, reader_version, writer_version)
    asked = {
        "delta.minReaderVersion": str(reader_version),
        "delta.minWriterVersion": str(writer_version),
    }
    txn = Transaction(dlog, snapshot, Operation("SET TBLPROPERTIES", {"properties": asked}))
    if new != snapshot.protocol:
        txn.update_protocol(new)
    txn.update_metadata(snapshot.metadata)
    return txn.commit()


def add_feature(path: str, name: str) -> int:
    """List ``name`` in the table's protocol (upgrading it to table features)."""
    feature = _known(name)
    if feature not in protocols.HONOURED_WRITER_FEATURES | _SAFE_WHEN_UNUSED | READER_WRITER:
        raise UnsupportedFeatureError(
            f"Table feature '{feature}' has rules headwater's commits do not keep yet; a table "
            "listing it could no longer be written by headwater. Add it with delta-spark."
        )
    snapshot = DeltaLog(path).snapshot()
    current = snapshot.protocol
    readers, writers = _as_table_features(current)
    if feature in writers:  # already supported (a legacy protocol implies it): no commit
        return snapshot.version
    if feature in READER_WRITER:
        readers.add(feature)
    writers.add(feature)
    new = _normalized(readers, writers, floor=current)
    props = json.dumps({f"delta.feature.{feature}": "supported"}, separators=(",", ":"))
    return _commit(path, new, Operation("SET TBLPROPERTIES", {"properties": props}))


def drop_feature(path: str, name: str, truncate_history: bool = False) -> int:
    """Remove ``name`` from the table's protocol; refused while the table uses it."""
    feature = _known(name)
    snapshot = DeltaLog(path).snapshot()
    readers, writers = _as_table_features(snapshot.protocol)
    if feature not in readers | writers:
        raise DeltaAnalysisError(
            f"[DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT] Table {snapshot.root} does not support "
            f"feature '{feature}'; nothing to drop."
        )
    prop = _ENABLING_PROPERTY.get(feature)
    if feature in protocols.needed_features(snapshot.metadata) or (
        prop and str(snapshot.configuration.get(prop, "false")).lower() == "true"
    ):
        remedy = f"unset {prop}" if prop else "remove what uses it (constraint, column)"
        raise DeltaAnalysisError(
            f"[DELTA_FEATURE_DROP_FEATURE_IS_IN_USE] Table {snapshot.root} still uses feature "
            f"'{feature}': {remedy} first, then drop it."
        )
    if feature in READER_WRITER:
        if feature == "deletionVectors" and snapshot.deletion_vectors:
            raise DeltaAnalysisError(
                f"[DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD] Files of {snapshot.root} still "
                "carry deletion vectors: rewrite them (REORG TABLE ... APPLY (PURGE)) first."
            )
        raise UnsupportedFeatureError(
            f"Dropping the reader-writer feature '{feature}' needs the table's history "
            "truncated past its last use (delta-spark's two-step drop); headwater drops "
            "writer-only features. Drop it with delta-spark."
        )
    writers.discard(feature)
    if feature in {"appendOnly", "invariants"} and snapshot.protocol.writer_features is None:
        raise UnsupportedFeatureError(
            f"'{feature}' is part of the table's legacy protocol version "
            f"{snapshot.protocol.min_writer_version} and cannot be dropped alone."
        )
    new = _normalized(readers, writers)
    params = {"featureName": feature, "truncateHistory": str(bool(truncate_history)).lower()}
    return _commit(path, new, Operation("DROP FEATURE", params))
