"""``generate("symlink_format_manifest")``: manifests for engines that read Delta tables as
plain Parquet (Presto, Trino and Athena through Hive's SymlinkTextInputFormat).

Each partition gets ``_symlink_format_manifest/<k=v...>/manifest`` listing the absolute
paths of its live data files; manifests of partitions that no longer exist are removed, so
the manifest directory describes exactly the current version.
"""

from __future__ import annotations

from headwater import storage
from headwater.delta.log.delta_log import DeltaLog
from headwater.errors import OptionError, UnsupportedFeatureError
from headwater.storage.partition_dirs import partition_dir
from headwater.storage.paths import hadoop_uri

MANIFEST_DIR = "_symlink_format_manifest"
MODES = ("symlink_format_manifest",)


def generate(path: str, mode: str) -> int:
    """Write the manifests of the table's current version; returns how many were written."""
    if mode.lower() not in MODES:
        raise OptionError(
            f"Unknown manifest mode {mode!r}; the supported mode is 'symlink_format_manifest'."
        )
    snapshot = DeltaLog(path).snapshot()
    snapshot.check_readable()
    if snapshot.deletion_vectors or snapshot.physical_schema is not None:
        raise UnsupportedFeatureError(
            f"Cannot generate symlink manifests for {snapshot.root}: it has deletion vectors or "
            "column mapping, which engines reading plain Parquet would get wrong "
            "(delta-spark refuses this too)."
        )
    parts = snapshot.partition_columns
    groups: dict[str, list[str]] = {}
    for f in snapshot.files:
        key = partition_dir(f.partition_values, parts) if parts else ""
        groups.setdefault(key, []).append(hadoop_uri(f.absolute(snapshot.root)))
    root = storage.join(snapshot.root, MANIFEST_DIR)
    for key, files in groups.items():
        target = storage.join(root, key, "manifest") if key else storage.join(root, "manifest")
        storage.write_bytes(target, ("\n".join(sorted(files)) + "\n").encode())
    wanted = {
        storage.join(root, k, "manifest") if k else storage.join(root, "manifest") for k in groups
    }
    if storage.is_dir(root):
        for info in storage.list_files(root):
            if info.path.endswith("/manifest") and info.path not in wanted:
                storage.delete_file(info.path)
    return len(groups)
