"""The trainer's checkpoint: what it holds, and what a resume must match.

A checkpoint holds everything the next step depends on: weights, optimiser moments and loss
scale, both weight averages, the RNG states, the metric sums, where training stands and the
settings it ran with. Restored, a run stopped anywhere (Ctrl-C, ``kill -9``) takes the same
steps with the same losses as one that was not stopped. ``state.py`` is the file format.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from frugalzero.config import to_dict
from frugalzero.errors import UserError
from frugalzero.nn.config import NetConfig
from frugalzero.nn.model import PolicyValueNet
from frugalzero.train import state as st
from frugalzero.train.accumulator import LossAccumulator
from frugalzero.train.averaging import WeightAverage
from frugalzero.train.config import TrainConfig
from frugalzero.train.progress import Progress, mid_iteration
from frugalzero.train.step import Stepper

OPERATIONAL = frozenset(
    {"threads", "checkpoint_minutes", "compile", "device", "keep_iteration_nets", "prefetch"}
)
"""Settings that may differ when resuming in the middle of an iteration: they change speed or
bookkeeping, never the numbers."""


@dataclass
class Checkpointed:
    """The trainer's parts a checkpoint holds (the global RNGs besides)."""

    progress: Progress
    config: TrainConfig
    net: PolicyValueNet
    stepper: Stepper
    average: WeightAverage
    """The averaging network's running mean over iterations."""
    swa_average: WeightAverage
    """The SWA cycles' mean within the iteration."""
    acc: LossAccumulator
    """Loss sums since the last metric record."""
    phase_acc: LossAccumulator
    """Loss sums of the whole phase."""
    phase_metrics: dict[str, dict[str, float]]
    """The finished phases' results of the current iteration."""


def save_checkpoint(run_dir: Path, parts: Checkpointed) -> None:
    """Write ``parts`` and the RNG states as the run directory's checkpoint (atomic)."""
    stepper_json, tensors = parts.stepper.state()
    rng_json, rng_tensors = st.capture_rng()
    tensors.update(rng_tensors)
    tensors.update({f"net.{k}": v for k, v in parts.net.state_dict().items()})
    tensors.update(parts.average.tensors("avg."))
    tensors.update(parts.swa_average.tensors("swa."))
    tensors.update(parts.acc.tensors("acc."))
    tensors.update(parts.phase_acc.tensors("pacc."))
    data = {
        "progress": dataclasses.asdict(parts.progress),
        "config": to_dict(parts.config),
        "architecture": dataclasses.asdict(parts.net.config),
        "optimizer": stepper_json["optimizer"],
        "rng": rng_json,
        "scaler": stepper_json["scaler"],
        "swa_count": parts.swa_average.count,
        "phase_metrics": parts.phase_metrics,
    }
    st.save_state(run_dir, data, tensors)


def restore_checkpoint(run_dir: Path, parts: Checkpointed) -> Checkpointed:
    """The run directory's checkpoint restored into ``parts`` (net, optimiser, metric sums
    and RNGs in place), returned with the progress, averages and phase results it held.
    Refused, with one line naming the field, when the network given or (mid-iteration) the
    settings differ from the checkpoint's."""
    data, tensors = st.load_state(run_dir)
    where = run_dir / st.STATE_JSON
    check_architecture(where, data.get("architecture"), parts.net.config)
    progress = Progress(**data["progress"])
    check_resumable(where, data["config"], parts.config, progress)
    parts.net.load_state_dict({k[4:]: v for k, v in tensors.items() if k.startswith("net.")})
    same_optimizer = data["config"]["optimizer"] == parts.config.optimizer
    parts.stepper.restore(data, tensors, same_optimizer)  # else: a fresh optimiser
    st.restore_rng(data["rng"], tensors)
    parts.acc.load(tensors, "acc.")
    parts.phase_acc.load(tensors, "pacc.")
    return dataclasses.replace(
        parts,
        progress=progress,
        average=WeightAverage.from_tensors(tensors, "avg.", progress.average_count),
        swa_average=WeightAverage.from_tensors(tensors, "swa.", data["swa_count"]),
        phase_metrics=data.get("phase_metrics", {}),
    )


def check_architecture(where: Path, saved: Any, net: NetConfig) -> None:
    """A checkpoint continues only the network it was written for (fields added since it was
    written take their defaults)."""
    try:
        same = isinstance(saved, dict) and NetConfig(**saved) == net
    except (TypeError, UserError):
        same = False
    if not same:
        raise UserError(f"{where}: field architecture differs from the network given")


def check_resumable(
    where: Path, saved: dict[str, Any], config: TrainConfig, progress: Progress
) -> None:
    """An iteration stopped mid-way goes on only with the settings it started with (those
    in ``OPERATIONAL`` aside); between iterations any may change."""
    if not mid_iteration(progress):
        return
    now = to_dict(config)
    for key in sorted(set(saved) | set(now)):
        if key not in OPERATIONAL and saved.get(key) != now.get(key):
            raise UserError(
                f"{where}: field {key} was {saved.get(key)!r} when iteration "
                f"{progress.iteration} stopped, now {now.get(key)!r}; resume with the same "
                "settings (they may change between iterations)"
            )
