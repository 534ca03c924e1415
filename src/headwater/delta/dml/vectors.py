"""DML that marks rows deleted with deletion vectors instead of rewriting their files.

On a table with ``delta.enableDeletionVectors = true`` (as current Databricks and Delta
releases create them), DELETE, UPDATE and MERGE leave the files holding changed rows in
place: the changed rows' positions go into a deletion vector, and only new rows (updated
and inserted ones) are written. Each touched file is removed and re-added in the same
commit with its new vector (the old vector's positions included), as delta-spark does.
"""

from __future__ import annotations

from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import fs as pafs
from pyspark.sql import DataFrame

from headwater import storage
from headwater.delta.dml.metrics import Clock, vectors_changed
from headwater.delta.dml.target import FILE_COL, ROW_INDEX_COL
from headwater.delta.files import change_data
from headwater.delta.log import deletion_vectors, replay
from headwater.delta.log.actions import AddFile, now_ms
from headwater.delta.log.commit import Transaction
from headwater.delta.log.delta_log import DeltaLog, Snapshot
from headwater.delta.read.batch import native_eligible
from headwater.errors import CorruptLogError

ENABLE = "delta.enableDeletionVectors"


def applies(snapshot: Snapshot) -> bool:
    """True when DML on this table writes deletion vectors: the table asks for them, its
    files can be read natively with row positions, and its log is on a local filesystem.
    The change data feed keeps the rewrite plan, which records its changes in cdc files."""
    if snapshot.configuration.get(ENABLE, "false").lower() != "true":
        return False
    if "deletionVectors" not in snapshot.protocol.all_writer_features:
        return False
    if change_data.enabled(snapshot.configuration):
        return False
    if not isinstance(storage.filesystem(snapshot.root)[0], pafs.LocalFileSystem):
        return False
    return native_eligible(snapshot, with_vectors=True)


def positions(rows: DataFrame) -> pa.Table:
    """The (file, row position) pairs of ``rows`` (a target read with both columns), moved
    to the driver as Arrow."""
    return rows.select(FILE_COL, ROW_INDEX_COL).toArrow()


def has_duplicates(pairs: pa.Table) -> bool:
    """True when some (file, row) pair occurs twice (a target row matched twice)."""
    if pairs.num_rows < 2:
        return False
    files = pc.dictionary_encode(pairs[FILE_COL]).combine_chunks().indices.to_numpy()
    rows = pairs[ROW_INDEX_COL].to_numpy()
    keys = np.lexsort((rows, files))
    same_file = files[keys][1:] == files[keys][:-1]
    same_row = rows[keys][1:] == rows[keys][:-1]
    return bool(np.any(same_file & same_row))


def commit(
    txn: Transaction,
    deleted: pa.Table,
    adds: list[AddFile],
    metrics: dict[str, int],
    removed_metric: str = "numRemovedFiles",
    clock: Clock | None = None,
    touched: bool = False,
) -> tuple[int | None, dict[str, int]]:
    """Commit ``deleted`` ((file, row) pairs, files as Spark names them) as deletion vectors,
    together with ``adds``, in ``txn``; returns (version, metrics with the vector counts,
    bytes and ``clock``'s times added, as delta-spark logs them, and ``removed_metric``:
    the files all of whose rows are now deleted, removed outright, or with ``touched``
    (UPDATE's meaning) every file whose rows were marked)."""
    snapshot = txn.snapshot
    assert snapshot is not None
    by_uri = _files_by_uri(snapshot, deleted)
    paths = set(by_uri.values())
    logged = replay.live_adds(DeltaLog(snapshot.root), snapshot.version, paths)  # one replay
    missing = paths - set(logged)
    if missing:
        raise CorruptLogError(
            f"The log of {snapshot.root} has no add action for {sorted(missing)[0]}, which "
            "the scan read; nothing was committed."
        )
    cache: dict[str, bytes] = {}
    old = {
        path: deletion_vectors.read(snapshot.root, add.deletion_vector, cache)
        for path, add in logged.items()
        if add.deletion_vector is not None
    }
    new_rows: dict[str, np.ndarray] = {}
    for uri, rows in _rows_by_file(deleted).items():
        path = by_uri[uri]
        new_rows[path] = np.union1d(new_rows.get(path, rows), rows)
    vectors, dropped = {}, []
    for path, rows in new_rows.items():
        union = np.union1d(old.get(path, np.zeros(0, np.uint64)), rows)
        if logged[path].num_records == len(union):
            dropped.append(path)  # every row deleted: the file goes, no vector needed
        else:
            vectors[path] = union
    descriptors = deletion_vectors.write(snapshot.root, vectors) if vectors else {}
    now = now_ms()
    txn.remove_files(logged[p].remove(timestamp=now) for p in new_rows)
    txn.add_files(logged[p].with_vector(descriptors[p]) for p in new_rows if p in descriptors)
    txn.add_files(adds)
    changed = vectors_changed(
        [(logged[p], p in old) for p in descriptors], [logged[p] for p in dropped], adds
    )
    merge = removed_metric.startswith("numTarget")  # MERGE's names
    metrics = {
        **metrics,
        removed_metric: len(new_rows) if touched else len(dropped),
        **changed.named(merge),
        **(clock or Clock()).times(),
    }
    txn.metrics = dict(metrics)
    if txn.is_empty:
        return None, metrics
    try:
        version = txn.commit()
    except BaseException:
        if descriptors:  # the new vector file is named by nothing committed
            written = deletion_vectors.file_of(snapshot.root, next(iter(descriptors.values())))
            if written is not None:
                storage.delete_file(written)
        raise
    return version, metrics


def _files_by_uri(snapshot: Snapshot, deleted: pa.Table) -> dict[str, str]:
    """Each file URI in ``deleted`` (as ``_metadata.file_path`` spells it) mapped to the
    snapshot file's relative path."""
    by_local = {storage.normalize(f.absolute(snapshot.root)): f.path for f in snapshot.files}
    out = {}
    for uri in pc.unique(deleted[FILE_COL]).to_pylist():
        path = by_local.get(storage.normalize(unquote(uri)))
        if path is None:
            raise CorruptLogError(
                f"Spark read {uri}, which is not a live file of {snapshot.root}; nothing was "
                "committed."
            )
        out[uri] = path
    return out


def _rows_by_file(deleted: pa.Table) -> dict[str, np.ndarray]:
    """Row positions (uint64) per file URI, in one pass over the pairs."""
    if deleted.num_rows == 0:
        return {}
    encoded = pc.dictionary_encode(deleted[FILE_COL]).combine_chunks()
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    rows = deleted[ROW_INDEX_COL].to_numpy().astype(np.uint64)
    order = np.argsort(codes, kind="stable")
    uniques, starts = np.unique(codes[order], return_index=True)
    groups = np.split(rows[order], starts[1:])
    names = encoded.dictionary.to_pylist()
    return {names[code]: group for code, group in zip(uniques, groups, strict=True)}
