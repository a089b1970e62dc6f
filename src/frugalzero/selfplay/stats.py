"""Self-play statistics over finished games, as pure functions of their records.

The search-contempt paper judges self-play data by how decisive it is, (w + l) / d, and by how
many games repeat another game's opening moves: the share of games identical to another game
up to ply k. False resignations are measured on the games that were not allowed to resign.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from frugalzero.data.records import GameRecord

REPEAT_PLIES = 30


def repeated_share_by_ply(
    games: Sequence[tuple[str, Sequence[str]]], plies: int = REPEAT_PLIES
) -> list[float]:
    """Entry k-1: share of games whose first k plies (and start position) equal those of at
    least one other game. A game shorter than k plies is compared as a whole."""
    shares = []
    total = len(games)
    for k in range(1, plies + 1):
        prefixes = Counter((fen, tuple(moves[:k])) for fen, moves in games)
        repeated = sum(count for count in prefixes.values() if count > 1)
        shares.append(repeated / total if total else 0.0)
    return shares


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
    """W/D/L (White's view), (w+l)/d, repeated-game shares, lengths, resignations."""
    wins = sum(r.result == 1.0 for r in records)
    losses = sum(r.result == -1.0 for r in records)
    draws = sum(r.result == 0.0 for r in records)
    lengths = [len(r.moves) for r in records]
    rate, flagged = false_resignation_rate(records)
    terminations = Counter(r.extra.get("termination", "") or "unknown" for r in records)
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
        "resigned": terminations.get("resignation", 0),
        "no_resign_games": sum(r.extra.get("resign") == "off" for r in records),
        "would_resign": flagged,
        "false_resignation_rate": rate,
        "terminations": dict(sorted(terminations.items())),
    }
