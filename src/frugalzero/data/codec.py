"""Games <-> compact columns: how a shard stores records (pure functions, no files).

A shard holds games, not positions. Its columns are flat arrays over all games, one value per
game, per ply or per policy entry, so that equal kinds of bytes sit together and compress well:

* ``plies`` (u16 per game) and ``games`` (JSON: start FEN when not the standard one, method,
  net id, game id, extra, result);
* ``moves`` (u16 per ply: from | to << 6 | promotion << 12; no board needed to decode);
* ``kinds`` (u8 per ply): the policy-target kind in the low 3 bits, bit 3 = has a search
  value, bit 4 = has an expert value, bit 5 = has the expert's win/draw/loss estimate;
* policy entries: ``pol_n`` (u8, kinds COUNTS and FLOATS), ``pol_total`` (u16, COUNTS),
  ``pol_index`` (u16 policy index), ``pol_count`` (u16), ``pol_ulp`` (i8, COUNTS: see
  below), ``pol_prob`` (f32, FLOATS);
* ``search_value`` and ``expert_value`` (f32, only where present); ``expert_wdl`` (u16, two
  per ply where present: win and loss per mille, the draw is the rest of 1000).

Policy targets are stored exactly. A one-hot target on the played move costs nothing beyond
its kind byte (PGN, Stockfish games). Visit distributions are stored as integer counts over a
common denominator, found from the probabilities themselves (``exact_counts``), plus each
probability's distance in float32 steps from ``float32(count / total)`` (zero unless the
producer normalised differently, e.g. twice): together they give back the very same float32
values. Anything else falls back to raw float32. Values are
kept as float32, the precision training uses.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from fractions import Fraction

import chess
import numpy as np

from frugalzero.chess.moves import NUM_MOVES, move_to_index
from frugalzero.data.records import METHODS, GameRecord, PlyTarget

# policy-target kinds (low 3 bits of a ply's kind byte)
NONE, PLAYED, COUNTS, OTHER, FLOATS = 0, 1, 2, 3, 4
HAS_SEARCH, HAS_EXPERT, HAS_WDL = 8, 16, 32
KIND_MASK = 7

MAX_DENOMINATOR = 2048  # visit totals up to this are recognised exactly (see exact_counts)
MAX_ULPS = 8  # renormalising costs a few float32 steps; arbitrary floats land further off
MAX_PLIES = 65535

_PROMO_CODE = {None: 0, chess.KNIGHT: 1, chess.BISHOP: 2, chess.ROOK: 3, chess.QUEEN: 4}
_PROMO_PIECE = (None, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN)

U16_COLUMNS = ("plies", "moves", "pol_total", "pol_index", "pol_count", "expert_wdl")
U8_COLUMNS = ("kinds", "pol_n")
I8_COLUMNS = ("pol_ulp",)
F32_COLUMNS = ("pol_prob", "search_value", "expert_value")
ARRAY_COLUMNS = U16_COLUMNS + U8_COLUMNS + I8_COLUMNS + F32_COLUMNS
DTYPES = {
    **{c: np.dtype("<u2") for c in U16_COLUMNS},
    **{c: np.dtype("u1") for c in U8_COLUMNS},
    **{c: np.dtype("i1") for c in I8_COLUMNS},
    **{c: np.dtype("<f4") for c in F32_COLUMNS},
}


class RecordError(ValueError):
    """A record that cannot be stored (the message says which field and why)."""


def move_code(move: chess.Move) -> int:
    """A move in 15 bits: from-square, to-square, promotion piece."""
    return move.from_square | move.to_square << 6 | _PROMO_CODE[move.promotion] << 12


_MOVE_TABLE: list[chess.Move] | None = None


def move_table() -> list[chess.Move]:
    """code -> chess.Move for every code (built once; decoding is then a list lookup)."""
    global _MOVE_TABLE
    if _MOVE_TABLE is None:
        _MOVE_TABLE = [
            chess.Move(code & 63, (code >> 6) & 63, _PROMO_PIECE[min(code >> 12, 4)])
            for code in range(1 << 15)
        ]
    return _MOVE_TABLE


def exact_counts(probs: np.ndarray) -> tuple[int, np.ndarray, np.ndarray] | None:
    """(total, counts, ulps) that give back ``probs`` exactly, or None.

    A visit distribution is counts / visits. Every float32 of the form c / n with n <= 2048 is
    closer to c / n than to any other fraction with such a denominator (their spacing,
    1 / 2048**2, exceeds float32 rounding by far), so ``limit_denominator`` recovers each one;
    the total is the least common multiple of the denominators. ``ulps`` is how many float32
    steps each probability lies from ``float32(count / total)`` (0 when the producer divided
    once, small when it normalised again); ``counts_to_probs`` inverts this exactly.
    """
    total = 1
    for value in np.unique(probs):
        if not 0.0 <= value <= 1.0:
            return None
        den = Fraction(float(value)).limit_denominator(MAX_DENOMINATOR).denominator
        total = total * den // math.gcd(total, den)
        if total > 65535:
            return None
    counts = np.rint(probs.astype(np.float64) * total).astype(np.uint16)
    base = (counts / float(total)).astype(np.float32)
    ulps = probs.view(np.int32).astype(np.int64) - base.view(np.int32)
    if np.abs(ulps).max(initial=0) > MAX_ULPS:
        return None
    return total, counts, ulps.astype(np.int8)


def counts_to_probs(counts: np.ndarray, totals: np.ndarray, ulps: np.ndarray) -> np.ndarray:
    """float32 probabilities from counts, their totals (one per count) and ulp corrections."""
    base = (counts / totals.astype(np.float64)).astype(np.float32)
    return (base.view(np.int32) + ulps.astype(np.int32)).view(np.float32)


@dataclass
class GameColumns:
    """The encoded columns of some games (arrays as in the module docstring, plus ``games``)."""

    arrays: dict[str, np.ndarray]
    games: list[dict]
    _policy: tuple | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def positions(self) -> int:
        return int(np.count_nonzero(self.arrays["kinds"] & KIND_MASK))


def _game_header(record: GameRecord) -> dict:
    header: dict = {"m": record.method}
    if record.start_fen != chess.STARTING_FEN:
        header["f"] = record.start_fen
    if record.net_id:
        header["n"] = record.net_id
    if record.game_id:
        header["g"] = record.game_id
    if record.extra:
        header["x"] = {str(k): str(v) for k, v in record.extra.items()}
    if record.result is not None:
        header["r"] = record.result
    return header


def encode_game(record: GameRecord) -> GameColumns:
    """One game's columns; raises RecordError naming the game and field when it cannot."""
    where = f"game {record.game_id or '?'}"
    if record.method not in METHODS:
        raise RecordError(f"{where}: method {record.method!r} is not one of {METHODS}")
    if record.result not in (None, 1, 0, -1):
        raise RecordError(f"{where}: result {record.result!r} is not 1, 0, -1 or None")
    if len(record.moves) > MAX_PLIES:
        raise RecordError(f"{where}: {len(record.moves)} moves, at most {MAX_PLIES}")
    try:
        board = chess.Board(record.start_fen)
    except ValueError as exc:
        raise RecordError(f"{where}: bad start_fen ({exc})") from None
    turn = board.turn
    moves, kinds = [], []
    pol_n, pol_total, pol_index, pol_count, pol_ulp, pol_prob = [], [], [], [], [], []
    search, expert, wdl = [], [], []
    for ply, (uci, target) in enumerate(zip(record.moves, record.targets)):
        try:
            move = chess.Move.from_uci(uci)
            if not move:
                raise ValueError("null move")
            played = move_to_index(move, turn)
        except ValueError as exc:
            raise RecordError(f"{where}: ply {ply}: bad move {uci!r} ({exc})") from None
        moves.append(move_code(move))
        turn = not turn
        if target is None:
            kinds.append(NONE)
            continue
        kind = _encode_policy(
            target, played, pol_n, pol_total, pol_index, pol_count, pol_ulp, pol_prob
        )
        if kind is None:
            raise RecordError(f"{where}: ply {ply}: bad policy target")
        if target.search_value is not None:
            kind |= HAS_SEARCH
            search.append(_value(target.search_value, where, ply, "search_value"))
        if target.expert_value is not None:
            kind |= HAS_EXPERT
            expert.append(_value(target.expert_value, where, ply, "expert_value"))
        if target.expert_wdl is not None:
            kind |= HAS_WDL
            wdl.extend(_wdl(target.expert_wdl, where, ply))
        kinds.append(kind)
    arrays = {
        "plies": [len(moves)],
        "moves": moves,
        "kinds": kinds,
        "pol_n": pol_n,
        "pol_total": pol_total,
        "pol_index": pol_index,
        "pol_count": pol_count,
        "pol_ulp": pol_ulp,
        "pol_prob": pol_prob,
        "search_value": search,
        "expert_value": expert,
        "expert_wdl": wdl,
    }
    return GameColumns(
        {k: np.asarray(v, dtype=DTYPES[k]) for k, v in arrays.items()}, [_game_header(record)]
    )


def _value(value: float, where: str, ply: int, name: str) -> float:
    if not -1.0 <= value <= 1.0:  # also refuses NaN
        raise RecordError(f"{where}: ply {ply}: {name} {value!r} is outside [-1, 1]")
    return value


def _wdl(wdl: tuple[int, int, int], where: str, ply: int) -> tuple[int, int]:
    """(win, loss) per mille of a win/draw/loss triple that sums to 1000."""
    try:
        win, draw, loss = (int(x) for x in wdl)
    except (TypeError, ValueError):
        raise RecordError(f"{where}: ply {ply}: expert_wdl {wdl!r} is not three integers") from None
    if min(win, draw, loss) < 0 or win + draw + loss != 1000:
        raise RecordError(f"{where}: ply {ply}: expert_wdl {wdl!r} does not sum to 1000")
    return win, loss


def _encode_policy(
    target: PlyTarget, played, pol_n, pol_total, pol_index, pol_count, pol_ulp, pol_prob
):
    if len(target.policy_indices) == 1 and len(target.policy_probs) == 1:  # fast path: one-hot
        index = int(target.policy_indices[0])
        if float(target.policy_probs[0]) == 1.0 and 0 <= index < NUM_MOVES:
            if index == played:
                return PLAYED
            pol_index.append(index)
            return OTHER
    indices = np.asarray(target.policy_indices).reshape(-1)
    probs = np.ascontiguousarray(target.policy_probs, dtype=np.float32).reshape(-1)
    n = len(indices)
    if n == 0 or n != len(probs) or n > 255:
        return None
    if indices.min() < 0 or indices.max() >= NUM_MOVES or not np.isfinite(probs).all():
        return None
    if probs.min() < 0 or abs(float(probs.sum(dtype=np.float64)) - 1.0) > 1e-3:
        return None
    if n == 1 and probs[0] == 1.0:
        if int(indices[0]) == played:
            return PLAYED
        pol_index.append(int(indices[0]))
        return OTHER
    pol_n.append(n)
    pol_index.extend(indices.tolist())
    exact = exact_counts(probs)
    if exact is None:
        pol_prob.extend(probs.tolist())
        return FLOATS
    pol_total.append(exact[0])
    pol_count.extend(exact[1].tolist())
    pol_ulp.extend(exact[2].tolist())
    return COUNTS


def concat(parts: list[GameColumns]) -> GameColumns:
    """Columns of many games, in order."""
    arrays = {
        name: np.concatenate([p.arrays[name] for p in parts]) if parts else np.zeros(0, dtype)
        for name, dtype in DTYPES.items()
    }
    return GameColumns(arrays, [g for p in parts for g in p.games])


def to_bytes(columns: GameColumns) -> tuple[bytes, dict[str, list[int]]]:
    """The columns laid end to end, and where each one lies (name -> [offset, length]).

    Two-byte columns are stored low bytes first, then high bytes: the high bytes of small
    numbers are mostly equal, and apart they compress far better.
    """
    chunks, layout, offset = [], {}, 0
    games = json.dumps(columns.games, separators=(",", ":")).encode()
    for name in ("games", *ARRAY_COLUMNS):
        if name == "games":
            data = games
        else:
            array = columns.arrays[name]
            if array.dtype.itemsize > 1:
                data = array.view(np.uint8).reshape(-1, array.dtype.itemsize).T.tobytes()
            else:
                data = array.tobytes()
        layout[name] = [offset, len(data)]
        chunks.append(data)
        offset += len(data)
    return b"".join(chunks), layout


def from_bytes(data: bytes, layout: dict[str, list[int]]) -> GameColumns:
    """Inverse of ``to_bytes``; raises ValueError on any inconsistency."""
    arrays = {}
    for name, dtype in DTYPES.items():
        if name == "pol_ulp" and name not in layout:  # shards written before it existed
            layout = {**layout, name: [0, 0]}
            arrays[name] = np.zeros(layout["pol_count"][1] // 2, dtype=dtype)
            continue
        if name == "expert_wdl" and name not in layout:  # ... and before this one
            arrays[name] = np.zeros(0, dtype=dtype)
            continue
        offset, length = layout[name]
        raw = np.frombuffer(data, dtype=np.uint8, count=length, offset=offset)
        if length % dtype.itemsize:
            raise ValueError(f"column {name} has {length} bytes")
        if dtype.itemsize > 1:
            raw = raw.reshape(dtype.itemsize, -1).T.copy()
        arrays[name] = raw.view(dtype).reshape(-1)
    offset, length = layout["games"]
    games = json.loads(data[offset : offset + length])
    columns = GameColumns(arrays, games)
    check(columns)
    return columns


@dataclass
class Offsets:
    """Where each game's and each ply's data starts in the columns (cumulative counts)."""

    ply: np.ndarray  # (games + 1,) first ply of each game in ``moves``/``kinds``
    index: np.ndarray  # (plies + 1,) first entry of each ply in ``pol_index``
    count: np.ndarray  # (plies + 1,) in ``pol_count``
    prob: np.ndarray  # (plies + 1,) in ``pol_prob``
    total: np.ndarray  # (plies + 1,) in ``pol_total``
    search: np.ndarray  # (plies + 1,) in ``search_value``
    expert: np.ndarray  # (plies + 1,) in ``expert_value``
    wdl: np.ndarray  # (plies + 1,) in ``expert_wdl`` (two entries a ply)


def _cumsum0(values: np.ndarray) -> np.ndarray:
    out = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(values, out=out[1:])
    return out


def offsets(columns: GameColumns) -> Offsets:
    """Cumulative positions of every game and ply in the columns (vectorised)."""
    a = columns.arrays
    kinds = a["kinds"]
    kind = kinds & KIND_MASK
    with_n = (kind == COUNTS) | (kind == FLOATS)
    n = np.zeros(len(kinds), dtype=np.int64)
    n[with_n] = a["pol_n"]
    entries = n + (kind == OTHER)
    return Offsets(
        ply=_cumsum0(a["plies"]),
        index=_cumsum0(entries),
        count=_cumsum0(np.where(kind == COUNTS, n, 0)),
        prob=_cumsum0(np.where(kind == FLOATS, n, 0)),
        total=_cumsum0(kind == COUNTS),
        search=_cumsum0((kinds & HAS_SEARCH) > 0),
        expert=_cumsum0((kinds & HAS_EXPERT) > 0),
        wdl=2 * _cumsum0((kinds & HAS_WDL) > 0),
    )


def check(columns: GameColumns) -> None:
    """Column lengths agree with each other (a decoder never reads past an array)."""
    a = columns.arrays
    if len(a["plies"]) != len(columns.games):
        raise ValueError("plies and games differ in length")
    if int(a["plies"].sum()) != len(a["moves"]) or len(a["moves"]) != len(a["kinds"]):
        raise ValueError("ply columns differ in length")
    kind = a["kinds"] & KIND_MASK
    if kind.max(initial=0) > FLOATS:
        raise ValueError("unknown policy kind")
    if np.count_nonzero((kind == COUNTS) | (kind == FLOATS)) != len(a["pol_n"]):
        raise ValueError("pol_n length")
    off = offsets(columns)
    expected = {
        "pol_index": off.index[-1],
        "pol_count": off.count[-1],
        "pol_ulp": off.count[-1],
        "pol_prob": off.prob[-1],
        "pol_total": off.total[-1],
        "search_value": off.search[-1],
        "expert_value": off.expert[-1],
        "expert_wdl": off.wdl[-1],
    }
    for name, length in expected.items():
        if len(a[name]) != length:
            raise ValueError(f"column {name} has {len(a[name])} entries, expected {length}")
    if len(a["pol_index"]) and a["pol_index"].max() >= NUM_MOVES:
        raise ValueError("policy index out of range")
    if len(a["pol_total"]) and a["pol_total"].min() == 0:
        raise ValueError("zero visit total")


def decode_games(columns: GameColumns) -> list[GameRecord]:
    """Every game back as a GameRecord (policy indices of played moves need the side to move,
    which alternates from the start position)."""
    a, off = columns.arrays, offsets(columns)
    table = move_table()
    kinds_all = a["kinds"].tolist()
    records = []
    for g, header in enumerate(columns.games):
        fen = header.get("f", chess.STARTING_FEN)
        turn = chess.Board(fen).turn if "f" in header else chess.WHITE
        start, stop = int(off.ply[g]), int(off.ply[g + 1])
        moves = [table[c] for c in a["moves"][start:stop].tolist()]
        targets: list[PlyTarget | None] = []
        for ply in range(start, stop):
            kinds = kinds_all[ply]
            kind = kinds & KIND_MASK
            if kind == NONE:
                targets.append(None)
            else:
                indices, probs = ply_policy(columns, off, ply, kind, moves[ply - start], turn)
                indices, probs = indices.astype(np.int64), probs.copy()
                targets.append(
                    PlyTarget(
                        indices,
                        probs,
                        float(a["search_value"][off.search[ply]]) if kinds & HAS_SEARCH else None,
                        float(a["expert_value"][off.expert[ply]]) if kinds & HAS_EXPERT else None,
                        ply_wdl(a, off, ply) if kinds & HAS_WDL else None,
                    )
                )
            turn = not turn
        records.append(
            GameRecord(
                start_fen=fen,
                moves=[m.uci() for m in moves],
                targets=targets,
                result=header.get("r"),
                method=header["m"],
                net_id=header.get("n", ""),
                game_id=header.get("g", ""),
                extra=dict(header.get("x", {})),
            )
        )
    return records


def ply_wdl(arrays: dict[str, np.ndarray], off: Offsets, ply: int) -> tuple[int, int, int]:
    """The expert's (win, draw, loss) per mille at a ply that has one."""
    win, loss = arrays["expert_wdl"][off.wdl[ply] : off.wdl[ply] + 2].tolist()
    return win, 1000 - win - loss, loss


def policy_arrays(columns: GameColumns, off: Offsets) -> tuple[np.ndarray, np.ndarray]:
    """Every stored policy entry's index (int16) and probability (float32), aligned with
    ``pol_index``; computed once per shard, so a ply's target is two slices (views)."""
    if columns._policy is None:
        a = columns.arrays
        kind = (a["kinds"] & KIND_MASK).astype(np.int64)
        entry_kind = np.repeat(kind, np.diff(off.index))
        probs = np.ones(len(entry_kind), dtype=np.float32)
        counts = entry_kind == COUNTS
        per_count = np.repeat(a["pol_total"], np.diff(off.count)[kind == COUNTS])
        probs[counts] = counts_to_probs(a["pol_count"], per_count, a["pol_ulp"])
        probs[entry_kind == FLOATS] = a["pol_prob"]
        columns._policy = (a["pol_index"].astype(np.int16), probs)  # 4672 < 2**15
    return columns._policy


_ONE = np.ones(1, dtype=np.float32)
_ONE.flags.writeable = False


def ply_policy(columns: GameColumns, off: Offsets, ply: int, kind: int, move, turn: bool):
    """(indices int16, probs float32) of one ply's policy target (views: samples stay small)."""
    if kind == PLAYED:
        return np.array([move_to_index(move, turn)], dtype=np.int16), _ONE
    indices, probs = policy_arrays(columns, off)
    i0, i1 = off.index[ply], off.index[ply + 1]
    return indices[i0:i1], probs[i0:i1]
