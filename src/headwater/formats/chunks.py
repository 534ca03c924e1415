"""Text files as chunks of UTF-8 bytes that end at a record separator, and the loop that hands
each chunk to Arrow first and to a per-row reader only where Arrow cannot take it.

Chunks bound memory (a file is never read whole unless a record may span it: multi-line JSON
and CSV) and keep Arrow's threads busy. Decompression (by extension), transcoding from the
``encoding`` option and a leading byte-order mark are dealt with here, so no later step
worries about bytes; their errors become :class:`~headwater.formats.errors.CorruptFileError`.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterable, Iterator

import pyarrow as pa

from headwater import storage
from headwater.formats.errors import CorruptFileError

__all__ = ["CHUNK", "PIECE", "byte_chunks", "drive"]

CHUNK = 16 << 20  # bytes handed to Arrow at once: enough for its threads, bounded memory
PIECE = 256 << 10  # a chunk Arrow rejects is retried in pieces this big before going per row
_CODECS = {"gz": "gzip", "gzip": "gzip", "bz2": "bz2", "zst": "zstd", "zstd": "zstd"}
_HINT = "(set the encoding option, e.g. 'latin-1')"

Fast = Callable[[bytes], "list[pa.Table] | None"]
Slow = Callable[[bytes, int], pa.Table]


def _utf8(encoding: str) -> bool:
    return encoding.lower().replace("_", "-") in ("utf-8", "utf8")


def byte_chunks(
    path: str, encoding: str = "utf-8", whole: bool = False, sep: bytes = b"\n"
) -> Iterator[bytes]:
    """The decompressed file as chunks of valid UTF-8, each ending with ``sep`` (the last may
    not); ``whole``: one chunk."""
    decoder = None if _utf8(encoding) else codecs.getincrementaldecoder(encoding)()
    carry, first, line, parts = b"", True, 1, []

    def checked(data: bytes) -> bytes:  # Arrow's JSON reader does not check UTF-8 itself
        nonlocal line
        if decoder is None and not data.isascii():
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as e:
                bad_line = line + data.count(b"\n", 0, e.start)
                raise CorruptFileError(path, f"line {bad_line} is not valid UTF-8 {_HINT}") from e
        line += data.count(b"\n")
        return data

    fs, inner = storage.filesystem(path)
    codec = _CODECS.get(path.rsplit(".", 1)[-1].lower())
    try:
        with fs.open_input_stream(inner, compression=codec) as stream:
            while True:
                raw = stream.read(CHUNK)
                block = raw if decoder is None else decoder.decode(raw, final=not raw).encode()
                if first and block.startswith(codecs.BOM_UTF8):
                    block = block[len(codecs.BOM_UTF8) :]
                first = False
                if not raw:
                    break
                if whole:
                    parts.append(block)
                    continue
                data = carry + block
                cut = data.rfind(sep) + len(sep) if sep in data else 0
                carry = data[cut:]
                if cut:
                    yield checked(data[:cut])
    except FileNotFoundError:
        raise
    except UnicodeDecodeError as e:
        raise CorruptFileError(path, f"not valid {encoding} text ({e.reason})") from e
    except (OSError, pa.ArrowException) as e:
        raise CorruptFileError(path, f"cannot read or decompress it: {e}") from e
    carry = b"".join(parts) if whole else carry
    if carry:
        yield checked(carry)


def drive(
    chunks: Iterable[bytes], fast: Fast, slow: Slow, split: bool = True, sep: bytes = b"\n"
) -> Iterator[pa.Table]:
    """Arrow (``fast``) takes each chunk; a chunk it rejects is retried in pieces (``split``:
    records never span ``sep``), and only the pieces it still rejects go through the per-row
    ``slow(piece, number of its first record)``."""
    line = 1
    for chunk in chunks:
        tables = fast(chunk)
        if tables is not None:
            yield from tables
        elif not split or len(chunk) <= PIECE:
            yield slow(chunk, line)
        else:
            start, piece_line = 0, line
            while start < len(chunk):
                found = chunk.find(sep, start + PIECE)
                end = found + len(sep) if found >= 0 else len(chunk)
                piece, start = chunk[start:end], end
                tables = fast(piece)
                yield from [slow(piece, piece_line)] if tables is None else tables
                piece_line += piece.count(sep)
        line += chunk.count(sep)
