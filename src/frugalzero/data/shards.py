"""Shard files: compressed, checksummed, written atomically, independent of each other.

A shard is one file of whole games (``*.fzs``)::

    b"FZSHARD1"  u32 header length  header (JSON)  payload (compressed columns)  SHA-256

The header says what is inside (games, positions, methods, creation time, codec, column
layout), so a replay window can be chosen without decompressing anything; the SHA-256 over
everything before it catches a flipped byte or a cut-off file. Shards are written to a hidden
temporary name and then linked to their final name, so a reader sees a whole shard or nothing,
and a shard is never overwritten: any number of writers may share a directory as long as
their prefixes differ.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import struct
import sys
import time
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from frugalzero.data import codec
from frugalzero.data.records import GameRecord
from frugalzero.errors import UserError
from frugalzero.runtime.files import atomic_write_bytes

MAGIC = b"FZSHARD1"
SUFFIX = ".fzs"
FORMAT = "frugalzero-shard"
VERSION = 1
CODECS = ("zlib", "lzma")
_LEN = struct.Struct("<I")
_DIGEST = 32


class ShardError(UserError):
    """A shard that cannot be used; the message names the file and the reason."""


@dataclass(frozen=True)
class ShardInfo:
    """What a shard's header says about it."""

    path: Path
    games: int
    positions: int
    plies: int
    created_ns: int
    methods: dict[str, int]
    size: int

    @property
    def order_key(self) -> tuple[int, str]:
        """Oldest first: creation time, then name (a stable order across machines)."""
        return (self.created_ns, self.path.name)


def _compress(data: bytes, name: str, level: int) -> bytes:
    if name == "zlib":
        return zlib.compress(data, level)
    if name == "lzma":
        return lzma.compress(data, preset=level)
    raise ValueError(f"unknown codec {name!r}; choose from {CODECS}")


def _decompress(data: bytes, name: str) -> bytes:
    if name == "zlib":
        return zlib.decompress(data)
    if name == "lzma":
        return lzma.decompress(data)
    raise ValueError(f"unknown codec {name!r}")


def shard_bytes(columns: codec.GameColumns, compression: str = "zlib", level: int = 9) -> bytes:
    """The complete file content of a shard holding ``columns``."""
    raw, layout = codec.to_bytes(columns)
    payload = _compress(raw, compression, level)
    methods: dict[str, int] = {}
    for game in columns.games:
        methods[game["m"]] = methods.get(game["m"], 0) + 1
    header = {
        "format": FORMAT,
        "version": VERSION,
        "games": len(columns.games),
        "positions": columns.positions,
        "plies": len(columns.arrays["moves"]),
        "created_ns": time.time_ns(),
        "methods": methods,
        "codec": compression,
        "raw_bytes": len(raw),
        "payload_bytes": len(payload),
        "layout": layout,
    }
    head = json.dumps(header, separators=(",", ":")).encode()
    body = MAGIC + _LEN.pack(len(head)) + head + payload
    return body + hashlib.sha256(body).digest()


def _parse_header(path: Path, data: bytes, whole: bool) -> dict:
    if len(data) < len(MAGIC) + _LEN.size or data[: len(MAGIC)] != MAGIC:
        raise ShardError(f"{path}: not a frugalzero shard (bad magic)")
    (size,) = _LEN.unpack_from(data, len(MAGIC))
    start = len(MAGIC) + _LEN.size
    if start + size > len(data):
        raise ShardError(f"{path}: truncated shard (header cut off)")
    try:
        header = json.loads(data[start : start + size])
        if header["format"] != FORMAT:
            raise ValueError
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise ShardError(f"{path}: damaged shard (unreadable header)") from None
    _check_header(path, header)
    payload = header["payload_bytes"]
    header["_payload_start"] = start + size
    if whole and start + size + payload + _DIGEST != len(data):
        raise ShardError(
            f"{path}: truncated or padded shard ({len(data)} bytes, header implies "
            f"{start + size + payload + _DIGEST})"
        )
    return header


# the header's fields and their types: every reader relies on them
_COUNTS = ("games", "positions", "plies", "created_ns", "raw_bytes", "payload_bytes")


def _check_header(path: Path, header: dict) -> None:
    """A header field that is missing or of the wrong type names itself (a header that
    parses as JSON may still lack ``version`` or hold ``methods`` as a list)."""
    if "version" not in header:
        raise ShardError(f"{path}: damaged shard (header has no version)")
    if header["version"] != VERSION:
        raise ShardError(f"{path}: shard format version {header['version']}, expected {VERSION}")
    for key in _COUNTS:
        value = header.get(key)
        if type(value) is not int or value < 0:
            raise ShardError(f"{path}: damaged shard (header field {key} is {value!r:.60})")
    methods = header.get("methods")
    if not isinstance(methods, dict) or not all(
        isinstance(k, str) and type(v) is int for k, v in methods.items()
    ):
        raise ShardError(f"{path}: damaged shard (header field methods is {methods!r:.60})")
    if header.get("codec") not in CODECS or not isinstance(header.get("layout"), dict):
        raise ShardError(f"{path}: damaged shard (header fields codec and layout)")


def _verify(path: Path, data: bytes) -> dict:
    header = _parse_header(path, data, whole=True)
    if hashlib.sha256(data[:-_DIGEST]).digest() != data[-_DIGEST:]:
        raise ShardError(f"{path}: checksum mismatch (damaged shard)")
    return header


def _info(path: Path, header: dict, size: int) -> ShardInfo:
    return ShardInfo(
        path=path,
        games=int(header["games"]),
        positions=int(header["positions"]),
        plies=int(header["plies"]),
        created_ns=int(header["created_ns"]),
        methods={str(k): int(v) for k, v in header["methods"].items()},
        size=size,
    )


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ShardError(f"{path}: cannot read ({exc.strerror})") from None


def read_columns(path: str | Path) -> tuple[ShardInfo, codec.GameColumns]:
    """A shard's header and decoded columns, after checking its checksum."""
    path = Path(path)
    data = _read(path)
    header = _verify(path, data)
    start = header["_payload_start"]
    try:
        raw = _decompress(data[start : start + header["payload_bytes"]], header["codec"])
        columns = codec.from_bytes(raw, header["layout"])
    except (ValueError, KeyError, TypeError, zlib.error, lzma.LZMAError) as exc:
        raise ShardError(f"{path}: damaged shard ({exc})") from None
    return _info(path, header, len(data)), columns


def read_shard(path: str | Path) -> list[GameRecord]:
    """Every game of a shard. A damaged shard raises ShardError naming the file."""
    return codec.decode_games(read_columns(path)[1])


def shard_info(path: str | Path, verify: bool = True) -> ShardInfo:
    """A shard's header; with ``verify`` the whole file's checksum is checked too."""
    path = Path(path)
    if verify:
        data = _read(path)
        return _info(path, _verify(path, data), len(data))
    try:
        with path.open("rb") as handle:
            head = handle.read(len(MAGIC) + _LEN.size)
            if len(head) == len(MAGIC) + _LEN.size and head[: len(MAGIC)] == MAGIC:
                head += handle.read(_LEN.unpack_from(head, len(MAGIC))[0])
        size = path.stat().st_size
    except OSError as exc:
        raise ShardError(f"{path}: cannot read ({exc.strerror})") from None
    return _info(path, _parse_header(path, head, whole=False), size)


def warn(message: str) -> None:
    """A skipped item: one line on stderr, and the work goes on."""
    print(f"frugalzero: warning: {message}", file=sys.stderr, flush=True)


def shard_skipped(exc: Exception) -> str:
    """The warning for a shard that cannot be read: the rest of the data goes on."""
    return f"skipping shard: {exc}"


def game_skipped(path: str | Path, game: int, exc: Exception) -> str:
    """The warning for one game of a shard that does not replay."""
    return f"{path}: game {game} skipped: {exc}"


def shard_paths(sources: Iterable[str | Path]) -> list[Path]:
    """Shard files named directly or found (recursively) in directories; sorted, unique.

    Hidden files are skipped: they are shards still being written. A link whose file is gone
    is listed: a reader names it as a shard it cannot read, rather than never seeing it.
    """
    found: set[Path] = set()
    for source in sources:
        source = Path(source)
        if source.is_dir():
            found.update(
                p
                for p in source.rglob(f"*{SUFFIX}")
                if not p.name.startswith(".") and (p.is_file() or p.is_symlink())
            )
        elif source.is_file():
            found.add(source)
        else:
            raise UserError(f"{source}: no such shard file or directory")
    return sorted(found)


_SCAN_CACHE: dict[tuple[str, int, int], ShardInfo] = {}


def scan_shards(sources: Iterable[str | Path], verify: bool = True) -> list[ShardInfo]:
    """Every readable shard under ``sources``, oldest first; a damaged one is skipped with a
    warning naming it. Results are remembered per (path, size, mtime), so rescanning a growing
    directory only reads the new shards."""
    infos = []
    for path in shard_paths(sources):
        try:
            stat = path.stat()
            key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
            info = _SCAN_CACHE.get(key) if verify else None
            if info is None:
                info = shard_info(path, verify=verify)
                if verify:
                    _SCAN_CACHE[key] = info
            infos.append(info)
        except (ShardError, OSError) as exc:
            warn(shard_skipped(exc))
    return sorted(infos, key=lambda i: i.order_key)


def write_shard(
    path: str | Path, records: Sequence[GameRecord], compression: str = "zlib", level: int = 9
) -> Path:
    """Write ``records`` as one shard at ``path`` (atomically; replaces an existing file)."""
    path = Path(path)
    columns = codec.concat([codec.encode_game(r) for r in records])
    atomic_write_bytes(path, shard_bytes(columns, compression, level))
    return path


class ShardWriter:
    """Collects games and writes them as shards ``PREFIX-NNNNNN.fzs`` in ``out_dir``.

    A shard is written when it reaches ``games_per_shard`` games or ``bytes_per_shard``
    uncompressed column bytes, on ``flush()``, and on ``close()`` (also when leaving a ``with``
    block, even on an exception: finished games are never lost). Use a prefix that no other
    writer in the directory uses (include the worker number).
    """

    def __init__(
        self,
        out_dir: str | Path,
        prefix: str,
        games_per_shard: int = 500,
        bytes_per_shard: int = 8 << 20,
        compression: str = "zlib",
        level: int = 9,
    ) -> None:
        if compression not in CODECS:
            raise UserError(f"compression must be one of {CODECS}, not {compression!r}")
        if not prefix or "/" in prefix or prefix.startswith("."):
            raise UserError(f"bad shard prefix {prefix!r}")
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.prefix = prefix
        self.games_per_shard = games_per_shard
        self.bytes_per_shard = bytes_per_shard
        self.compression = compression
        self.level = level
        self.paths: list[Path] = []
        self.games = 0
        self.positions = 0
        self._pending: list[codec.GameColumns] = []
        self._pending_bytes = 0
        self._seq = 0
        self._closed = False

    def add(self, record: GameRecord) -> None:
        """Queue one finished game (checked now: a bad record raises RecordError at once)."""
        if self._closed:
            raise ValueError("ShardWriter is closed")
        self.add_encoded(codec.encode_game(record))

    def add_encoded(self, columns: codec.GameColumns) -> None:
        """Queue one game already encoded by ``codec.encode_game`` (e.g. in a worker process)."""
        if self._closed:
            raise ValueError("ShardWriter is closed")
        self._pending.append(columns)
        self._pending_bytes += sum(a.nbytes for a in columns.arrays.values()) + 64
        self.games += 1
        self.positions += columns.positions
        if (
            len(self._pending) >= self.games_per_shard
            or self._pending_bytes >= self.bytes_per_shard
        ):
            self.flush()

    def flush(self) -> Path | None:
        """Write the queued games as a shard now (None if there are none)."""
        if not self._pending:
            return None
        data = shard_bytes(codec.concat(self._pending), self.compression, self.level)
        while True:
            name = f"{self.prefix}-{self._seq:06d}{SUFFIX}"
            self._seq += 1
            if (self.out_dir / name).exists():
                continue
            try:
                path = atomic_write_bytes(self.out_dir / name, data, replace=False)
                break
            except FileExistsError:
                continue
        self._pending, self._pending_bytes = [], 0
        self.paths.append(path)
        return path

    def close(self) -> list[Path]:
        """Write what is queued; every shard written by this writer, in order."""
        if not self._closed:
            self.flush()
            self._closed = True
        return list(self.paths)

    def __enter__(self) -> ShardWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
