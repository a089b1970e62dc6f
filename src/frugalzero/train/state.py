"""Resumable training state without pickle: tensors in safetensors, the rest in JSON.

A checkpoint is two files: ``train_state-NNNNNN.safetensors`` (weights, optimiser moments,
weight averages, the torch RNG) and ``train_state.json`` (progress, hyperparameters, the
Python and NumPy RNG states, and the tensor file's name and SHA-256). The JSON is written
last and atomically, so it is the commit point: a crash leaves the previous checkpoint whole.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save

from frugalzero.errors import UserError
from frugalzero.runtime.files import atomic_write_bytes, atomic_write_text

STATE_JSON = "train_state.json"
FORMAT = "frugalzero-train-state/1"


# ---- RNGs -------------------------------------------------------------------------------


def capture_rng() -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """Python, NumPy (legacy global) and torch RNG states as JSON values and tensors."""
    version, words, gauss = random.getstate()
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    data = {
        "python": [version, list(words), gauss],
        "numpy": [kind, keys.tolist(), int(pos), int(has_gauss), float(cached)],
    }
    tensors = {"rng.torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        for i, state in enumerate(torch.cuda.get_rng_state_all()):
            tensors[f"rng.cuda.{i}"] = state
    return data, tensors


def restore_rng(data: dict[str, Any], tensors: dict[str, torch.Tensor]) -> None:
    version, words, gauss = data["python"]
    random.setstate((version, tuple(words), gauss))
    kind, keys, pos, has_gauss, cached = data["numpy"]
    np.random.set_state((kind, np.array(keys, dtype=np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(tensors["rng.torch"])
    if torch.cuda.is_available():
        states = [tensors[k] for k in sorted(tensors) if k.startswith("rng.cuda.")]
        if len(states) == torch.cuda.device_count():
            torch.cuda.set_rng_state_all(states)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


# ---- optimiser ----------------------------------------------------------------------------


def optimizer_state(opt: torch.optim.Optimizer) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """An optimiser's state dict split into JSON (hyperparameters, scalars) and tensors."""
    sd = opt.state_dict()
    tensors: dict[str, torch.Tensor] = {}
    scalars: dict[str, dict[str, Any]] = {}
    for index, entry in sd["state"].items():
        for key, value in entry.items():
            if isinstance(value, torch.Tensor):
                tensors[f"opt.{index}.{key}"] = value.detach().cpu().contiguous()
            else:
                scalars.setdefault(str(index), {})[key] = value
    return {"param_groups": sd["param_groups"], "scalars": scalars}, tensors


def load_optimizer_state(
    opt: torch.optim.Optimizer, data: dict[str, Any], tensors: dict[str, torch.Tensor]
) -> None:
    params = [p for group in opt.param_groups for p in group["params"]]
    state: dict[int, dict[str, Any]] = {}
    for name, value in tensors.items():
        if name.startswith("opt."):
            _, index, key = name.split(".", 2)
            state.setdefault(int(index), {})[key] = _like(params[int(index)], value)
    for index, entry in data["scalars"].items():
        state.setdefault(int(index), {}).update(entry)
    opt.load_state_dict({"state": state, "param_groups": data["param_groups"]})


def _like(param: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """A buffer the shape of its parameter laid out as the parameter is (channels-last
    convolutions): saved contiguous, it would stop CUDA's fused kernels, which want a
    parameter, its gradient and its buffers stride for stride."""
    if value.shape != param.shape:
        return value  # a step count
    return torch.empty_like(param, dtype=value.dtype).copy_(value)


# ---- files --------------------------------------------------------------------------------


def save_state(run_dir: Path, data: dict[str, Any], tensors: dict[str, torch.Tensor]) -> None:
    """Write a checkpoint (tensor file first, JSON last) and drop the previous tensor file."""
    blob = st_save({k: v.detach().cpu().contiguous() for k, v in tensors.items()})
    digest = hashlib.sha256(blob).hexdigest()
    name = f"train_state-{digest[:12]}.safetensors"
    atomic_write_bytes(run_dir / name, blob)
    body = {"format": FORMAT, "tensors": name, "sha256": digest, **data}
    atomic_write_text(run_dir / STATE_JSON, json.dumps(body, indent=1))
    for old in run_dir.glob("train_state-*.safetensors"):
        if old.name != name:
            old.unlink(missing_ok=True)


def has_state(run_dir: Path) -> bool:
    return (run_dir / STATE_JSON).is_file()


def load_state(run_dir: Path) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """Read and verify a checkpoint; any problem is one line naming the file."""
    path = run_dir / STATE_JSON
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: unreadable training state ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise UserError(f"{path}: field format is not {FORMAT!r}")
    tensor_path = run_dir / str(data.get("tensors", ""))
    try:
        blob = tensor_path.read_bytes()
    except OSError as exc:
        raise UserError(f"{tensor_path}: cannot read training state ({exc.strerror})") from None
    if hashlib.sha256(blob).hexdigest() != data.get("sha256"):
        raise UserError(f"{tensor_path}: checksum mismatch (damaged or from another checkpoint)")
    return data, st_load(blob)
