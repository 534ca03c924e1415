"""Which protocol a table needs, and whether headwater may write to it.

A table's protocol names what readers and writers must understand. New tables get the
smallest protocol their schema and properties need, as delta-spark chooses it (``(1, 2)``
for a plain table); a property or column that needs more (the change data feed, deletion
vectors, ``timestamp_ntz``, CHECK constraints) upgrades it in the same commit that sets it.
Tables on the table-features protocol always list ``appendOnly`` and ``invariants`` too,
because delta-spark refuses a writer-7 table with NOT NULL columns that lacks them (delta-rs
leaves them out).

Writes are refused, by feature name and before anything is written, when the table uses a
writer feature whose rules this writer does not keep (in-commit timestamps, ...): a commit that ignored them would leave the table inconsistent.
Reads are refused likewise when a reader feature would have rows come back wrong. Every
such decision is a function of the protocol and metadata values here, so a snapshot, a
commit and a test ask the same question of the same code.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from pyspark.sql.types import StructType

from headwater.delta.log.actions import Metadata, Protocol
from headwater.delta.schema import column_mapping as mapping
from headwater.delta.schema import type_widening
from headwater.errors import UnsupportedFeatureError

# Writer features a legacy protocol implies, by minWriterVersion; readers: columnMapping from
# minReaderVersion 2.
LEGACY_WRITER_FEATURES: dict[int, frozenset[str]] = {
    2: frozenset({"appendOnly", "invariants"}),
    3: frozenset({"checkConstraints"}),
    4: frozenset({"changeDataFeed", "generatedColumns"}),
    5: frozenset({"columnMapping"}),
    6: frozenset({"identityColumns"}),
}
# Features that need a reader to understand them (and so reader version 3, but for
# columnMapping, which reader version 2 also expresses).
_READER_FEATURES = frozenset(
    {"columnMapping", "deletionVectors", "geospatial", "timestampNtz", "typeWidening"}
)
READER_WRITER_FEATURES = _READER_FEATURES | {"v2Checkpoint", "vacuumProtocolCheck", "variantType"}
KNOWN_FEATURES = READER_WRITER_FEATURES | {
    "allowColumnDefaults", "appendOnly", "changeDataFeed", "checkConstraints", "clustering",
    "domainMetadata", "generatedColumns", "icebergCompatV1", "icebergCompatV2",
    "identityColumns", "inCommitTimestamp", "invariants", "rowTracking",
}  # fmt: skip
# Reader features whose data headwater reads correctly (deletion vectors and column mapping
# are handled by the Python read path); a table using any other is refused by name.
SUPPORTED_READER_FEATURES = frozenset(
    {
        "timestampNtz",
        "v2Checkpoint",
        "vacuumProtocolCheck",
        "typeWidening",  # old files upcast on read; recorded changes checked (type_widening.py)
        "typeWidening-preview",
        "columnMapping",
        "deletionVectors",
    }
)
# Variant columns are decoded by Spark's own Parquet scan (Spark 4 reads Delta's variant
# encoding, shredded or not), so tables with them are readable only on the native path.
VARIANT_FEATURES = frozenset(
    {"variantType", "variantType-preview", "variantShredding", "variantShredding-preview"}
)
# Geometry and geography columns (WKB with a CRS, Parquet's geospatial logical types): the
# same, Spark's own scan decodes them; tables are created with them but rows not written.
GEO_FEATURES = frozenset({"geospatial"})
_SCAN_ONLY = VARIANT_FEATURES | GEO_FEATURES
# Type changes recorded in the schema: checked before a read, and delta-rs refuses the
# deletion vectors of such tables (headwater replays them from the log).
WIDENING_FEATURES = frozenset({type_widening.FEATURE, type_widening.PREVIEW_FEATURE})
# ``delta.feature.<name> = 'supported'`` in the properties lists a feature without using it.
FEATURE_PROPERTY = "delta.feature."

# Writer features whose rules every headwater commit keeps.
HONOURED_WRITER_FEATURES = frozenset(
    {
        "appendOnly",
        "allowColumnDefaults",  # defaults fill the columns a write leaves out
        "changeDataFeed",
        "checkConstraints",  # enforced on the rows written
        "clustering",  # new files are unclustered; OPTIMIZE clusters (delta/log/clustering.py)
        "columnMapping",  # files are written under physical names
        "deletionVectors",
        "domainMetadata",
        "generatedColumns",  # computed or checked on every write (delta/files/column_values.py)
        "identityColumns",  # numbered past the high-water mark, recorded in the commit
        "invariants",
        "rowTracking",  # new files numbered, copied rows keep their ids (log/row_tracking.py)
        "timestampNtz",
        "typeWidening",  # ALTER applies only allowed widenings (delta/schema/type_widening.py)
        "typeWidening-preview",
        "vacuumProtocolCheck",
    }
)


def _true(configuration: Mapping[str, str], key: str) -> bool:
    return str(configuration.get(key, "false")).lower() == "true"


def writer_features(protocol: Protocol) -> frozenset[str]:
    """Every writer feature the protocol implies (listed, or by its legacy version)."""
    if protocol.writer_features is not None:
        return protocol.writer_features
    implied: set[str] = set()
    for version, features in LEGACY_WRITER_FEATURES.items():
        if protocol.min_writer_version >= version:
            implied |= features
    return frozenset(implied)


def reader_features(protocol: Protocol) -> frozenset[str]:
    if protocol.reader_features is not None:
        return protocol.reader_features
    return frozenset({"columnMapping"}) if protocol.min_reader_version >= 2 else frozenset()


def needed_features(metadata: Metadata) -> frozenset[str]:
    """The features this schema and these properties use."""
    config = metadata.configuration
    schema = metadata.schema_string
    found: set[str] = set()
    if _true(config, "delta.enableChangeDataFeed"):
        found.add("changeDataFeed")
    if _true(config, "delta.enableDeletionVectors"):
        found.add("deletionVectors")
    if _true(config, "delta.appendOnly"):
        found.add("appendOnly")
    if any(k.startswith("delta.constraints.") for k in config):
        found.add("checkConstraints")
    if config.get("delta.columnMapping.mode", "none").lower() != "none":
        found.add("columnMapping")
    if '"geometry(' in schema or '"geography(' in schema:
        found.add("geospatial")
    if '"timestamp_ntz"' in schema:
        found.add("timestampNtz")
    if "delta.generationExpression" in schema:
        found.add("generatedColumns")
    if "delta.identity." in schema:
        found.add("identityColumns")
    if "delta.invariants" in schema:
        found.add("invariants")
    if '"CURRENT_DEFAULT"' in schema:
        found.add("allowColumnDefaults")
    if _true(config, "delta.enableRowTracking"):
        found |= {"rowTracking", "domainMetadata"}
    # Properties that turn on features whose writer rules headwater does not keep: listed
    # here so that a table asking for them needs them, and check_writable refuses by name
    # rather than creating a table that claims the property without the feature.
    if _true(config, "delta.enableInCommitTimestamps"):
        found.add("inCommitTimestamp")
    if str(config.get("delta.checkpointPolicy", "classic")).lower() == "v2":
        found.add("v2Checkpoint")
    found |= declared_features(config)
    if _true(config, "delta.enableTypeWidening") or '"delta.typeChanges"' in schema:
        found.add("typeWidening")
    return frozenset(found)


def declared_features(configuration: Mapping[str, str]) -> set[str]:
    """Features named by ``delta.feature.<name> = 'supported'`` properties."""
    by_lower = {f.lower(): f for f in KNOWN_FEATURES}
    found = set()
    for key, value in configuration.items():
        if not key.lower().startswith(FEATURE_PROPERTY):
            continue
        name = key[len(FEATURE_PROPERTY) :]
        if name.lower() not in by_lower or str(value).lower() not in ("supported", "enabled"):
            raise UnsupportedFeatureError(
                f"[DELTA_UNSUPPORTED_FEATURES_IN_CONFIG] Property {key} = '{value}': give a "
                f"known feature the value 'supported'. Known features: "
                f"{', '.join(sorted(KNOWN_FEATURES))}."
            )
        found.add(by_lower[name.lower()])
    return found


def required(metadata: Metadata, current: Protocol | None = None) -> Protocol:
    """The protocol a table with ``metadata`` needs, chosen as delta-spark 4.4 chooses it.

    A new table starts from (1, 2) plus the features its metadata uses; an existing one
    keeps ``current`` whole when it supports them all, else gets ``current``'s features
    plus the new ones. Either way the result is :func:`normalized`: a legacy protocol only
    when the features are exactly what one implies ((1, 3) for CHECK constraints), else
    writer version 7 listing them (a generated column or the change data feed alone:
    (1, 7) with ``appendOnly``, ``invariants`` and the feature, where (1, 4) would imply
    ``checkConstraints`` too)."""
    needed = set(needed_features(metadata))
    if current is not None and "typeWidening-preview" in writer_features(current):
        needed -= {"typeWidening"}  # the preview name already carries the feature
    if current is None:
        return normalized(needed | {"appendOnly", "invariants"})
    have = reader_features(current) | writer_features(current)
    if needed <= have:
        return current
    return normalized(set(have) | needed)


def normalized(features: set[str]) -> Protocol:
    """The weakest protocol supporting exactly ``features`` (delta-spark's
    ``denormalizedNormalized``): the legacy (reader, writer) versions they need when those
    imply no other feature, else writer version 7 listing them (and their reader features
    where the reader version is 3)."""
    writer_version = max((_legacy_writer_version(f) for f in features), default=1)
    readers = {f for f in features if f in READER_WRITER_FEATURES}
    reader_version = 3 if readers - {"columnMapping"} else (2 if readers else 1)
    if writer_version < 7 and reader_version < 3:
        legacy = Protocol(reader_version, writer_version)
        if reader_features(legacy) | writer_features(legacy) == features:
            return legacy
    return Protocol(
        reader_version,
        7,
        frozenset(readers) if reader_version >= 3 else None,
        frozenset(features),
    )


def upgraded(current: Protocol, reader_version: int, writer_version: int) -> Protocol:
    """``current`` raised to the versions a user asked for (``upgradeTableProtocol``,
    ``delta.minReaderVersion`` / ``delta.minWriterVersion`` properties), as delta-spark
    merges them: the features those legacy versions imply are added, and the result is
    :func:`normalized` (versions lower than the table's, or writer version 7 alone, add
    nothing)."""
    asked: set[str] = set()
    if writer_version < 7:
        for version, found in LEGACY_WRITER_FEATURES.items():
            if version <= writer_version:
                asked |= found
        if reader_version < 2:
            asked.discard("columnMapping")
    have = reader_features(current) | writer_features(current)
    if asked <= have:
        return current
    return normalized(set(have) | asked)


def _legacy_writer_version(feature: str) -> int:
    """The writer version that implies ``feature`` (7: none does, it must be listed)."""
    return next((v for v, found in LEGACY_WRITER_FEATURES.items() if feature in found), 7)


def check_writable(
    protocol: Protocol, metadata: Metadata, root: str, removes: bool, adds: bool = True
) -> None:
    """Refuse, before anything is written, a commit headwater could not write correctly
    (``removes``: the commit removes rows, which an append-only table forbids; ``adds``: it
    adds files). The geospatial feature's rules are about data files (Parquet's geospatial
    types, bounding-box statistics), so a commit adding none keeps them: creating such a
    table, or changing its properties."""
    kept = HONOURED_WRITER_FEATURES | (frozenset() if adds else GEO_FEATURES)
    unknown = sorted(writer_features(protocol) - kept - _unused(metadata))
    if unknown:
        raise UnsupportedFeatureError(
            f"Delta table at {root} uses writer feature(s) {', '.join(unknown)}, which "
            "headwater cannot keep in a commit; nothing was written. Run the operation with "
            "delta-spark."
        )
    if removes:
        check_removable(metadata, root)


def check_removable(metadata: Metadata, root: str) -> None:
    """Refuse an operation that removes rows from an append-only table: checked at its
    commit, and by DELETE, UPDATE and MERGE before they start, as delta-spark checks them
    (even when no row would change)."""
    if _true(metadata.configuration, "delta.appendOnly"):
        raise UnsupportedFeatureError(
            f"[DELTA_CANNOT_MODIFY_APPEND_ONLY] Delta table at {root} is append-only "
            "(delta.appendOnly=true): rows cannot be updated or deleted. Unset the property "
            "(ALTER TABLE ... SET TBLPROPERTIES ('delta.appendOnly' = 'false')) to allow it."
        )


def _unused(metadata: Metadata) -> set[str]:
    """Features a table lists (as a legacy protocol upgrade does) but does not use: no
    CHECK constraint, generated or identity column, so their rules cannot be broken."""
    used = needed_features(metadata)
    return {f for f in ("checkConstraints", "generatedColumns", "identityColumns") if f not in used}


def variant_features(protocol: Protocol) -> list[str]:
    """The variant and geospatial features the table lists: columns read by Spark's scan
    only, never written here."""
    return sorted(protocol.all_reader_features & _SCAN_ONLY)


def _kinds(features: list[str]) -> str:
    """The kinds of column the scan-only ``features`` mean: variant, geospatial or both."""
    kinds = [
        k
        for k, f in (("variant", VARIANT_FEATURES), ("geospatial", GEO_FEATURES))
        if f & set(features)
    ]
    return " and ".join(kinds)


def unreadable_features(protocol: Protocol, configuration: Mapping[str, str]) -> list[str]:
    """The reader features (and a column-mapping mode) whose rows headwater would get
    wrong, by name; empty when it reads the table correctly. Variant features are not
    among them: Spark's own scan reads those."""
    unsupported = sorted(protocol.all_reader_features - SUPPORTED_READER_FEATURES - _SCAN_ONLY)
    mode = mapping.mode(dict(configuration))
    if mode not in mapping.MODES:
        unsupported.append(f"columnMapping (mode {mode})")
    return unsupported


def check_readable(protocol: Protocol, metadata: Metadata, root: str) -> None:
    """Refuse, by name, a table whose rows headwater would read wrong (``root`` names it)."""
    unsupported = unreadable_features(protocol, metadata.configuration)
    if unsupported:
        raise UnsupportedFeatureError(
            f"Delta table at {root} uses reader feature(s) {', '.join(unsupported)} "
            f"(protocol reader version {protocol.min_reader_version}), which headwater "
            "cannot read yet. Read it with an engine that supports these features."
        )
    if protocol.all_reader_features & WIDENING_FEATURES:
        schema = StructType.fromJson(json.loads(metadata.schema_string))
        type_widening.check_recorded(schema, root)


def check_python_readable(protocol: Protocol, root: str) -> None:
    """The Python read path (deletion vectors, column mapping, odd layouts) cannot produce
    variant values; say so rather than fail inside Spark."""
    variants = variant_features(protocol)
    if variants:
        raise UnsupportedFeatureError(
            f"Delta table at {root} has {_kinds(variants)} columns ({', '.join(variants)}) "
            "and also needs headwater's Python read path (deletion vectors, column mapping "
            "or a non-hive file layout); reading that combination is not supported yet."
        )


def check_write_supported(
    protocol: Protocol, metadata: Metadata, root: str, schema_change: bool = False
) -> None:
    """Refuse, by name, a write headwater cannot make to a table it reads (``schema_change``:
    the write changes the table's schema).

    Variant columns are read by Spark's scan but not written here. Tables with column
    mapping take rows (written under physical names); a change of their schema would need
    new physical names and ids, which is not done here.
    """
    variants = variant_features(protocol)
    if variants:
        raise UnsupportedFeatureError(
            f"Delta table at {root} uses {', '.join(variants)}; headwater "
            f"reads {_kinds(variants)} columns but cannot write such tables yet."
        )
    mode = mapping.mode(dict(metadata.configuration))
    if mode != "none" and schema_change:
        raise UnsupportedFeatureError(
            f"Delta table at {root} uses column mapping (mode {mode}); headwater writes rows "
            "to it but cannot change its schema yet. Change the schema with delta-spark or "
            "Databricks, or copy it into a new table (CREATE TABLE ... AS SELECT)."
        )


def has_deletion_vectors(protocol: Protocol) -> bool:
    """Whether files of the table may carry deletion vectors (its readers must apply them)."""
    return "deletionVectors" in protocol.all_reader_features


def vectors_need_replay(protocol: Protocol) -> bool:
    """Whether the deletion vectors must come from headwater's replay of the log: delta-rs
    refuses them on tables with recorded type changes."""
    return bool(protocol.all_reader_features & WIDENING_FEATURES)
