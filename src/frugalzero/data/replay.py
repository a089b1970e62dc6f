"""Replay stored games into training samples: history frames, legal moves, dense targets.

Replaying costs one python-chess ``push`` and one frame per ply, and one legal-move listing
per trained position (~55 us, the main cost of loading). Positions recur (openings, book
starts), so legal moves are cached by position. Worker processes replay a shard's games and
send them back flat (``ReplayedGames``): a few arrays, not a pickled object per position.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import chess
import numpy as np

from frugalzero.chess.encoding import FRAME_WORDS, HISTORY, board_meta
from frugalzero.chess.history import GameHistory, position_key
from frugalzero.chess.moves import NUM_MOVES, legal_moves_and_indices, move_to_index
from frugalzero.data import codec
from frugalzero.data.shards import ShardError, game_skipped, read_columns, shard_skipped

NAN = float("nan")


class ReplayError(ValueError):
    """A stored game that does not replay (illegal move, policy on an illegal move)."""


@dataclass(slots=True)
class Sample:
    """One trainable position, compact: its game's frames are shared, targets stay sparse."""

    frames: np.ndarray  # (HISTORY - 1 + plies + 1, 13) uint64: the game's frames, padded
    row: int  # this position's frame is frames[row]; its history is rows row-7 .. row
    meta: tuple[int, ...]
    legal: np.ndarray  # policy indices of the legal moves (int16)
    policy_indices: np.ndarray  # int16 (often a view into the shard's arrays)
    policy_probs: np.ndarray  # float32
    z: float
    search_value: float
    expert_value: float
    expert_wdl: tuple[float, float, float]  # win/draw/loss probabilities, NaN where absent


class LegalCache:
    """Policy indices of legal moves by position; cleared when full (cheap and bounded)."""

    def __init__(self, size: int = 50_000) -> None:
        self.size = size
        self._map: dict[tuple, np.ndarray] = {}
        self.hits = 0
        self.misses = 0

    def get(self, board: chess.Board) -> np.ndarray:
        """Policy indices (int16: a sample holds ~35 of them) of ``board``'s legal moves."""
        if self.size <= 0:
            return legal_moves_and_indices(board)[1].astype(np.int16)
        key = position_key(board)
        found = self._map.get(key)
        if found is not None:
            self.hits += 1
            return found
        self.misses += 1
        if len(self._map) >= self.size:
            self._map.clear()
        found = self._map[key] = legal_moves_and_indices(board)[1].astype(np.int16)
        return found


_START = chess.Board()
NO_WDL = (NAN, NAN, NAN)


def replay_game(
    columns: codec.GameColumns,
    off: codec.Offsets,
    game: int,
    cache: LegalCache,
) -> list[Sample]:
    """The trainable positions of game ``game`` of ``columns``, in ply order."""
    a = columns.arrays
    header = columns.games[game]
    fen = header.get("f")
    try:
        board = chess.Board(fen) if fen else _START
    except ValueError as exc:
        raise ReplayError(f"bad start FEN ({exc})") from None
    history = GameHistory(board)
    board = history.board
    result = header.get("r")
    start, stop = int(off.ply[game]), int(off.ply[game + 1])
    table = codec.move_table()
    codes = a["moves"][start:stop].tolist()
    kinds = a["kinds"][start:stop].tolist()
    frames = [history.frames(1)[0]]
    pending: list[tuple] = []
    scratch = np.zeros(NUM_MOVES, dtype=bool)
    for i, (code, kinds_i) in enumerate(zip(codes, kinds)):
        move = table[code]
        kind = kinds_i & codec.KIND_MASK
        if kind == codec.NONE:
            if not board.is_legal(move):
                raise ReplayError(f"ply {i}: illegal move {move.uci()}")
        else:
            ply = start + i
            turn = board.turn
            legal = cache.get(board)
            indices, probs = codec.ply_policy(columns, off, ply, kind, move, turn)
            scratch[legal] = True
            ok = scratch[move_to_index(move, turn)] and scratch[indices].all()
            scratch[legal] = False
            if not ok:
                raise ReplayError(f"ply {i}: move or policy target not legal")
            z = NAN if result is None else (result if turn == chess.WHITE else -result)
            sv = float(a["search_value"][off.search[ply]]) if kinds_i & codec.HAS_SEARCH else NAN
            ev = float(a["expert_value"][off.expert[ply]]) if kinds_i & codec.HAS_EXPERT else NAN
            wdl = NO_WDL
            if kinds_i & codec.HAS_WDL:
                wdl = tuple(x / 1000.0 for x in codec.ply_wdl(a, off, ply))
            pending.append((i, board_meta(board), legal, indices, probs, z, sv, ev, wdl))
        history.push(move)
        frames.append(history.frames(1)[0])
    if not pending:
        return []
    padded = np.zeros((HISTORY - 1 + len(frames), FRAME_WORDS), dtype=np.uint64)
    padded[HISTORY - 1 :] = np.frombuffer(b"".join(frames), dtype="<u8").reshape(-1, FRAME_WORDS)
    return [
        Sample(padded, i + HISTORY - 1, meta, legal, idx, probs, float(z), sv, ev, wdl)
        for i, meta, legal, idx, probs, z, sv, ev, wdl in pending
    ]


def stack_history(samples: list[Sample]) -> np.ndarray:
    """(N, HISTORY, 13) uint64 frames, newest first, of the samples' positions."""
    out = np.empty((len(samples), HISTORY, FRAME_WORDS), dtype=np.uint64)
    for n, s in enumerate(samples):
        out[n] = s.frames[s.row - HISTORY + 1 : s.row + 1][::-1]
    return out


def sample_values(samples: list[Sample]) -> np.ndarray:
    """(N, 6) float32: z, search value, expert value, expert W, D, L of each sample."""
    return np.array(
        [(s.z, s.search_value, s.expert_value, *s.expert_wdl) for s in samples],
        dtype=np.float32,
    ).reshape(len(samples), 6)


def ragged(parts: list[np.ndarray], dtype: type) -> tuple[np.ndarray, np.ndarray]:
    """Arrays of different lengths as one flat ``dtype`` array and their lengths (int32)."""
    lengths = np.array([len(part) for part in parts], dtype=np.int32)
    flat = np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)
    return flat, lengths


def flat_targets(samples: list[Sample]) -> dict[str, np.ndarray]:
    """The samples' legal moves, policies and values as flat arrays with their lengths, under
    the names ``CompactBatch`` and ``ReplayedGames`` share."""
    legal, legal_len = ragged([s.legal for s in samples], np.int16)
    policy_index, policy_len = ragged([s.policy_indices for s in samples], np.int16)
    return {
        "legal": legal,
        "legal_len": legal_len,
        "policy_index": policy_index,
        "policy_prob": ragged([s.policy_probs for s in samples], np.float32)[0],
        "policy_len": policy_len,
        "values": sample_values(samples),
    }


def replay_shard_games(
    path: Path, games: list[int], cache: LegalCache
) -> tuple[list[tuple[int, list[Sample]]], list[str]]:
    """(game number, samples) of the games of ``path`` that replay, and what went wrong: one
    line per bad game, or one for a shard that cannot be read. The games not in the first
    list were skipped."""
    try:
        _, columns = read_columns(path)
    except ShardError as exc:
        return [], [shard_skipped(exc)]
    off = codec.offsets(columns)
    replayed, skipped = [], []
    for game in games:
        try:
            replayed.append((game, replay_game(columns, off, game, cache)))
        except ReplayError as exc:
            skipped.append(game_skipped(path, game, exc))
    return replayed, skipped


@dataclass(slots=True)
class ReplayedGames:
    """Some replayed games of one shard as flat arrays: what a worker process sends back.
    Pickling a ``Sample`` per position would cost the parent about as much as replaying."""

    games: list[int]  # game numbers, in order
    samples_per_game: np.ndarray  # int32
    frames: np.ndarray  # (F, 13) uint64: each game's padded frames, one game after another
    frames_per_game: np.ndarray  # int32
    rows: np.ndarray  # int32, per sample
    meta: np.ndarray  # (N, 7) int32
    messages: list[str]  # what did not replay: games, or the whole shard
    legal: np.ndarray  # int16, concatenated; legal_len says where each sample's ends
    legal_len: np.ndarray
    policy_index: np.ndarray  # int16, concatenated
    policy_prob: np.ndarray  # float32, concatenated
    policy_len: np.ndarray
    values: np.ndarray  # (N, 6) float32, see sample_values

    @classmethod
    def of(cls, replayed: list[tuple[int, list[Sample]]], messages: list[str]) -> ReplayedGames:
        """The flat form of ``replay_shard_games``'s answer."""
        samples = [s for _, game in replayed for s in game]
        no_frames = np.zeros((0, FRAME_WORDS), np.uint64)
        frames, frames_per_game = ragged(
            [game[0].frames if game else no_frames for _, game in replayed], np.uint64
        )
        return cls(
            games=[g for g, _ in replayed],
            samples_per_game=np.array([len(game) for _, game in replayed], np.int32),
            frames=frames.reshape(-1, FRAME_WORDS),
            frames_per_game=frames_per_game,
            rows=np.array([s.row for s in samples], np.int32),
            meta=np.array([s.meta for s in samples], np.int32).reshape(len(samples), 7),
            messages=messages,
            **flat_targets(samples),
        )

    def unpack(self) -> list[tuple[int, list[Sample]]]:
        """(game number, samples) again; the samples' arrays are views of these arrays."""

        def split(flat: np.ndarray, lengths: np.ndarray) -> list[np.ndarray]:
            return np.split(flat, np.cumsum(lengths)[:-1]) if len(lengths) else []

        frames = split(self.frames, self.frames_per_game)
        legal = split(self.legal, self.legal_len)
        indices = split(self.policy_index, self.policy_len)
        probs = split(self.policy_prob, self.policy_len)
        rows, values = self.rows.tolist(), self.values.tolist()
        meta = [tuple(m) for m in self.meta.tolist()]
        out, n = [], 0
        for game, count, game_frames in zip(self.games, self.samples_per_game.tolist(), frames):
            samples = []
            for j in range(n, n + count):
                z, sv, ev, w, d, loss = values[j]
                wdl = NO_WDL if w != w else (w, d, loss)
                targets = (legal[j], indices[j], probs[j], z, sv, ev, wdl)
                samples.append(Sample(game_frames, rows[j], meta[j], *targets))
            out.append((game, samples))
            n += count
        return out


def replay_flat(task: tuple[str, list[int], int]) -> ReplayedGames:
    """A worker process's job: games ``task[1]`` of shard ``task[0]``, legal cache ``task[2]``."""
    path, games, legal_cache = task
    return ReplayedGames.of(*replay_shard_games(Path(path), games, LegalCache(legal_cache)))
