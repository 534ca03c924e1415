"""Debezium as a source: change events of a database read from Kafka, one flat row per
change with Debezium's encodings decoded, ready for AUTO CDC (docs/cdc.md)."""

from __future__ import annotations

from headwater.debezium.changes import changes, read

__all__ = ["changes", "read"]
