"""A set of finished games read back from PGN and counted as search-contempt's paper counts
them (``frugalzero.gamestats``): by White's side, or by one player's whatever its colour.
``frugalzero games`` prints it; ``benchmarks/contempt_report.py`` tabulates it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from frugalzero.errors import UserError


def pgn_files(names: Sequence[str | Path]) -> list[Path]:
    """The PGN files named, a folder standing for the ``*.pgn`` files in it (sorted)."""
    files: list[Path] = []
    for name in names:
        path = Path(name)
        if path.is_dir():
            files.extend(sorted(path.glob("*.pgn")))
        elif path.is_file():
            files.append(path)
        else:
            raise UserError(f"{name}: no such file or folder")
    return files


def game_set(names: Sequence[str | Path], player: str = "", plies: int = 30) -> dict:
    """``gamestats.summary`` of the finished games in ``names``, with ``files``,
    ``skipped`` (unreadable or unfinished) and, for a ``player``, its games only, counted from
    its side (``player_wins``/``opponent_wins``; ``other_games`` it did not play)."""
    from frugalzero.data.pgn import Skipped, parse_game, split_games
    from frugalzero.gamestats import count_results, summary
    from frugalzero.results import result_code

    files = pgn_files(names)
    games, results, skipped, others = [], [], 0, 0
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for raw in split_games(handle):
                record = parse_game(raw, str(path))
                if isinstance(record, Skipped):
                    skipped += 1
                    continue
                result = record.result
                if player:  # White's counts below are then the player's
                    sides = (record.extra.get("White"), record.extra.get("Black"))
                    if player not in sides:
                        others += 1
                        continue
                    if sides[0] != player:
                        result = -result
                games.append((record.start_fen, record.moves))
                results.append(result_code(result))
    if not games:
        who = f" of {player}" if player else ""
        raise UserError(f"no finished games{who} in {', '.join(map(str, names))}")
    out: dict = {"files": len(files), "skipped": skipped}
    if player:
        out.update(player=player, other_games=others)
    out.update(summary(games, count_results(results), plies))
    if player:
        for old, new in (("white", "player"), ("black", "opponent")):
            out[f"{new}_wins"] = out.pop(f"{old}_wins")
            out[f"{new}_pct_ci95"] = out.pop(f"{old}_pct_ci95")
    return out
