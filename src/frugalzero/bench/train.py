"""Training throughput (forward + backward + optimiser) against the machine's matmul peak.

Each round measures, interleaved: a square matmul in the training precision (the peak), the
trainer's own step on ready tensors (network, masked loss, clipping, optimiser), assembling
batches from replayed games (what the trainer does between steps), the two one after the other
(``end_to_end``), and the two overlapped as the trainer runs them: the next batches built by
its feed thread while a step computes (``fed``; ``fed_over_unfed`` is its ratio to the step on
ready tensors, 1.0 = batch building entirely hidden).
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
import time
from collections.abc import Callable
from typing import Any

from frugalzero.nn.config import ARCHITECTURES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--arch", default="small", choices=sorted(ARCHITECTURES))
    parser.add_argument("--batch", type=int, default=0, help="0 = the training default (256)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved measurement rounds")
    parser.add_argument("--seconds", type=float, default=1.5, help="per measurement")
    parser.add_argument("--optimizer", default="sgd", choices=["sgd", "adam"])
    parser.add_argument("--precision", default="auto", choices=["auto", "fp32", "bf16", "fp16"])
    parser.add_argument("--channels-last", default="on", choices=["on", "off"])
    parser.add_argument(
        "--compile",
        default="on",
        choices=["on", "off"],
        help="torch.compile the step, as training runs of 1M+ positions do (on); compiling "
        "time is reported apart",
    )
    parser.add_argument("--device", default="auto")
    parser.add_argument("--threads", type=int, default=0, help="0 = every core")
    parser.add_argument(
        "--prefetch",
        type=int,
        default=2,
        help="steps the feed thread builds ahead in the fed measurement (0: none)",
    )


def train_flops_per_position(config) -> int:
    """Forward + backward arithmetic: the backward pass costs two forwards (input and weight
    gradients), except that the input planes need no gradient."""
    stem = 9 * config.input_planes * config.filters * 64 * 2
    return 3 * config.flops_per_position() - stem


def _synthetic_batch(n: int, seed: int = 0):
    import torch

    from frugalzero.data.batches import TrainingBatch

    g = torch.Generator().manual_seed(seed)
    planes = (torch.rand(n, 119, 8, 8, generator=g) < 0.1).float()
    legal = torch.rand(n, 4672, generator=g) < 0.007
    legal[:, 0] = True
    policy = legal.float() / legal.sum(1, keepdim=True)
    z = torch.randint(-1, 2, (n,), generator=g).float()
    search = torch.rand(n, generator=g) * 2 - 1
    return TrainingBatch(planes, legal, policy, z, search, torch.full((n,), float("nan")))


def _replayed_positions(positions: int):
    """Self-play-like games (the data package's generator) written to a shard and replayed."""
    from frugalzero.data.selection import select_all
    from frugalzero.data.shards import write_shard
    from frugalzero.data.synthetic import selfplay_like_games
    from frugalzero.train.data import PositionSet

    with tempfile.TemporaryDirectory() as folder:
        games = selfplay_like_games(max(4, positions // 60), seed=3)
        write_shard(f"{folder}/bench.fzs", games)
        return PositionSet.load(select_all([folder]))


def run(args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np
    import torch

    from frugalzero.bench.timing import matmul_gflops, median
    from frugalzero.nn.config import architecture
    from frugalzero.nn.model import PolicyValueNet
    from frugalzero.train.config import TrainConfig
    from frugalzero.train.data import TensorSet
    from frugalzero.train.feed import BatchFeed, make_batch
    from frugalzero.train.trainer import Trainer

    batch = args.batch or TrainConfig.batch_size
    config = TrainConfig(
        batch_size=batch,
        optimizer=args.optimizer,
        precision=args.precision,
        channels_last=args.channels_last == "on",
        compile=args.compile,
        device=args.device,
        threads=args.threads,
        checkpoint_minutes=0,
        log_every=10**9,
    )
    torch.manual_seed(0)
    net_config = architecture(args.arch)
    ready = TensorSet(_synthetic_batch(batch * 4))
    replayed = _replayed_positions(batch * 8)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as run_dir:
        trainer = Trainer(config, PolicyValueNet(net_config), run_dir, tensorboard=False)
        trainer.net.train()
        compile_seconds = 0.0
        if args.compile == "on":
            started = time.perf_counter()
            trainer.stepper.maybe_compile(10**9)
            trainer.step(ready, np.arange(batch), 1e-3, 0.0)
            compile_seconds = time.perf_counter() - started

        def sync() -> None:
            if trainer.device.type == "cuda":
                torch.cuda.synchronize()

        def steps(data, seconds: float) -> float:
            """Training samples per second over ``seconds`` of steps on ``data``."""
            trainer.step(data, rng.choice(len(data), batch, replace=False), 1e-3, 0.0)
            sync()
            return timed(
                lambda: trainer.step(data, rng.choice(len(data), batch, replace=False), 1e-3, 0.0),
                seconds,
            )

        def timed(work: Callable[[], object], seconds: float) -> float:
            """Samples per second of ``work`` (one batch a call) repeated for ``seconds``. Every
            call counts, the one that crosses ``seconds`` too, and at least one runs: a window
            shorter than one step (a large net on a CPU, or a loaded machine) once read 0."""
            count, start = 0, time.perf_counter()
            while True:
                work()
                count += batch
                if time.perf_counter() - start >= seconds:
                    break
            sync()
            return count / (time.perf_counter() - start)

        def assembly(seconds: float) -> float:
            def one() -> None:
                indices = rng.choice(len(replayed), batch, replace=False)
                make_batch(
                    replayed,
                    indices,
                    trainer.device,
                    config.channels_last,
                    trainer.training_inputs(),
                )

            return timed(one, seconds)

        def fed(seconds: float) -> float:
            """As the trainer runs its phases: the next batches built by the feed's thread.
            Timed as ``steps``: every step counts, the one that crosses ``seconds`` too (a
            step longer than the window once made this 0)."""
            plan = ([rng.choice(len(replayed), batch, replace=False)] for _ in itertools.count())
            with BatchFeed(
                replayed,
                plan,
                trainer.device,
                trainer.training_inputs(),
                config.channels_last,
                args.prefetch,
            ) as feed:
                batches = iter(feed)
                trainer.step_batches(next(batches), 1e-3, 0.0)  # waits for the first batch
                sync()
                count, start = 0, time.perf_counter()
                for ready_batches in batches:
                    trainer.step_batches(ready_batches, 1e-3, 0.0)
                    count += batch
                    if time.perf_counter() - start >= seconds:
                        break
                sync()
                return count / (time.perf_counter() - start)

        rounds: dict[str, list[float]] = {
            k: [] for k in ("peak", "train", "assembly", "e2e", "fed")
        }
        for _ in range(args.rounds):
            rounds["peak"].append(matmul_gflops(trainer.dtype, trainer.device, min_seconds=0.5))
            rounds["train"].append(steps(ready, args.seconds))
            rounds["assembly"].append(assembly(args.seconds / 2))
            rounds["e2e"].append(steps(replayed, args.seconds))
            rounds["fed"].append(fed(args.seconds))

    flops = train_flops_per_position(net_config)
    net_gflops = [s * flops / 1e9 for s in rounds["train"]]
    return {
        "arch": args.arch,
        "batch": batch,
        "optimizer": args.optimizer,
        "device": str(trainer.device),
        "precision": trainer.precision,
        "channels_last": config.channels_last,
        "compiled": trainer.compiled,
        "compile_seconds": round(compile_seconds, 1),
        "threads": torch.get_num_threads(),
        "samples_per_s": round(median(rounds["train"]), 1),
        "net_gflops": round(median(net_gflops), 1),
        "matmul_gflops": round(median(rounds["peak"]), 1),
        "fraction_of_peak": round(median([g / p for g, p in zip(net_gflops, rounds["peak"])]), 3),
        "assembly_samples_per_s": round(median(rounds["assembly"]), 1),
        "end_to_end_samples_per_s": round(median(rounds["e2e"]), 1),
        "fed_samples_per_s": round(median(rounds["fed"]), 1),
        "fed_over_unfed": round(median([f / t for f, t in zip(rounds["fed"], rounds["train"])]), 3),
        "prefetch": args.prefetch,
        "train_flops_per_position": flops,
        "rounds": args.rounds,
    }
