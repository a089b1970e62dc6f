"""``import-pgn`` orchestration: read and split in this process, parse in worker processes,
write shards here in file order. Memory stays bounded whatever the file size: at most a few
chunks of games are in flight and a shard's worth of encoded games is queued."""

from __future__ import annotations

import bz2
import gzip
import lzma
import multiprocessing as mp
import os
import time
import zlib
from collections import Counter, deque
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from frugalzero.data.pgn import ChunkResult, RawGame, Skipped, import_chunk, split_games
from frugalzero.data.shards import ShardWriter, warn
from frugalzero.errors import UserError
from frugalzero.output import to_json
from frugalzero.runtime.cores import available_cores
from frugalzero.runtime.files import atomic_write_text

_OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}


# what a damaged compressed file raises part-way: a cut stream, bad data, not that format
_DAMAGED = (EOFError, OSError, lzma.LZMAError, zlib.error)


def _lines(path: Path, progress: list[int], damaged: list[dict[str, str]]) -> Iterator[str]:
    """Decoded lines of a (possibly compressed) PGN file; ``progress[0]`` counts bytes read
    from disk. Undecodable bytes become U+FFFD: they only ever occur in names and comments.
    A file that cannot be decompressed (cut short, or not in the format its name says) ends
    where the damage is: it is named in ``damaged`` and the games before it are kept."""
    opener = _OPENERS.get(path.suffix.lower())
    try:
        raw = path.open("rb")
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from None
    with raw:
        handle = opener(raw) if opener else raw
        try:
            for line in handle:
                progress[0] = raw.tell()
                yield line.decode("utf-8", errors="replace")
        except _DAMAGED as exc:
            reason = str(exc) or type(exc).__name__
            damaged.append({"file": str(path), "error": reason, "at_byte": str(raw.tell())})
            warn(f"{path}: damaged ({reason}); the games before the damage are kept")


def _chunks(files: list[Path], size: int, progress: list[int], damaged: list[dict[str, str]]):
    for path in files:
        chunk: list[RawGame] = []
        for game in split_games(_lines(path, progress, damaged)):
            chunk.append(game)
            if len(chunk) >= size:
                yield path.name, chunk
                chunk = []
        if chunk:
            yield path.name, chunk
        progress[1] += path.stat().st_size
        progress[0] = 0


def import_pgn(
    files: list[str | Path],
    out_dir: str | Path,
    min_elo: int = 0,
    workers: int = 0,
    chunk_games: int = 64,
    games_per_shard: int = 2000,
    show_progress: bool = True,
) -> dict[str, Any]:
    """Import PGN files into shards under ``out_dir``; returns the summary (see docs/data.md).
    The caller holds ``out_dir``'s lock."""
    paths = [Path(f) for f in files]
    for path in paths:
        if not path.is_file():
            raise UserError(f"{path}: no such PGN file")
    out = Path(out_dir)
    workers = workers or available_cores()
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    prefix = f"pgn-{stamp}-{os.getpid()}"
    total_bytes = sum(p.stat().st_size for p in paths)
    progress = [0, 0]  # bytes of the current file, bytes of finished files
    stats: Counter = Counter()
    reasons: Counter = Counter()
    skipped: list[Skipped] = []
    skipped_file = out / f"{prefix}-skipped.tsv"
    start = time.perf_counter()

    writer = ShardWriter(out, prefix, games_per_shard=games_per_shard)
    log = _SkipLog(skipped_file)

    def take(result: ChunkResult) -> None:
        for columns in result.columns:
            writer.add_encoded(columns)
        stats["games"] += result.games
        stats["imported"] += len(result.columns)
        stats["positions"] += result.positions
        for item in result.skipped:
            if item.reason == "min-elo":  # asked for, not a fault of the game
                stats["filtered"] += 1
                continue
            reasons[item.reason] += 1
            if len(skipped) < 20:
                skipped.append(item)
            log.write(item)

    bar = _progress(show_progress, total_bytes)
    damaged: list[dict[str, str]] = []
    chunks = _chunks(paths, chunk_games, progress, damaged)
    try:
        if workers == 1:
            for name, chunk in chunks:
                take(import_chunk((name, chunk, min_elo)))
                bar.update(progress[0] + progress[1], stats)
        else:
            with mp.get_context("spawn").Pool(workers) as pool:
                pending: deque = deque()
                for name, chunk in chunks:
                    pending.append(pool.apply_async(import_chunk, ((name, chunk, min_elo),)))
                    if len(pending) >= 2 * workers:
                        take(pending.popleft().get())
                        bar.update(progress[0] + progress[1], stats)
                while pending:
                    take(pending.popleft().get())
    finally:
        shards = writer.close()
        log.close()
        bar.close()
    elapsed = time.perf_counter() - start
    summary: dict[str, Any] = {
        "files": [str(p) for p in paths],
        "out": str(out),
        "games": stats["games"],
        "imported": stats["imported"],
        "positions": stats["positions"],
        "filtered": stats["filtered"],
        "skipped": sum(reasons.values()),
        "skipped_by_reason": dict(reasons.most_common()),
        "skipped_games": [s.to_json() for s in skipped],
        "skipped_list": str(skipped_file) if reasons else None,
        "damaged_files": damaged,
        "shards": len(shards),
        "shard_bytes": sum(p.stat().st_size for p in shards),
        "workers": workers,
        "elapsed_s": round(elapsed, 3),
        "games_per_s": round(stats["games"] / elapsed, 1) if elapsed > 0 else 0.0,
        "positions_per_s": round(stats["positions"] / elapsed, 1) if elapsed > 0 else 0.0,
    }
    summary["bytes_per_position"] = round(summary["shard_bytes"] / max(1, stats["positions"]), 2)
    atomic_write_text(out / f"{prefix}-import.json", to_json(summary, indent=1))
    return summary


class _SkipLog:
    """Every skipped game, one TSV line each (file, game, line, reason, detail), beside the
    shards; the file is created only when a game is skipped."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.handle = None

    def write(self, item: Skipped) -> None:
        if self.handle is None:
            self.handle = self.path.open("w", encoding="utf-8")
            self.handle.write("file\tgame\tline\treason\tdetail\n")
        detail = item.detail.replace("\t", " ").replace("\n", " ")
        self.handle.write(f"{item.file}\t{item.game}\t{item.line}\t{item.reason}\t{detail}\n")

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()


class _progress:
    """A rich progress bar on stderr (bytes read), or nothing."""

    def __init__(self, enabled: bool, total: int) -> None:
        from frugalzero.runtime.progress import progress_bar

        columns = ("bytes", "remaining", "{task.fields[games]} games")
        self.bar = progress_bar("[bold]import-pgn", *columns, transient=True, enabled=enabled)
        self.task = self.bar.add_task("import", total=total, games=0)
        self.bar.start()

    def update(self, done: int, stats: Counter) -> None:
        self.bar.update(self.task, completed=done, games=stats["games"])

    def close(self) -> None:
        self.bar.stop()
