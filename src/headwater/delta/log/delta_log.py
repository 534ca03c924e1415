"""The Delta transaction log of one table, through delta-rs.

Everything that reads or commits ``_delta_log`` goes through here: snapshots (schema,
partitioning, the live files with their partition values and stats), the actions of a
single commit, and transaction versions. delta-rs validates little on commit, so the
checks that keep a table correct live in :mod:`headwater.delta.log.commit`.

delta-rs stays the reader wherever it reads the log correctly. Logs old writers left that
it refuses (null fields in ``metaData``) or misreads (files named by absolute ``file:``
URIs) are replayed by :mod:`headwater.delta.log.tolerant_replay` instead, and read only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError as RsDeltaError
from deltalake.exceptions import TableNotFoundError as RsTableNotFoundError
from pyspark.sql.types import StructType

from headwater import storage
from headwater.delta.log import commit_times, deletion_vectors, time_travel
from headwater.delta.log import protocol as protocols
from headwater.delta.log import store as log_store
from headwater.delta.log import tolerant_replay as tolerant_log
from headwater.delta.log.actions import Commit, Metadata, Protocol, encode_path
from headwater.delta.log.actions import parse as parse_commit
from headwater.delta.schema import column_mapping as mapping
from headwater.errors import (
    CorruptLogError,
    NotADeltaTableError,
    TableNotFoundError,
    UnsupportedFeatureError,
)
from headwater.storage.paths import local_path
from headwater.storage.settings import delta_options


@dataclass(frozen=True)
class DataFile:
    """A live data file of a snapshot: where it is and what partition it holds."""

    path: str  # relative to the table root, decoded (the physical name)
    size: int
    partition_values: dict[str, str | None] = field(default_factory=dict)
    modification_time: int = 0
    log_path: str | None = None  # as the log spells it (URL-encoded), when known

    def absolute(self, root: str) -> str:
        return storage.join(root, self.path)

    @property
    def logged_path(self) -> str:
        return self.log_path if self.log_path is not None else encode_path(self.path)


class Snapshot:
    """One version of a table, as read by delta-rs.

    Where delta-rs opens the log but would get its file list wrong (actions naming files by
    absolute ``file:`` URIs, which it pairs with removes by raw spelling and resolves
    against the root as if relative), the files come from headwater's own replay
    (:mod:`headwater.delta.log.tolerant_replay`) instead; :class:`ReplayedSnapshot` is the
    snapshot of a log delta-rs refuses altogether. Either way such a table is read-only
    here: :attr:`table` and :meth:`check_writable` refuse by name.
    """

    def __init__(self, root: str, version: int, table: DeltaTable | None) -> None:
        self.root = root
        self.version = version
        self._rs = table

    @property
    def table(self) -> DeltaTable:
        """The delta-rs table (history, vacuum listing, checkpoints, app versions)."""
        if self.replayed_because is not None or self._rs is None:
            raise UnsupportedFeatureError(self._read_only_message("vacuum, restore or write"))
        return self._rs

    @cached_property
    def replayed_because(self) -> str | None:
        """Why the files come from headwater's replay of the log (None: from delta-rs)."""
        paths = self._rs_actions.column("path")
        absolute = pc.match_substring_regex(paths, tolerant_log.ABSOLUTE_PATTERN)
        if pc.any(absolute).as_py():
            example = paths.filter(absolute)[0].as_py()
            return f"its actions name files by absolute paths, such as {example}"
        removed = tolerant_log.absolute_remove(storage.delta_log_dir(self.root), self.version)
        if removed is not None:
            return f"its removes name files by absolute paths, such as {removed}"
        return None

    @cached_property
    def _rs_actions(self) -> pa.Table:
        assert self._rs is not None
        return pa.table(self._rs.get_add_actions(flatten=True))

    @cached_property
    def log_state(self) -> tolerant_log.LogState:
        """The log replayed by headwater, as of this version."""
        return tolerant_log.replay(self.root, storage.delta_log_dir(self.root), self.version)

    @cached_property
    def schema(self) -> StructType:
        return StructType.fromJson(json.loads(self.metadata.schema_string))

    @cached_property
    def partition_columns(self) -> list[str]:
        return list(self.metadata.partition_columns)

    @property
    def configuration(self) -> dict[str, str]:
        return dict(self.metadata.configuration)

    @cached_property
    def metadata(self) -> Metadata:
        """The table's metadata action as of this version (schema as logged)."""
        assert self._rs is not None
        meta = self._rs.metadata()
        return Metadata(
            id=str(meta.id),
            schema_string=self._rs.schema().to_json(),
            partition_columns=tuple(meta.partition_columns),
            configuration=dict(meta.configuration),
            name=meta.name,
            description=meta.description,
            created_time=meta.created_time,
        )

    @cached_property
    def protocol(self) -> Protocol:
        assert self._rs is not None
        p = self._rs.protocol()
        return Protocol(
            p.min_reader_version,
            p.min_writer_version,
            None if p.reader_features is None else frozenset(p.reader_features),
            None if p.writer_features is None else frozenset(p.writer_features),
        )

    @property
    def check_constraints(self) -> dict[str, str]:
        """The table's CHECK constraints: name -> SQL expression every row must satisfy."""
        prefix = "delta.constraints."
        return {k[len(prefix) :]: v for k, v in self.configuration.items() if k.startswith(prefix)}

    @cached_property
    def physical_schema(self) -> StructType | None:
        """The schema under the names the data files use; None without column mapping."""
        if mapping.mode(self.configuration) == "none":
            return None
        return mapping.physical_schema(self.schema)

    @cached_property
    def add_actions(self) -> pa.Table:
        """One row per live file: path, size_bytes, partition.*, num_records, min.*, max.*
        (stats under logical column names)."""
        if self.replayed_because is not None:
            types = {f.name: f.dataType for f in self.schema}
            keys = self._partition_keys
            partitions = [(c, keys[c], types[c]) for c in self.partition_columns]
            actions = tolerant_log.add_actions(
                self._replayed_adds, self.physical_schema or self.schema, partitions
            )
        else:
            actions = self._rs_actions
        if self.physical_schema is None:
            return actions
        logical = mapping.logical_paths(self.schema)
        names = []
        for name in actions.column_names:
            stat, _, column = name.partition(".")
            if stat in ("min", "max", "null_count") and column in logical:
                name = f"{stat}.{logical[column]}"
            names.append(name)
        return actions.rename_columns(names)

    @cached_property
    def _partition_keys(self) -> dict[str, str]:
        """Each partition column's key in ``partitionValues``: its physical name under
        column mapping."""
        physical = self.physical_schema
        if physical is None:
            return {c: c for c in self.partition_columns}
        names = {f.name: p.name for f, p in zip(self.schema, physical, strict=True)}
        return {c: names.get(c, c) for c in self.partition_columns}

    @cached_property
    def _replayed_adds(self) -> dict[str, dict]:
        """The replay's live adds, refusing files outside the table by name."""
        adds = self.log_state.adds
        outside = next((k for k in adds if tolerant_log.is_absolute(k)), None)
        if outside is not None:
            raise UnsupportedFeatureError(
                f"The Delta log of {self.root} names a data file outside the table "
                f"({outside}), as shallow clones do; headwater reads only files under the "
                "table's root. Read it with delta-spark, or deep-clone it into a new table."
            )
        return adds

    @cached_property
    def files(self) -> list[DataFile]:
        if self.replayed_because is not None:
            parts, keys = self.partition_columns, self._partition_keys
            return [
                DataFile(
                    path=key,
                    size=int(add.get("size") or 0),
                    partition_values={
                        c: (add.get("partitionValues") or {}).get(keys[c]) for c in parts
                    },
                    modification_time=int(add.get("modificationTime") or 0),
                    log_path=add["path"],
                )
                for key, add in self._replayed_adds.items()
            ]
        actions = self.add_actions
        parts = self.partition_columns
        if actions.num_rows == 0:
            return []
        paths = actions.column("path").to_pylist()
        sizes = actions.column("size_bytes").to_pylist()
        mtimes = actions.column("modification_time").to_pylist()
        part_values = {
            c: actions.column(f"partition.{c}").cast(pa.string()).to_pylist() for c in parts
        }
        return [
            DataFile(
                path=unquote(p),
                size=s,
                partition_values={c: part_values[c][i] for c in parts},
                modification_time=m or 0,
                log_path=p,
            )
            for i, (p, s, m) in enumerate(zip(paths, sizes, mtimes, strict=True))
        ]

    @cached_property
    def variant_features(self) -> list[str]:
        return protocols.variant_features(self.protocol)

    def check_python_readable(self) -> None:
        """Refuse variant columns on the Python read path (see
        :func:`headwater.delta.log.protocol.check_python_readable`)."""
        protocols.check_python_readable(self.protocol, self.root)

    def _read_only_message(self, what: str) -> str:
        return (
            f"delta-rs cannot read the Delta log of {self.root} correctly "
            f"({self.replayed_because}); headwater reads this table by replaying its log "
            f"itself, but cannot {what} it. Rewrite it as a new table first, for example "
            f"spark.read.format('delta').load('{self.root}').write.format('delta')"
            ".save('<new path>'), and use the new table."
        )

    def check_writable(self, schema_change: bool = False) -> None:
        """Refuse, by name, writes that would break a table another engine wrote.

        What the protocol allows is decided in :mod:`headwater.delta.log.protocol`; tables
        whose log delta-rs cannot read correctly take no writes, since the commit path
        checkpoints and vacuums through delta-rs.
        """
        self.check_readable()
        if self.replayed_because is not None:
            raise UnsupportedFeatureError(self._read_only_message("write to"))
        protocols.check_write_supported(self.protocol, self.metadata, self.root, schema_change)

    def check_readable(self) -> None:
        """Refuse, by name, tables whose rows we would get wrong (see
        :func:`headwater.delta.log.protocol.check_readable`)."""
        protocols.check_readable(self.protocol, self.metadata, self.root)

    @cached_property
    def deletion_vectors(self) -> dict[str, tuple[bool, ...]]:
        """Row selection (True = row is live) of each file that has a deletion vector,
        keyed by the file's path relative to the table (delta-rs may report the root
        resolved through symlinks); rows past the end of a vector are live."""
        if not protocols.has_deletion_vectors(self.protocol):
            return {}
        if self.replayed_because is not None or protocols.vectors_need_replay(self.protocol):
            return self._replayed_vectors()
        assert self._rs is not None
        vectors = pa.table(self._rs.deletion_vectors().read_all())
        by_name: dict[str, list[str]] = {}
        for f in self.files:
            by_name.setdefault(f.path.rsplit("/", 1)[-1], []).append(f.path)
        out: dict[str, tuple[bool, ...]] = {}
        for uri, selection in zip(
            vectors.column("filepath").to_pylist(),
            vectors.column("selection_vector").to_pylist(),
            strict=True,
        ):
            path = local_path(uri)
            matches = [
                rel for rel in by_name.get(path.rsplit("/", 1)[-1], []) if path.endswith("/" + rel)
            ]
            if len(matches) != 1:
                raise CorruptLogError(
                    f"Deletion vector of {uri} matches no single live file of {self.root}."
                )
            out[matches[0]] = tuple(selection)
        return out

    def _replayed_vectors(self) -> dict[str, tuple[bool, ...]]:
        cache: dict[str, bytes] = {}  # one read of a vector file many data files share
        out: dict[str, tuple[bool, ...]] = {}
        for key, add in self._replayed_adds.items():
            if add.get("deletionVector"):
                deleted = deletion_vectors.read(self.root, add["deletionVector"], cache)
                selection = [True] * (int(deleted.max()) + 1 if len(deleted) else 0)
                for position in deleted.tolist():
                    selection[position] = False
                out[key] = tuple(selection)
        return out


class ReplayedSnapshot(Snapshot):
    """One version of a table whose log delta-rs refuses (null fields old writers left in
    ``metaData``, for instance), replayed by :mod:`headwater.delta.log.tolerant_replay`."""

    def __init__(self, root: str, state: tolerant_log.LogState, refusal: str) -> None:
        super().__init__(root, state.version, None)
        self.refusal = refusal
        self.__dict__["log_state"] = state

    @cached_property
    def replayed_because(self) -> str | None:
        return self.refusal

    @cached_property
    def metadata(self) -> Metadata:
        return Metadata.from_json(self.log_state.metadata)

    @cached_property
    def protocol(self) -> Protocol:
        p = self.log_state.protocol
        readers, writers = p.get("readerFeatures"), p.get("writerFeatures")
        return Protocol(
            int(p["minReaderVersion"]),
            int(p["minWriterVersion"]),
            None if readers is None else frozenset(readers),
            None if writers is None else frozenset(writers),
        )


class LogRefusedError(CorruptLogError):
    """delta-rs refused a log that headwater can replay itself (see :meth:`DeltaLog.snapshot`)."""

    def __init__(self, root: str, error: BaseException) -> None:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        self.reason = f"delta-rs refuses its log: {first}"
        super().__init__(
            f"Cannot read the Delta log of {root} with delta-rs: {first}. It holds null fields "
            "old Delta writers left in their actions; read it through DeltaLog.snapshot()."
        )


# Marks a table in the making on object stores (see DeltaLog.claim); hidden from readers.
CLAIM_MARKER = ".headwater-claimed"


class DeltaLog:
    """Access to the log of the table rooted at ``root`` (a path or URI)."""

    def __init__(self, root: str, storage_options: dict[str, str] | None = None) -> None:
        self.root = storage.normalize(root)
        location = storage.parse(self.root)
        self.storage_options = (
            storage_options
            if storage_options is not None or not location.is_s3
            else delta_options(location.bucket)
        )

    @property
    def log_dir(self) -> str:
        return storage.delta_log_dir(self.root)

    def store(self) -> tuple[log_store.LogStore, str]:
        """Where commits are published (see :mod:`headwater.delta.log.store`)."""
        return log_store.for_table(self.root)

    def read_commit(self, version: int) -> Commit:
        """The typed actions of commit ``version``."""
        return parse_commit(version, self.commit_actions(version))

    def exists(self) -> bool:
        return DeltaTable.is_deltatable(self.root, self.storage_options)

    def require_table_or_empty(self) -> bool:
        """True when a table exists; False for a missing or empty directory.

        A directory that holds other files but no log is refused, so a write never mixes
        a new table into somebody else's data.
        """
        if self.exists():
            return True
        self.check_log_not_corrupt()
        if storage.is_dir(self.log_dir):
            return False  # claimed by a Delta writer that has not committed yet
        if storage.is_nonempty_dir(self.root):
            visible = [
                f.path
                for f in storage.list_files(self.root)
                if not any(
                    part.startswith(("_", "."))
                    for part in storage.relative(f.path, self.root).split("/")
                )
            ]
            if visible:
                raise NotADeltaTableError(
                    f"{self.root} is not a Delta table: it holds files (for example "
                    f"{visible[0]}) but no _delta_log. Write to an empty or new path, or "
                    "convert the files to Delta first."
                )
        return False

    def claim(self) -> None:
        """Mark the location as a Delta table in the making (before its first commit).

        A crash between writing the first files and committing them must not turn the
        path into "a directory of foreign files" that the next attempt refuses. Object
        stores have no empty folders: a hidden marker object claims the log there.
        """
        if storage.is_remote(self.log_dir):
            storage.write_bytes(storage.join(self.log_dir, CLAIM_MARKER), b"")
        else:
            storage.make_dir(self.log_dir)

    def check_log_not_corrupt(self) -> None:
        """A ``_delta_log`` with files but no readable commit is corrupt, not absent."""
        if any(not f.base_name.startswith(".") for f in storage.list_files(self.log_dir, False)):
            raise CorruptLogError(
                f"{self.log_dir} exists but holds no readable commit; the log is corrupt or "
                "was partly deleted. Restore it from a backup, or remove the directory to start over."
            )

    def load(self, version: int | str | None = None, timestamp: str | None = None) -> DeltaTable:
        if version is not None and timestamp is None and int(version) >= 0:
            # One log read at that version (3 ms on a 12-commit log), not the latest read
            # then loaded back to it (8 ms): a refresh loads several past versions.
            try:
                return DeltaTable(
                    self.root, version=int(version), storage_options=self.storage_options
                )
            except Exception:  # (the path below says why, by name)
                pass
        try:
            table = DeltaTable(self.root, storage_options=self.storage_options)
        except RsTableNotFoundError as e:
            self.require_table_or_empty()
            where = f"No Delta table at {self.root}"
            if not storage.is_dir(self.root):  # Spark's words, which users match on
                where = f"[PATH_NOT_FOUND] Path does not exist: {self.root}. No Delta table there"
            raise TableNotFoundError(f"{where}. Write to it first or check the path.") from e
        except (RsDeltaError, OSError) as e:
            if tolerant_log.refused(e):
                raise LogRefusedError(self.root, e) from e
            raise CorruptLogError(f"Cannot read the Delta log of {self.root}: {e}") from e
        try:
            if version is not None:
                time_travel.check_version(self.log_dir, int(version), table.version())
                table.load_as_version(int(version))
            elif timestamp is not None:
                when = parse_timestamp(timestamp)
                found = commit_times.stamp_history(
                    self.log_dir, table.history(), table.metadata().configuration
                )
                table.load_as_version(time_travel.version_as_of(found, when))
        except (RsDeltaError, OSError, ValueError) as e:
            if tolerant_log.refused(e):
                raise LogRefusedError(self.root, e) from e
            if version is not None:  # a version log cleanup removed
                time_travel.check_version(self.log_dir, int(version))
            raise TableNotFoundError(
                f"Cannot time-travel {self.root} to "
                f"{'version ' + str(version) if version is not None else 'timestamp ' + str(timestamp)}: {e}. "
                f"The table's versions are 0..{self.latest_version()}; see its history."
            ) from e
        return table

    def snapshot(self, version: int | str | None = None, timestamp: str | None = None) -> Snapshot:
        """The table at ``version`` (or as of ``timestamp``; the latest when neither), read
        by delta-rs, or replayed by headwater when delta-rs refuses the log."""
        try:
            table = self.load(version, timestamp)
        except LogRefusedError as e:
            if version is None and timestamp is not None:
                history = self.history()
                version = time_travel.version_as_of(history, parse_timestamp(timestamp))
            elif version is not None:
                time_travel.check_version(self.log_dir, int(version))
            state = tolerant_log.replay(
                self.root, self.log_dir, None if version is None else int(version)
            )
            return ReplayedSnapshot(self.root, state, e.reason)
        return Snapshot(self.root, table.version(), table)

    def history(self, limit: int | None = None) -> list[dict]:
        """The commits' ``commitInfo``, newest first, each with its version (delta-rs's
        ``history()``; replayed from the JSON commits when delta-rs refuses the log), and
        ``timestamp`` the commit's time as the protocol defines it and delta-spark shows
        it: its file's, or its in-commit timestamp (:mod:`.commit_times`)."""
        try:
            table = DeltaTable(self.root, storage_options=self.storage_options)
            found, configuration = table.history(limit), table.metadata().configuration
        except RsDeltaError as e:
            if not tolerant_log.refused(e):
                raise
            found = tolerant_log.commit_infos(self.log_dir, limit)
            configuration = self.snapshot().configuration
        return commit_times.stamp_history(self.log_dir, found, configuration)

    def latest_version(self) -> int:
        """The newest committed version: the highest commit (or checkpoint) the log's
        folder names, one listing. delta-rs's table built at its latest only to read the
        number replays the log since its last checkpoint: about 5 ms a call, and a view's
        refresh, a stream's batch and an event log flush each ask. With no commit named,
        delta-rs is asked, so a missing or refused log fails as it did. On object stores
        delta-rs stays: it lists from the last checkpoint, where a listing of the whole
        folder pages through every commit a long log keeps."""
        if not storage.is_remote(self.log_dir):
            newest = tolerant_log.latest_version(self.log_dir)
            if newest >= 0:
                return newest
        try:
            return DeltaTable(self.root, storage_options=self.storage_options).version()
        except RsDeltaError as e:
            if not tolerant_log.refused(e):
                raise
            return tolerant_log.latest_version(self.log_dir)

    def commit_actions(self, version: int) -> list[dict]:
        """The actions of commit ``version`` (one dict per line of its JSON file)."""
        remedy = "Restart the stream from a later version (startingVersion)."
        return tolerant_log.read_commit(self.log_dir, version, remedy)


def parse_timestamp(text: str) -> datetime:
    value = datetime.fromisoformat(str(text).strip().replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value
