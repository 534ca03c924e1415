"""Keeping tables in shape: OPTIMIZE (compaction, Z-order, liquid clustering, its metrics),
VACUUM and RESTORE, symlink manifests. May import every room but the face ``tables``."""
