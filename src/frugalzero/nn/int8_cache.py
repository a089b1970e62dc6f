"""The int8 network compiled once per machine and per net, so that an engine's second start
loads it in milliseconds instead of quantizing and compiling it again (5-30 s).

The entries are AOTInductor packages (``nn.int8_backend``: a zip of a shared library, its
source and metadata; no pickle, loaded by torch's C++ loader) in the per-machine cache folder
(``nn.choice.cache_dir``: ``$FRUGALZERO_CACHE``, else ``~/.cache/frugalzero``), under ``int8/``.
An entry is named by the digest of everything its library depends on (``package_key``): the
net's weights and architecture (its rule for missing history, which the calibration planes
follow, included), how it is quantized (``nn.quantize.recipe_record``: the shipped asset's
bytes, how many calibration positions, the pass size, each module's mode, the observer), the
code's version (``RECIPE``), torch's and torchao's versions, and the CPU (its
model and instruction-set flags: the library is built for them). Another net, torch or CPU is
another entry: nothing is ever loaded for a key it was not built for.

``<key>.pt2`` is the package and ``<key>.json`` its record (the package's SHA-256 and size,
what it was built from), written after it, each atomically (``runtime.files``). The package's
bytes are checked against the record before it is loaded: one without its record, or whose
bytes differ (a torn copy, a disk error, an edit), or that the loader refuses, is rebuilt,
never loaded and never a crash. Building holds ``<key>.lock`` (``flock``, released by the
kernel if the process dies), so processes that start side by side build once and the others
load. At most ``KEEP`` entries stay, the least recently used removed first. A cache folder
that cannot be written costs a build each time, nothing else.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

FOLDER = "int8"
BUILD_PREFIX = "build-"
STALE_BUILD_S = 3600.0
KEEP = 8
"""Packages kept (small: 2.7 MB each; self-play's nets are new every iteration)."""
RECIPE = 2
"""The quantization and compile code's version (``nn.quantize``, ``nn.int8_backend``): raised
when either changes what a package holds, so older packages are not loaded (2: the mixed
recipe's modes, the bf16 layers; the recipe itself is in the key as ``nn.quantize``'s
``recipe_record``)."""

Model = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


def folder() -> Path:
    from frugalzero.nn.choice import cache_dir

    return cache_dir() / FOLDER


def package_key(net: torch.nn.Module, recipe: dict[str, Any]) -> str:
    """The digest naming ``net``'s package on this machine (see the module's docstring);
    ``recipe`` says how it is quantized (``nn.quantize.recipe_record``)."""
    from dataclasses import asdict

    from frugalzero.nn.checkpoint import _digest  # the weights' digest, as net_id's
    from frugalzero.nn.int8_backend import torchao_version

    parts = {
        "recipe": RECIPE,
        "weights": _digest(net.state_dict()).hexdigest(),
        "architecture": asdict(net.config),
        "quantization": recipe,
        "torch": torch.__version__,
        "torchao": torchao_version(),
        "cpu": cpu_kind(),
    }
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def cpu_kind() -> str:
    """The CPU's model and a digest of its instruction-set flags (Linux ``/proc/cpuinfo``;
    elsewhere what ``platform`` says)."""
    model = flags = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="ignore") as info:
            for line in info:
                if line.startswith("model name") and not model:
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    flags = line.split(":", 1)[1].strip()
                if model and flags:
                    break
    except OSError:
        pass
    model = model or f"{platform.machine()} {platform.processor()}".strip()
    return f"{model}|{hashlib.sha256(flags.encode()).hexdigest()[:16]}"


def cached_package(
    key: str, build: Callable[[Path], None], load: Callable[[Path], Model]
) -> tuple[Model, bool]:
    """(the model of ``key``'s package, whether it was built now): loaded from the cache when
    its entry is whole and loads, else ``build(path)`` writes a new package, stored and then
    loaded. ``load`` raises on a package it refuses."""
    try:
        directory = folder()
        directory.mkdir(parents=True, exist_ok=True)
        lock = os.open(directory / f"{key}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:  # a cache that cannot be written: built each time, in a temporary folder
        return _build_apart(key, build, load), True
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder; the others wait, then load
        model = _load(directory, key, load)
        if model is not None:
            return model, False
        with tempfile.TemporaryDirectory(prefix=BUILD_PREFIX, dir=directory) as tmp:
            built = Path(tmp) / f"{key}.pt2"
            build(built)
            data = built.read_bytes()
        try:
            _store(directory, key, data)
        except OSError:
            return _build_apart(key, lambda path: path.write_bytes(data), load), True
        _prune(directory, keep=key)
        return load(directory / f"{key}.pt2"), True
    finally:
        os.close(lock)  # and with it the lock


def _load(directory: Path, key: str, load: Callable[[Path], Model]) -> Model | None:
    """The entry's model, or None after removing an entry that is not whole or not loadable."""
    package, record = directory / f"{key}.pt2", directory / f"{key}.json"
    try:
        meta = json.loads(record.read_text(encoding="utf-8"))
        data = package.read_bytes()
    except (OSError, ValueError):
        _remove(package, record)
        return None
    if not isinstance(meta, dict) or meta.get("sha256") != hashlib.sha256(data).hexdigest():
        _remove(package, record)
        return None
    try:
        model = load(package)
    except Exception:  # refused by the check or the loader: built again
        _remove(package, record)
        return None
    with contextlib.suppress(OSError):
        os.utime(record)  # recently used: pruned last
    return model


def _store(directory: Path, key: str, data: bytes) -> None:
    from frugalzero.runtime.files import atomic_write_bytes, atomic_write_text

    record = {
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
        "recipe": RECIPE,
        "torch": torch.__version__,
        "cpu": cpu_kind(),
    }
    atomic_write_bytes(directory / f"{key}.pt2", data)
    atomic_write_text(directory / f"{key}.json", json.dumps(record, indent=1) + "\n")


def _build_apart(key: str, build: Callable[[Path], None], load: Callable[[Path], Model]) -> Model:
    with tempfile.TemporaryDirectory(prefix="frugalzero-int8-") as tmp:
        path = Path(tmp) / f"{key}.pt2"
        build(path)
        return load(path)  # the loader keeps its own copy of the library


def _prune(directory: Path, keep: str) -> None:
    """Remove all but the ``KEEP`` most recently used entries (``keep`` among them), packages
    left without a record, lock files no one holds, and builds a killed process left behind
    (an hour old)."""
    records = sorted(directory.glob("*.json"), key=_mtime, reverse=True)
    kept = {keep} | {r.stem for r in records[:KEEP]}
    now = time.time()
    for path in directory.iterdir():
        key = path.name.split(".", 1)[0]
        if path.name.startswith(BUILD_PREFIX) and now - _mtime(path) > STALE_BUILD_S:
            shutil.rmtree(path, ignore_errors=True)
        elif path.suffix in (".json", ".pt2") and key not in kept:
            _remove(path)
        elif path.suffix == ".lock" and key not in kept and not _held(path):
            _remove(path)


def _held(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _remove(*paths: Path) -> None:
    for path in paths:
        with contextlib.suppress(OSError):
            path.unlink()
