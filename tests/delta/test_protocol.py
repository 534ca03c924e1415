"""What a table's protocol lets headwater do, decided from the protocol and metadata values
alone (Spark-free): which reader features it cannot read, the variant and column-mapping
limits on writes, where deletion vectors come from. A snapshot delegates to these checks,
so the refusals below are the ones users see from a read or a write."""

from __future__ import annotations

import pytest
from pyspark.sql.types import LongType, StructField, StructType

from headwater.delta.log import protocol
from headwater.delta.log.actions import Metadata, Protocol
from headwater.errors import UnsupportedFeatureError

ROOT = "/data/t"
PLAIN = StructType([StructField("id", LongType())])


def _metadata(config: dict[str, str] | None = None, schema: StructType = PLAIN) -> Metadata:
    return Metadata(id="m", schema_string=schema.json(), configuration=config or {})


def _features(*readers: str) -> Protocol:
    return Protocol(3, 7, frozenset(readers), frozenset(readers))


def test_a_legacy_protocol_and_every_supported_reader_feature_are_readable():
    protocol.check_readable(Protocol(1, 2), _metadata(), ROOT)
    supported = _features(*protocol.SUPPORTED_READER_FEATURES - protocol.WIDENING_FEATURES)
    assert protocol.unreadable_features(supported, {"delta.columnMapping.mode": "name"}) == []
    protocol.check_readable(supported, _metadata({"delta.columnMapping.mode": "id"}), ROOT)


def test_an_unknown_reader_feature_is_refused_by_name_with_the_reader_version():
    unknown = _features("deletionVectors", "someFutureFeature", "anotherOne")
    assert protocol.unreadable_features(unknown, {}) == ["anotherOne", "someFutureFeature"]
    with pytest.raises(UnsupportedFeatureError, match=r"anotherOne, someFutureFeature.*version 3"):
        protocol.check_readable(unknown, _metadata(), ROOT)


def test_an_unknown_column_mapping_mode_is_refused_by_its_mode():
    config = {"delta.columnMapping.mode": "Hash"}
    assert protocol.unreadable_features(Protocol(2, 5), config) == ["columnMapping (mode hash)"]
    with pytest.raises(UnsupportedFeatureError, match=r"columnMapping \(mode hash\)"):
        protocol.check_readable(Protocol(2, 5), _metadata(config), ROOT)


def test_variant_columns_are_readable_by_spark_scan_but_not_the_python_path_nor_writes():
    variant = _features("variantType", "deletionVectors")
    assert protocol.variant_features(variant) == ["variantType"]
    protocol.check_readable(variant, _metadata(), ROOT)
    with pytest.raises(UnsupportedFeatureError, match="variant columns .*Python read path"):
        protocol.check_python_readable(variant, ROOT)
    with pytest.raises(UnsupportedFeatureError, match="uses variantType; .*cannot write"):
        protocol.check_write_supported(variant, _metadata(), ROOT)
    protocol.check_python_readable(_features("deletionVectors"), ROOT)


def test_column_mapping_takes_rows_but_refuses_a_schema_change():
    mapped = _metadata({"delta.columnMapping.mode": "name"})
    protocol.check_write_supported(Protocol(2, 5), mapped, ROOT)
    protocol.check_write_supported(Protocol(1, 2), _metadata(), ROOT, schema_change=True)
    with pytest.raises(UnsupportedFeatureError, match=r"column mapping \(mode name\)"):
        protocol.check_write_supported(Protocol(2, 5), mapped, ROOT, schema_change=True)


def _widened(from_type: str, to_type: str) -> StructType:
    change = {"fromType": from_type, "toType": to_type}
    metadata = {"delta.typeChanges": [change]}
    return StructType([StructField("n", LongType(), metadata=metadata)])


def test_recorded_type_changes_are_checked_only_on_type_widening_tables():
    narrowed = _metadata(schema=_widened("long", "integer"))
    protocol.check_readable(Protocol(1, 2), narrowed, ROOT)  # not a widening table: not read
    widening = _features("typeWidening")
    protocol.check_readable(widening, _metadata(schema=_widened("integer", "long")), ROOT)
    with pytest.raises(UnsupportedFeatureError, match="column n records a type change from long"):
        protocol.check_readable(widening, narrowed, ROOT)


def test_deletion_vectors_are_read_from_the_log_on_type_widened_tables():
    assert not protocol.has_deletion_vectors(Protocol(1, 2))
    assert protocol.has_deletion_vectors(_features("deletionVectors"))
    assert not protocol.vectors_need_replay(_features("deletionVectors"))
    assert protocol.vectors_need_replay(_features("deletionVectors", "typeWidening-preview"))


def test_geometry_columns_need_the_geospatial_feature_and_only_row_writes_are_refused():
    from pyspark.sql.types import GeographyType, GeometryType

    from headwater.sqltypes import parse_type

    assert parse_type("geometry(4326)") == GeometryType(4326)
    assert parse_type("geometry(OGC:CRS84)") == GeometryType(4326)
    assert parse_type("geography(OGC:CRS84, SPHERICAL)") == GeographyType(4326)
    schema = StructType([StructField("g", parse_type("geometry(4326)"))])
    meta = _metadata(schema=schema)
    assert "geospatial" in protocol.needed_features(meta)
    table = protocol.required(meta)
    assert (
        table.min_reader_version == 3 and "geospatial" in table.all_reader_features
    )  # reader 3: other readers must know it
    assert protocol.unreadable_features(table, {}) == []  # Spark's own scan decodes it
    protocol.check_writable(table, meta, ROOT, removes=False, adds=False)  # create, ALTER
    with pytest.raises(UnsupportedFeatureError, match="geospatial"):
        protocol.check_writable(table, meta, ROOT, removes=False, adds=True)


GENERATED = StructType(
    [
        StructField("id", LongType()),
        StructField("d", LongType(), metadata={"delta.generationExpression": "id * 2"}),
    ]
)
BASE = frozenset({"appendOnly", "invariants"})


@pytest.mark.parametrize(
    ("config", "schema", "expected"),
    [
        ({}, PLAIN, Protocol(1, 2)),
        ({"delta.appendOnly": "true"}, PLAIN, Protocol(1, 2)),
        ({"delta.constraints.c": "id > 0"}, PLAIN, Protocol(1, 3)),  # exactly (1, 3)'s set
        # (1, 4) would imply checkConstraints too: writer version 7 listing the features.
        (
            {"delta.enableChangeDataFeed": "true"},
            PLAIN,
            Protocol(1, 7, None, BASE | {"changeDataFeed"}),
        ),
        (
            {"delta.appendOnly": "true"},
            GENERATED,
            Protocol(1, 7, None, BASE | {"generatedColumns"}),
        ),
    ],
)
def test_a_new_table_gets_the_protocol_delta_spark_chooses(config, schema, expected):
    # What delta-spark 4.4 wrote for CREATE TABLE with these (tests/engines/parity).
    assert protocol.required(_metadata(config, schema)) == expected


def test_an_existing_table_keeps_its_protocol_or_gains_features_as_delta_spark_merges():
    cdf = _metadata({"delta.enableChangeDataFeed": "true"})
    assert protocol.required(cdf, Protocol(1, 2)) == Protocol(1, 7, None, BASE | {"changeDataFeed"})
    assert protocol.required(cdf, Protocol(1, 4)) == Protocol(1, 4)  # supported: kept whole
    assert protocol.upgraded(Protocol(1, 2), 1, 4) == Protocol(1, 4)
    assert protocol.upgraded(Protocol(1, 3), 1, 2) == Protocol(1, 3)  # never lowered
    assert protocol.upgraded(Protocol(1, 2), 2, 5) == Protocol(2, 5)
    assert protocol.upgraded(Protocol(1, 2), 1, 7) == Protocol(1, 2)  # 7 alone adds nothing
