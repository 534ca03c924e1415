"""Deletion-vector files as the Delta protocol lays them out.

A deletion vector marks rows of a data file (by position) as deleted, so DELETE, UPDATE and
MERGE can leave the file in place and write only the vector and the new rows. On disk (the
protocol's ``u`` storage type) a vector lives in ``deletion_vector_<uuid>.bin`` at the table
root: one format-version byte, then per vector a 4-byte big-endian size, the serialized
bitmap (a magic number and a 64-bit RoaringBitmapArray: 32-bit portable Roaring bitmaps,
one per high 32 bits of the row position) and a 4-byte big-endian CRC-32. The add action
names the file by the UUID in Z85, plus the vector's offset, size and cardinality.
"""

from __future__ import annotations

import base64
import struct
import uuid
import zlib
from collections.abc import Iterable, Mapping

import numpy as np
from pyroaring import BitMap

from headwater import storage

MAGIC = 1681511377
FORMAT_VERSION = 1
_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_B85 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"
_TO_Z85 = str.maketrans(_B85, _Z85)
_FROM_Z85 = str.maketrans(_Z85, _B85)


def z85_encode(data: bytes) -> str:
    """Z85 (the alphabet Delta uses): base85 over 4-byte big-endian words, as b85."""
    if len(data) % 4:
        raise ValueError("Z85 encodes whole 4-byte words")
    return base64.b85encode(data).decode("ascii").translate(_TO_Z85)


def z85_decode(text: str) -> bytes:
    return base64.b85decode(text.translate(_FROM_Z85).encode("ascii"))


def file_of(root: str, descriptor: Mapping) -> str | None:
    """The file holding a vector (None: the vector is inline in the log)."""
    kind, where = descriptor["storageType"], descriptor["pathOrInlineDv"]
    if kind == "i":
        return None
    if kind == "p":
        return storage.normalize(where)
    prefix, encoded = where[:-20], where[-20:]
    name = f"deletion_vector_{uuid.UUID(bytes=z85_decode(encoded))}.bin"
    return storage.join(root, prefix, name) if prefix else storage.join(root, name)


def serialize(positions: Iterable[int] | np.ndarray) -> tuple[bytes, int]:
    """(bitmap bytes with the magic number, cardinality) of the deleted row positions."""
    rows = np.unique(np.asarray(positions, dtype=np.uint64))
    highs = rows >> np.uint64(32)
    buckets = np.unique(highs)
    parts = [struct.pack("<iq", MAGIC, len(buckets))]
    for high in buckets:
        lows = (rows[highs == high] & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        parts.append(struct.pack("<I", int(high)))
        parts.append(BitMap(lows).serialize())
    return b"".join(parts), int(len(rows))


def deserialize(data: bytes) -> np.ndarray:
    """Row positions (uint64) of a serialized bitmap (with its magic number)."""
    magic, count = struct.unpack_from("<iq", data, 0)
    if magic != MAGIC:
        raise ValueError(f"not a deletion vector (magic number {magic})")
    offset, out = 12, []
    for _ in range(count):
        (high,) = struct.unpack_from("<I", data, offset)
        offset += 4
        bitmap = BitMap.deserialize(data[offset:])
        offset += len(bitmap.serialize())
        lows = np.fromiter(bitmap, dtype=np.uint64, count=len(bitmap))
        out.append((np.uint64(high) << np.uint64(32)) | lows)
    return np.concatenate(out) if out else np.zeros(0, dtype=np.uint64)


def write(root: str, vectors: Mapping[str, np.ndarray]) -> dict[str, dict]:
    """Write the vectors (deleted positions per data file) into one new file at the table
    root; returns each data file's descriptor for its add action. The file is new (a fresh
    UUID), so a write that never commits leaves only an orphan for VACUUM."""
    file_id = uuid.uuid4()
    body, descriptors = bytearray([FORMAT_VERSION]), {}
    for path, positions in vectors.items():
        data, cardinality = serialize(positions)
        descriptors[path] = {
            "storageType": "u",
            "pathOrInlineDv": z85_encode(file_id.bytes),
            "offset": len(body),  # where the vector's size prefix starts
            "sizeInBytes": len(data),
            "cardinality": cardinality,
        }
        body += struct.pack(">i", len(data)) + data + struct.pack(">I", zlib.crc32(data))
    storage.write_bytes(storage.join(root, f"deletion_vector_{file_id}.bin"), bytes(body))
    return descriptors


def read(root: str, descriptor: Mapping, cache: dict[str, bytes] | None = None) -> np.ndarray:
    """Deleted row positions of one descriptor (file-based or inline); ``cache`` keeps the
    vector files read so far."""
    if descriptor["storageType"] == "i":
        data = z85_decode(descriptor["pathOrInlineDv"])[: descriptor["sizeInBytes"]]
        return deserialize(data)
    where = file_of(root, descriptor)
    if where is None:
        raise ValueError(f"deletion vector descriptor names no file: {dict(descriptor)}")
    cache = {} if cache is None else cache
    if where not in cache:
        cache[where] = storage.read_bytes(where)
    raw = cache[where]
    offset, size = int(descriptor.get("offset") or 1), int(descriptor["sizeInBytes"])
    data = raw[offset + 4 : offset + 4 + size]  # after the 4-byte size prefix
    (crc,) = struct.unpack_from(">I", raw, offset + 4 + size)
    if zlib.crc32(data) != crc:
        raise ValueError(f"deletion vector in {file_of(root, descriptor)} fails its checksum")
    return deserialize(data)
