"""Data pipeline speed and size: bytes per position, PGN import, training batches against a
train step.

Everything runs on synthetic data made in the run (``frugalzero.data.synthetic``): self-play-
like games for shards and training batches, and PGN games (lichess-style headers, a clock
comment on every move) for the import. The batches (``PositionSet``, the trainer's data), the
training step they must feed, and the training step fed by them are measured interleaved,
round by round; figures are medians.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--games", type=int, default=60, help="synthetic self-play games")
    parser.add_argument("--pgn-games", type=int, default=200, help="synthetic PGN games")
    parser.add_argument(
        "--replay-games", type=int, default=400, help="synthetic games replayed with workers"
    )
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--arch", default="small", help="network of the training step")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved measurement rounds")
    parser.add_argument("--seconds", type=float, default=1.0, help="per measurement per round")


def pgn_text(games: int, seed: int) -> str:
    """PGN games as an online server exports them (headers, clock comments, 40-120 plies)."""
    import chess
    import chess.pgn
    import numpy as np

    from frugalzero.data.synthetic import selfplay_like_game
    from frugalzero.results import result_code

    rng = np.random.default_rng(seed)
    out = []
    for i in range(games):
        record = selfplay_like_game(rng, plies=(40, 121))
        game = chess.pgn.Game()
        game.headers.update(
            Event="Rated Blitz game",
            Site=f"https://example.org/{i:08d}",
            Date="2024.01.01",
            White=f"player{i % 977}",
            Black=f"player{i % 769}",
            Result=result_code(record.result),
            WhiteElo=str(1200 + i % 1300),
            BlackElo=str(1250 + i % 1200),
            TimeControl="180+2",
            ECO="A00",
            Termination="Normal",
        )
        node = game
        for ply, uci in enumerate(record.moves):
            node = node.add_variation(chess.Move.from_uci(uci))
            node.comment = f"[%clk 0:{2 - ply // 60 % 3:02d}:{59 - ply % 60:02d}]"
        out.append(str(game) + "\n\n")
    return "".join(out)


def _train_step(arch: str):
    """A plain training step of ``arch`` on a TrainingBatch: forward, masked-policy cross
    entropy + value MSE, backward, SGD; bf16 autocast on CPUs with native bf16 (as the
    trainer uses), channels-last."""
    import torch

    from frugalzero.nn.config import architecture
    from frugalzero.nn.model import PolicyValueNet
    from frugalzero.runtime.device import cpu_has_native_bf16, place

    torch.manual_seed(0)
    net = place(PolicyValueNet(architecture(arch)), torch.device("cpu"), True).train()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    bf16 = cpu_has_native_bf16()

    def step(batch) -> None:
        with torch.autocast("cpu", torch.bfloat16, enabled=bf16):
            logits, value = net(batch.planes)
        logits = logits.float().masked_fill(~batch.legal, -1e9)
        policy_loss = -(batch.policy * torch.log_softmax(logits, dim=1)).sum(1).mean()
        value_loss = ((value.float()[:, 0] - batch.z) ** 2).mean()
        optimizer.zero_grad(set_to_none=True)
        (policy_loss + value_loss).backward()
        optimizer.step()

    return step, ("bf16" if bf16 else "fp32")


def _window_replay(games: list, out: Path, rounds: int) -> tuple[float, float]:
    """A run's replay window moving on by a quarter of new games: positions per second of
    replaying the whole window, and the time of replaying only the new quarter (the games
    carried from the last window reused) over that of replaying it all."""
    from frugalzero.bench.timing import median
    from frugalzero.data.selection import Selection, select_all
    from frugalzero.data.shards import ShardWriter
    from frugalzero.train.data import PositionSet

    with ShardWriter(out, "w", games_per_shard=max(1, len(games) // 4)) as writer:
        for game in games:
            writer.add(game)
    window = select_all([out])
    last = Selection(window.parts[: max(1, len(window.parts) - 1)])
    fresh_s, ratios = [], []
    for _ in range(rounds):
        carried: dict = {}
        PositionSet.load(last, replayed=carried, workers=0)
        t0 = time.perf_counter()
        PositionSet.load(window, replayed=carried, workers=0)
        moved = time.perf_counter() - t0
        t0 = time.perf_counter()
        PositionSet.load(window, workers=0)
        fresh_s.append(time.perf_counter() - t0)
        ratios.append(moved / fresh_s[-1])
    return round(window.positions / median(fresh_s), 1), round(median(ratios), 3)


def _replay_with_workers(games: int, out: Path, rounds: int) -> dict[str, Any]:
    """``PositionSet.load`` of ``games`` new games in eight shards, in this process and in one
    worker process per core (their start-up counted): positions per second and the ratio."""
    from frugalzero.bench.timing import median
    from frugalzero.data.selection import select_all
    from frugalzero.data.shards import ShardWriter
    from frugalzero.data.synthetic import selfplay_like_games
    from frugalzero.runtime.cores import available_cores
    from frugalzero.train.data import PositionSet

    with ShardWriter(out, "w", games_per_shard=max(1, games // 8)) as writer:
        for game in selfplay_like_games(games, seed=3):
            writer.add(game)
    selection = select_all([out])
    workers = available_cores()
    seconds: dict[int, list[float]] = {0: [], workers: []}
    for _ in range(rounds):
        for n in seconds:
            t0 = time.perf_counter()
            PositionSet.load(selection, legal_cache=0, workers=n)
            seconds[n].append(time.perf_counter() - t0)
    return {
        "replay_workers": workers,
        "replay_one_process_positions_per_s": round(selection.positions / median(seconds[0]), 1),
        "replay_workers_positions_per_s": round(selection.positions / median(seconds[workers]), 1),
        "replay_workers_over_one": round(
            median([a / b for a, b in zip(seconds[0], seconds[workers])]), 3
        ),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="frugalzero-bench-data-") as tmp:
        return _run(args, Path(tmp))


def _run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    import lzma
    import zlib

    import numpy as np

    from frugalzero.bench.timing import median
    from frugalzero.data import codec
    from frugalzero.data.batches import HistoryInputs
    from frugalzero.data.importer import import_pgn
    from frugalzero.data.selection import select_all
    from frugalzero.data.shards import read_shard, shard_bytes, write_shard
    from frugalzero.data.synthetic import selfplay_like_games
    from frugalzero.nn.config import NetConfig
    from frugalzero.runtime.timing import rate
    from frugalzero.train.config import TrainConfig
    from frugalzero.train.data import PositionSet

    games = selfplay_like_games(args.games, seed=1)
    positions = sum(g.positions for g in games)
    shard = write_shard(tmp / "shards" / "selfplay.fzs", games)
    columns = codec.concat([codec.encode_game(g) for g in games])
    raw, _ = codec.to_bytes(columns)
    lzma_size = len(shard_bytes(columns, "lzma", 6))
    t0 = time.perf_counter()
    read_shard(shard)
    read_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    zlib.decompress(zlib.compress(raw, 9))
    zlib_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    lzma.decompress(lzma.compress(raw, preset=6))
    lzma_s = time.perf_counter() - t0

    pgn = tmp / "games.pgn"
    pgn.write_text(pgn_text(args.pgn_games, seed=2))
    plies = None

    def import_once() -> None:
        nonlocal plies
        summary = import_pgn(
            [pgn], tmp / f"pgn-{time.monotonic_ns()}", workers=1, show_progress=False
        )
        plies = summary["positions"] / max(1, summary["imported"])

    # the trainer's path, as `run` and `train` take it: the selection replayed once
    # (PositionSet.load; no legal-move cache, so every position pays its full replay, as new
    # data does), then batches of shuffled indices assembled from it (PositionSet.batch)
    # a new net's rule and training's default truncation: the batches training builds
    inputs = HistoryInputs(NetConfig().history_fill, TrainConfig().history_truncation)
    selection = select_all([tmp / "shards"])
    position_set = PositionSet.load(selection, legal_cache=0, workers=0)
    batches: Iterator[np.ndarray] = iter(())
    epochs = 0

    def next_batch():
        nonlocal batches, epochs
        indices = next(batches, None)
        if indices is None:  # a new epoch: a new order, as the trainer's phase_order
            epochs += 1
            order = np.random.default_rng(epochs).permutation(len(position_set))
            batches = iter(np.array_split(order, max(1, len(order) // args.batch)))
            indices = next(batches)
        return position_set.batch(indices, inputs)

    batch = next_batch()
    step, precision = _train_step(args.arch)
    step(batch)
    rounds: dict[str, list[float]] = {"batch": [], "train": [], "fed": [], "import": []}
    for _ in range(args.rounds):
        rounds["batch"].append(rate(next_batch, args.batch, args.seconds, warmup=0))
        rounds["train"].append(rate(lambda: step(batch), args.batch, args.seconds, warmup=0))
        rounds["fed"].append(rate(lambda: step(next_batch()), args.batch, args.seconds, warmup=0))
        rounds["import"].append(rate(import_once, args.pgn_games, args.seconds, warmup=0))

    def ratio(a: str, b: str) -> float:
        return round(median([x / y for x, y in zip(rounds[a], rounds[b])]), 3)

    replay_rate, moved_over_fresh = _window_replay(games, tmp / "window", args.rounds)
    with_workers = _replay_with_workers(args.replay_games, tmp / "replay", min(3, args.rounds))

    return {
        "bytes_per_position": round(shard.stat().st_size / positions, 2),
        "bytes_per_position_lzma": round(lzma_size / positions, 2),
        "raw_bytes_per_position": round(len(raw) / positions, 2),
        "zlib_round_trip_ms": round(zlib_s * 1000, 1),
        "lzma_round_trip_ms": round(lzma_s * 1000, 1),
        "read_shard_positions_per_s": round(positions / read_s, 1),
        "selfplay_positions": positions,
        "policy_entries_per_position": round(len(columns.arrays["pol_index"]) / positions, 2),
        "import_games_per_s": round(median(rounds["import"]), 1),
        "import_plies_per_game": round(plies or 0, 1),
        "batch_samples_per_s": round(median(rounds["batch"]), 1),
        "train_step_samples_per_s": round(median(rounds["train"]), 1),
        "train_fed_samples_per_s": round(median(rounds["fed"]), 1),
        "window_replay_positions_per_s": replay_rate,
        "window_moved_over_fresh": moved_over_fresh,
        **with_workers,
        "batch_over_train": ratio("batch", "train"),
        "fed_over_train": ratio("fed", "train"),
        "arch": args.arch,
        "batch": args.batch,
        "precision": precision,
        "rounds": args.rounds,
    }
