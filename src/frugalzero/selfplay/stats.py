"""Self-play statistics over finished games, as pure functions of their records: W/D/L,
decisiveness, repeated and distinct openings (counted by ``frugalzero.gamestats``, as for any set
of games), lengths, false resignations (measured on the games that were not allowed to resign),
and what the training data is made of: how many different positions it holds, how much of it
has a decisive value target, and how far the searches moved from the network's policy (the
root KL, which each game measures while it is played and keeps in its record's ``extra``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import chess
import numpy as np

from frugalzero.chess.history import position_key
from frugalzero.data.records import GameRecord
from frugalzero.gamestats import REPEAT_PLIES, distinct_openings, repeated_share_by_ply

OPENING_PLIES = 10
"""Plies that make an opening line for ``distinct_openings`` (with the start position)."""
KL_SUM, KL_PLIES, FULL_SEARCHES = "kl_sum", "kl_plies", "full_searches"
"""A self-play record's ``extra`` keys (strings, as every extra value): the sum of its plies'
root KL, how many plies it was measured on, and how many searches were full ones."""
PRIOR_FLOOR = 1e-9
"""The smallest prior ``policy_kl`` uses: a move the network gave (float32) zero but the
search visited is a large surprise, not an infinite one."""


def policy_kl(
    target_indices: np.ndarray,
    target_probs: np.ndarray,
    prior_indices: np.ndarray,
    priors: np.ndarray,
    floor: float = PRIOR_FLOOR,
) -> float:
    """KL(search target || network priors) in nats, over the target's moves (policy indices):
    how much the search changed the network's mind, the signal its policy learns from (0: the
    search only repeated the network). A prior below ``floor`` (a target move missing from
    the priors too) counts as ``floor``; float rounding that puts near-agreement a hair below
    0 counts as 0. The definition: self-play reads it from the core (``NativeTree.target_kl``,
    the same arithmetic in C++), held to this function by tests/test_search_native.py."""
    probs = np.asarray(target_probs, dtype=np.float64)
    lookup = dict(zip(np.asarray(prior_indices).tolist(), np.asarray(priors).tolist()))
    prior = np.array([lookup.get(i, 0.0) for i in np.asarray(target_indices).tolist()])
    keep = probs > 0
    if not keep.any():
        return 0.0
    t, q = probs[keep], np.maximum(prior[keep], floor)
    return max(float(np.sum(t * np.log(t / q))), 0.0)


def root_kl(records: Sequence[GameRecord]) -> float | None:
    """The mean root KL over the searched plies of the games that measured it (self-play
    records; None when none did)."""
    plies = sum(int(r.extra.get(KL_PLIES, "0")) for r in records)
    if not plies:
        return None
    return sum(float(r.extra.get(KL_SUM, "0")) for r in records) / plies


def training_position_keys(record: GameRecord) -> Iterator[tuple]:
    """The repetition-rule identity (``chess.history.position_key``) of each position of the
    game that has a training target."""
    board = chess.Board(record.start_fen)
    last = max((i for i, t in enumerate(record.targets) if t is not None), default=-1)
    for uci, target in zip(record.moves[: last + 1], record.targets):
        if target is not None:
            yield position_key(board)
        board.push(chess.Move.from_uci(uci))


def distinct_positions_per_1000(records: Sequence[GameRecord]) -> float | None:
    """Different positions per 1,000 training positions (None without any): the data's
    variety, which the share of repeated openings sees only at the start of the games. Two
    positions are the same when the repetition rule says so (pieces, side to move, castling
    and en-passant rights), whatever the move counters and the history before them."""
    total = sum(r.positions for r in records)
    if not total:
        return None
    distinct = {key for record in records for key in training_position_keys(record)}
    return 1000.0 * len(distinct) / total


def decisive_targets(records: Sequence[GameRecord]) -> float | None:
    """Share of the training positions whose value target (the game's result) is a win or a
    loss, over the positions of games with a result (None without any): a drawish generation
    teaches the value head little but 0."""
    scored = [r for r in records if r.result is not None]
    total = sum(r.positions for r in scored)
    if not total:
        return None
    return sum(r.positions for r in scored if r.result != 0.0) / total


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def false_resignation_rate(records: Sequence[GameRecord]) -> tuple[float | None, int]:
    """(share of would-be resignations the resigning side did not lose, how many there were)
    over the games played without resignation."""
    flagged = 0
    false = 0
    for record in records:
        side = record.extra.get("would_resign", "")
        if record.extra.get("resign") != "off" or not side:
            continue
        flagged += 1
        loss = -1.0 if side == "white" else 1.0
        if record.result != loss:
            false += 1
    return (false / flagged if flagged else None), flagged


def selfplay_stats(records: Sequence[GameRecord], plies: int = REPEAT_PLIES) -> dict[str, Any]:
    """W/D/L (White's view), (w+l)/d, repeated-game shares, distinct openings and positions,
    the share of decisive value targets, the root KL, lengths, resignations."""
    wins = sum(r.result == 1.0 for r in records)
    losses = sum(r.result == -1.0 for r in records)
    draws = sum(r.result == 0.0 for r in records)
    lengths = [len(r.moves) for r in records]
    rate, flagged = false_resignation_rate(records)
    terminations = Counter(r.extra.get("termination", "") or "unknown" for r in records)
    openings = distinct_openings([(r.start_fen, r.moves) for r in records], OPENING_PLIES)
    return {
        "games": len(records),
        "positions": sum(r.positions for r in records),
        "wdl": [wins, draws, losses],
        "w_plus_l_over_d": (wins + losses) / draws
        if draws
        else (math.inf if wins + losses else None),
        "mean_length": sum(lengths) / len(lengths) if lengths else 0.0,
        "repeated_share_by_ply": [
            round(s, 4)
            for s in repeated_share_by_ply([(r.start_fen, r.moves) for r in records], plies)
        ],
        "distinct_openings": openings,
        "distinct_opening_share": round(openings / len(records), 4) if records else None,
        "distinct_positions_per_1000": _rounded(distinct_positions_per_1000(records), 1),
        "decisive_targets": _rounded(decisive_targets(records), 4),
        "root_kl": _rounded(root_kl(records), 4),
        "resigned": terminations.get("resignation", 0),
        "no_resign_games": sum(r.extra.get("resign") == "off" for r in records),
        "would_resign": flagged,
        "false_resignation_rate": rate,
        "terminations": dict(sorted(terminations.items())),
    }
