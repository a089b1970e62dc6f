"""What a net knows of a position given without its game (issue 69): raw policy top-1 against
Stockfish and value sign, the same held-out positions given as FEN and reached by their moves,
under each history rule, for both shipped nets; and the start position's value.

    .venv/bin/python benchmarks/history_fill.py label   # once: positions + Stockfish labels
    .venv/bin/python benchmarks/history_fill.py measure [--nets default,small,FILE] [--json]
        [--record benchmarks/results/history/measure.json]

``label`` takes the games of ``benchmarks/heldout_suite.sh``'s recipe (``frugalzero sfgames
--games 126 --nodes 400 --random-plies 8 --seed 4242 --out runs/heldout``: a seed no shipped
net trained on), one position in every 7 plies past the random opening, and labels each with
Stockfish at depth 12 (best move, score): benchmarks/results/history/heldout-games.jsonl, each
line the game's moves from the start, the position's FEN, ``bm`` and ``cp`` (side to move's
view; mates as +-10000). ``measure`` runs each net's raw network (no search) on them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import chess
import chess.engine
import chess.pgn
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks/results/history"
LABELS = OUT / "heldout-games.jsonl"
GAMES = ROOT / "runs/heldout"
RULES = ("no", "fen_only", "always")


def label(limit: int, depth: int) -> None:
    positions = []
    for path in sorted(GAMES.glob("*.pgn")):
        with open(path) as handle:
            while (game := chess.pgn.read_game(handle)) is not None:
                board = game.board()
                moves: list[str] = []
                for ply, node in enumerate(game.mainline()):
                    if ply >= 8 and ply % 7 == 0 and not board.is_game_over():
                        ident = f"{path.stem}#{game.headers['Round']}/{ply}"
                        positions.append((ident, list(moves), board.fen()))
                    moves.append(node.move.uci())
                    board.push(node.move)
    positions = positions[:limit]
    OUT.mkdir(parents=True, exist_ok=True)
    lines = []
    with chess.engine.SimpleEngine.popen_uci("/usr/games/stockfish") as engine:
        engine.configure({"Threads": 1, "Hash": 64})
        for n, (ident, moves, fen) in enumerate(positions):
            board = chess.Board(fen)
            info = engine.analyse(board, chess.engine.Limit(depth=depth))
            cp = info["score"].pov(board.turn).score(mate_score=10000)
            row = {"id": ident, "moves": moves, "fen": fen, "bm": info["pv"][0].uci(), "cp": cp}
            lines.append(json.dumps(row))
            if n % 100 == 0:
                print(f"{n}/{len(positions)}", file=sys.stderr)
    LABELS.write_text("\n".join(lines) + "\n")
    print(f"{len(lines)} positions -> {LABELS.relative_to(ROOT)}")


def _boards(rows: list[dict], with_moves: bool) -> list[chess.Board]:
    boards = []
    for row in rows:
        if with_moves:
            board = chess.Board()
            for uci in row["moves"]:
                board.push_uci(uci)
            assert board.fen() == row["fen"], row["id"]
        else:
            board = chess.Board(row["fen"])
        boards.append(board)
    return boards


def _run(runner, boards: list[chess.Board]) -> tuple[list[chess.Move], np.ndarray]:
    from frugalzero.chess.history import net_input_from_board
    from frugalzero.nn.evaluator import pack_inputs

    best, values = [], []
    for i in range(0, len(boards), 128):
        inputs = [net_input_from_board(b) for b in boards[i : i + 128]]
        priors, value, _ = runner.run(*pack_inputs(inputs))
        best += [inp.moves[int(np.argmax(p[: len(inp.moves)]))] for inp, p in zip(inputs, priors)]
        values.append(value)
    return best, np.concatenate(values)


def measure(nets: list[str]) -> dict:
    from frugalzero.nn.checkpoint import load_net
    from frugalzero.nn.config import EvaluatorConfig
    from frugalzero.nn.runner import NetRunner
    from frugalzero.nn.shipped import resolve_net_path

    rows = [json.loads(line) for line in LABELS.read_text().splitlines()]
    bm = [chess.Move.from_uci(r["bm"]) for r in rows]
    cp = np.array([r["cp"] for r in rows])
    decided = np.abs(cp) >= 300
    given = {"fen": _boards(rows, False), "moves": _boards(rows, True)}
    start = {"startpos": [chess.Board()], "fen": [chess.Board(chess.STARTING_FEN)]}
    result: dict = {"positions": len(rows), "decided": int(decided.sum()), "nets": {}}
    for name in nets:
        net, meta = load_net(resolve_net_path(name))
        per = result["nets"][name] = {"net_id": meta.net_id, "rule": net.config.history_fill}
        for rule in RULES:
            runner = NetRunner(net, EvaluatorConfig(precision="fp32", history_fill=rule), 2)
            for how, boards in given.items():
                moves, values = _run(runner, boards)
                top1 = float(np.mean([m == b for m, b in zip(moves, bm)]))
                sign = float(np.mean(np.sign(values[decided]) == np.sign(cp[decided])))
                per[f"{rule}/{how}"] = {"top1": round(100 * top1, 1), "sign": round(100 * sign, 1)}
            per[f"{rule}/start"] = float(_run(runner, start["startpos"])[1][0])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    lab = sub.add_parser("label")
    lab.add_argument("--limit", type=int, default=1000)
    lab.add_argument("--depth", type=int, default=12)
    mea = sub.add_parser("measure")
    mea.add_argument("--nets", default="default,small")
    mea.add_argument("--json", action="store_true")
    mea.add_argument("--record", help="also write the JSON to this file")
    args = parser.parse_args()
    if args.what == "label":
        label(args.limit, args.depth)
        return
    result = measure(args.nets.split(","))
    if args.record:
        Path(args.record).write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        print(json.dumps(result))
        return
    print(f"{result['positions']} positions, {result['decided']} with |eval| >= 3 pawns")
    print(
        f"{'net':8} {'rule':9} {'top1 fen':>9} {'top1 moves':>11} {'sign fen':>9} "
        f"{'sign moves':>11} {'start':>7}"
    )
    for name, per in result["nets"].items():
        for rule in RULES:
            f, m = per[f"{rule}/fen"], per[f"{rule}/moves"]
            print(
                f"{name:8} {rule:9} {f['top1']:9.1f} {m['top1']:11.1f} {f['sign']:9.1f} "
                f"{m['sign']:11.1f} {per[f'{rule}/start']:+7.3f}"
            )


if __name__ == "__main__":
    main()
