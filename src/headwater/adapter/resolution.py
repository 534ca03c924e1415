"""A door for the layer above: who answers reads of table names while a definition runs.

A declarative pipeline evaluates its definitions with the same ``spark.table(n)``,
``spark.readStream.table(n)`` and ``spark.sql(...)`` calls users write everywhere else,
but there a name may mean a dataset of the pipeline (which may not exist yet, or must be
read as the pipeline decides), and an Auto Loader source gets its schema location from
the pipeline's storage. The pipelines package installs a :class:`ReadResolver` for the
duration of an evaluation (:func:`resolving`); the hooks of this package ask it first.
The resolver is held in a context variable, so each thread (each flow) has its own.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol

from pyspark.sql import DataFrame


class ReadResolver(Protocol):
    def table(
        self, name: str, streaming: bool, options: Mapping[str, str] | None = None
    ) -> DataFrame | None:
        """The rows of ``name`` (read with the reader's ``options``, such as
        ``skipChangeCommits``), or None to let the read go on as usual. A batch read of a
        Delta table by path without options is asked by its SQL name, ``delta.`path```."""

    def sql(self, text: str) -> DataFrame | None:
        """The result of the query ``text``, or None to let Spark run it as usual."""

    def schema_location(self) -> str | None:
        """Where an Auto Loader source given no ``cloudFiles.schemaLocation`` keeps its
        schema and file state, or None to require the option."""

    def file_metadata_column(self) -> str | None:
        """A column to add to Auto Loader's rows naming their source file (the
        ``headwater.fileMetadataColumn`` option), or None for none."""


_current: ContextVar[ReadResolver | None] = ContextVar("headwater_read_resolver", default=None)


def current() -> ReadResolver | None:
    return _current.get()


@contextmanager
def resolving(resolver: ReadResolver | None) -> Iterator[None]:
    """Reads in this thread go to ``resolver`` (None: to nobody) until the block ends."""
    token = _current.set(resolver)
    try:
        yield
    finally:
        _current.reset(token)
