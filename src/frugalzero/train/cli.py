"""``frugalzero train``: train a network on shards (one iteration: main phase, SWA, validation)."""

from __future__ import annotations

import argparse
from pathlib import Path

from frugalzero.config_cli import add_config_flags, config_from_args
from frugalzero.layout import AVERAGE, METRICS, NET, TRAIN_CONFIG
from frugalzero.runtime.lock import hold, holds_locks

# files a run directory holds; --restart removes exactly these
RUN_FILES = (
    "train_state.json",
    "train_state-*.safetensors",
    METRICS,
    TRAIN_CONFIG,
    NET,
    AVERAGE,
    "validation.json",
)
RUN_DIRS = ("nets", "tensorboard")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "train",
        help="train a network on shards (loss, SGD/Adam, SWA, validation)",
        description="Train on the positions of the shards under --data: a main phase of "
        "--epochs passes with an annealed rate, then --swa-cycles SWA cycles, then "
        "validation on the last games of the data, held out. A stopped run (Ctrl-C, a "
        "crash) continues exactly where it was when the same command is run again.",
    )
    parser.add_argument("--data", nargs="+", required=True, metavar="DIR", help="shard folders")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--net", help="start from this network file ('default': the shipped one)")
    source.add_argument("--arch", help="start from a fresh network of this size (default small)")
    parser.add_argument("--value-head", choices=["scalar", "wdl"], help="with --arch")
    parser.add_argument("--out", required=True, help="where the trained network is written")
    parser.add_argument("--window", type=int, default=0, help="newest positions used; 0 = all")
    parser.add_argument(
        "--run-dir", help="checkpoints and metrics (default: OUT minus .safetensors, plus .run)"
    )
    parser.add_argument("--restart", action="store_true", help="discard a stopped run's state")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_config_flags(parser, "frugalzero.train.config:TrainConfig")
    parser.set_defaults(handler=_train)


def default_run_dir(out: Path) -> Path:
    name = out.name[: -len(".safetensors")] if out.name.endswith(".safetensors") else out.name
    return out.with_name(name + ".run")


def clear_run_dir(run_dir: Path) -> None:
    """Remove what a training run wrote there (nothing else)."""
    import shutil

    for pattern in RUN_FILES:
        for path in run_dir.glob(pattern):
            path.unlink()
    for name in RUN_DIRS:
        shutil.rmtree(run_dir / name, ignore_errors=True)


def _initial_net(args: argparse.Namespace, seed: int):
    import torch

    from frugalzero.nn.checkpoint import load_net
    from frugalzero.nn.config import architecture
    from frugalzero.nn.model import PolicyValueNet
    from frugalzero.nn.shipped import resolve_net_path

    if args.net:
        if args.value_head:
            from frugalzero.errors import UserError

            raise UserError("--value-head goes with --arch (a loaded net keeps its head)")
        net, meta = load_net(resolve_net_path(args.net))
        return net, meta.net_id, str(args.net)
    torch.manual_seed(seed)
    arch = args.arch or "small"
    config = architecture(arch, value_head=args.value_head or "scalar")
    return PolicyValueNet(config), "", f"new {arch}"


@holds_locks
def _train(args: argparse.Namespace) -> int:
    import signal
    import time

    from frugalzero.data.selection import replay_window
    from frugalzero.errors import UserError
    from frugalzero.output import emit
    from frugalzero.runtime.files import atomic_write_bytes, atomic_write_text, check_destination
    from frugalzero.runtime.progress import stderr_console
    from frugalzero.train import state
    from frugalzero.train.data import PositionSet, fixed_holdout
    from frugalzero.train.trainer import Trainer, TrainingInterrupted

    started = time.perf_counter()
    config = config_from_args(args)
    out = check_destination(args.out)
    run_dir = Path(args.run_dir) if args.run_dir else default_run_dir(out)
    if args.window < 0:
        raise UserError("--window must not be negative")
    hold(run_dir)  # one training at a time in a run directory
    if args.restart:
        clear_run_dir(run_dir)
    console = stderr_console()
    if state.has_state(run_dir):
        done = _finished(run_dir)
        if done:
            raise UserError(
                f"{run_dir} holds a finished run (written to {done}); pass --restart to train "
                "again from the start, or choose another --run-dir"
            )
        console.print(f"[bold]resuming[/] the stopped run in {run_dir}")

    train_sel, holdout_sel = fixed_holdout(
        run_dir, args.data, config.validation_fraction, config.validation_min_positions
    )
    if args.window:
        train_sel = replay_window(train_sel, args.window)
    if train_sel.positions == 0:
        raise UserError(f"no training positions in {' '.join(args.data)}")
    with _bar(console, "replaying games", train_sel.games + holdout_sel.games) as (bar, task):
        offset = [0]

        def loaded(done: int, total: int) -> None:
            bar.update(task, completed=offset[0] + done)

        train = PositionSet.load(train_sel, loaded)
        offset[0] = train_sel.games
        holdout = PositionSet.load(holdout_sel, loaded) if holdout_sel.positions else None

    net, parent, source = _initial_net(args, config.seed)
    with _bar(console, "training", 1) as (bar, task):

        def on_step(trainer, phase: str, step: int, total: int) -> None:
            bar.update(task, description=f"{phase:5s}", completed=step, total=total)

        trainer = Trainer(config, net, run_dir, parent=parent, on_step=on_step)
        previous = signal.getsignal(signal.SIGINT)

        def stop(signum, frame) -> None:  # first Ctrl-C: finish the step, save, stop
            trainer.request_stop()
            signal.signal(signal.SIGINT, previous)

        signal.signal(signal.SIGINT, stop)
        try:
            summary = trainer.run_iteration(train, holdout)
        except TrainingInterrupted as exc:
            console.print(f"stopped ({exc}); run the same command again to continue")
            raise KeyboardInterrupt from None
        finally:
            signal.signal(signal.SIGINT, previous)
            trainer.metrics.close()
    atomic_write_bytes(out, (run_dir / NET).read_bytes())
    atomic_write_text(run_dir / "out.txt", str(out.resolve()))
    emit(_result(summary, trainer, out, source, train, holdout, started), args.json, title="train")
    return 0


def _finished(run_dir: Path) -> str:
    """The output a finished single-iteration run wrote, or '' while it is unfinished."""
    import json

    from frugalzero.train.state import STATE_JSON

    data = json.loads((run_dir / STATE_JSON).read_text())
    if data.get("progress", {}).get("iteration", 0) < 1:
        return ""
    marker = run_dir / "out.txt"
    return marker.read_text() if marker.exists() else str(run_dir / NET)


def _result(summary, trainer, out: Path, source, train, holdout, started) -> dict:
    import time

    from frugalzero.nn.checkpoint import load_net

    _, meta = load_net(out)
    main = summary.get("main", {})
    swa = summary.get("swa", {})
    result = {
        "out": str(out),
        "net_id": meta.net_id,
        "started_from": source,
        "arch": _arch_name(trainer.net.config),
        "positions": len(train),
        "validation_positions": len(holdout) if holdout is not None else 0,
        "skipped_games": train.skipped_games + (holdout.skipped_games if holdout else 0),
        "optimizer": trainer.config.optimizer,
        "precision": trainer.precision,
        "device": str(trainer.device),
        "steps": trainer.progress.global_step,
        "train_policy_loss": main.get("policy_loss"),
        "train_value_loss": main.get("value_loss"),
        "swa_cycles": trainer.config.swa_cycles,
        "swa_policy_loss": swa.get("policy_loss"),
        "swa_value_loss": swa.get("value_loss"),
    }
    for name, values in summary.get("validation", {}).items():
        for key in ("policy_loss", "value_loss", "top1"):
            result[f"{name}_{key}"] = values[key]
    result["seconds"] = round(time.perf_counter() - started, 1)
    result["run_dir"] = str(trainer.run_dir)
    return result


def _arch_name(config) -> str:
    import dataclasses

    from frugalzero.nn.config import ARCHITECTURES

    for name, arch in ARCHITECTURES.items():
        if dataclasses.replace(arch, value_head=config.value_head) == config:
            return name
    return "custom"


class _bar:
    """A rich progress bar on stderr with one task."""

    def __init__(self, console, what: str, total: int) -> None:
        from frugalzero.runtime.progress import progress_bar

        self.progress = progress_bar(
            "[bold]{task.description}",
            "count",
            "elapsed",
            "remaining",
            transient=True,
            console=console,
        )
        self.what, self.total = what, total

    def __enter__(self):
        self.progress.__enter__()
        return self.progress, self.progress.add_task(self.what, total=self.total)

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)
