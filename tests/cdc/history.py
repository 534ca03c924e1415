"""What a table of the database went through, recorded by the test that wrote it, and the
checks of the AUTO CDC targets against it: the SCD1 target equals ``SELECT *`` of the
table row for row, and the SCD2 target holds each key's whole history, every version in
order, the last one open unless the key was deleted.

The history is observed, not predicted: every statement runs in the test's own
transaction, and after each one the table is read back (the transaction sees its own
changes) and compared with what it held before, key by key. A row that changed is a new
version of its key; a key that went away was deleted (a primary-key update is the old
key's delete and the new key's first version, as Debezium sends it). That is the version
sequence SCD2 builds from the change events: one event per changed row per statement, in
commit order. A transaction that fails records nothing. The tables the tests use are
small, so reading them back after each statement costs milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

Row = tuple
Version = tuple[Row, bool]  # (the row, closed: a later version or a delete ended it)


def as_is(row: Row) -> Row:
    return tuple(row)


@dataclass
class History:
    """The versions of each key of ``table`` (``columns``: the first is the key), in the
    order the database committed them. ``normalize`` turns a row read from the database
    into the values Spark reads back from the targets (a ``timestamptz`` into UTC...)."""

    table: str
    columns: str
    normalize: Callable[[Row], Row] = as_is
    versions: dict[Hashable, list[Row]] = field(default_factory=dict)
    current: dict[Hashable, Row] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return [name.strip() for name in self.columns.split(",")]

    def execute(self, postgres, *statements: str) -> None:
        """``statements`` in one transaction, each one's effect on the table recorded."""
        versions = {key: list(rows) for key, rows in self.versions.items()}
        current = dict(self.current)
        with postgres.connect() as conn, conn.transaction():
            for statement in statements:
                conn.execute(statement)
                read = conn.execute(f"SELECT {self.columns} FROM {self.table}").fetchall()
                now = {row[0]: self.normalize(row) for row in read}
                for key, row in now.items():
                    if current.get(key) != row:
                        versions.setdefault(key, []).append(row)
                current = now
        self.versions, self.current = versions, current

    def rows(self) -> list[Row]:
        """The table as it is now, ordered by key."""
        return [self.current[key] for key in sorted(self.current)]

    def scd2(self) -> dict[Hashable, list[Version]]:
        """Each key's versions as the SCD2 target must hold them."""
        return {
            key: [(row, i < len(rows) - 1 or key not in self.current) for i, row in enumerate(rows)]
            for key, rows in self.versions.items()
        }


def database_rows(postgres, history: History) -> list[Row]:
    """``SELECT *`` of the table now, ordered by key, in the history's form; also checks
    that the history the test recorded is what the database holds."""
    read = postgres.rows(f"SELECT {history.columns} FROM {history.table} ORDER BY 1")
    rows = [history.normalize(row) for row in read]
    assert rows == history.rows(), "the recorded history lost track of the database"
    return rows


def scd1_rows(spark, table: str, history: History) -> list[Row]:
    """The SCD1 target's rows, ordered by key."""
    key = history.names[0]
    return [tuple(r) for r in spark.table(table).select(*history.names).orderBy(key).collect()]


def scd2_versions(spark, table: str, history: History) -> dict[Hashable, list[Version]]:
    """The SCD2 target's versions of each key, in ``__START_AT`` order."""
    key = history.names[0]
    got = (
        spark.table(table)
        .selectExpr(*history.names, "__END_AT IS NOT NULL AS closed", "__START_AT")
        .orderBy(key, "__START_AT")
        .collect()
    )
    versions: dict[Hashable, list[Version]] = {}
    for r in got:
        values = tuple(r)[: len(history.names)]
        versions.setdefault(values[0], []).append((values, r.closed))
    return versions


def assert_targets_match(spark, postgres, scd1: str, scd2: str, history: History) -> None:
    """SCD1 equals the database table row for row; SCD2 holds every key's whole history."""
    want = database_rows(postgres, history)
    assert scd1_rows(spark, scd1, history) == want
    got, expected = scd2_versions(spark, scd2, history), history.scd2()
    wrong = {key: (got.get(key), versions) for key, versions in expected.items()
             if got.get(key) != versions}  # fmt: skip
    extra = sorted(set(got) - set(expected))
    assert not wrong and not extra, (
        f"SCD2 differs from the history for {len(wrong)} of {len(expected)} keys "
        f"(key: (target, history)): {dict(list(wrong.items())[:5])}; keys never written: {extra}"
    )
