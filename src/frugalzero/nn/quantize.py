"""The network in int8 for a CPU (``EvaluatorConfig(precision="int8")``): PyTorch's PT2E static
post-training quantization with torchao's ``X86InductorQuantizer``, compiled ahead of time
and cached per machine and per net.

Chosen by measurement (benchmarks/int8/README.md): against ONNX Runtime and OpenVINO on the 2-core
EPYC, it was the only runtime over 1.6x the bf16 net on both shipped nets with the best quality of
the three, and it stays a torch module in our own process: the same planes in, the same (policy
logits, value) out, so the runner's batching, gather and softmax do not change.

How: the float net is exported (``torch.export``, the batch dimension dynamic), observers are put
in, the shipped calibration positions (``nn.calibration``: 512 positions of real games, the same
on every machine) are run through it, and it is converted to the quantize / dequantize graph
(``nn.int8_backend.quantize``, where every torchao and private torch call lives). Compiled
(``int8_model(net, compile=True)``), AOTInductor makes its patterns oneDNN int8 convolutions and
linear layers (VNNI, AMX-INT8), the weights frozen and prepacked, in a shared library that
``nn.int8_cache`` keeps per machine and per net: a second start loads it in milliseconds,
without torchao, instead of quantizing (1-3 s, and 2 s to import torchao) and compiling
(25 s for ``small`` on 2 cores). Not compiled, or where compiling fails (with a warning), the
same oneDNN int8 ops run without generated code (``lower_int8``: 1.4-1.5x bf16 on ``small``
where the compiled library is 1.7x); the reference graph itself, correct but slower than fp32,
runs only where that fails too. What is not int8 between them (batch norm is folded in, the
residual adds) runs in fp32.

Not every layer is int8: a net is quantized by its recipe (``Int8Recipe``, ``recipe_for``), for
a ResNet ``MIXED``, which keeps the layers whose int8 error was largest in bf16 and its residual
stream in float: chosen by measuring each layer's error on held-out positions, KataGo's
statistics (``benchmarks/int8/sensitivity.py``). The recipe is part of the cache's key.
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from frugalzero.chess.encoding import HistoryFill, encode, frames_array
from frugalzero.nn import int8_backend
from frugalzero.nn.calibration import POSITIONS

CALIBRATION_BATCH = 128
"""Positions a calibration forward pass (the export's example batch too)."""


@dataclass(frozen=True)
class Int8Recipe:
    """How a net is quantized: the modes of some of its modules (``int8_backend.MODES``: kept
    in float or bf16, quantized alone), each given for the module names that match a pattern
    (``fnmatch``: ``tower.*.conv2``), every other layer int8; how the activations' ranges are
    set (``int8_backend.OBSERVERS``); and how many calibration positions set them."""

    modules: tuple[tuple[str, str], ...] = ()
    observer: str = "minmax"
    positions: int = POSITIONS

    def modes(self, net: torch.nn.Module) -> dict[str, str]:
        """Each module of ``net`` that a pattern names, and its mode (the last pattern's)."""
        names = [name for name, _ in net.named_modules() if name]
        found: dict[str, str] = {}
        for pattern, mode in self.modules:
            found.update({n: mode for n in names if fnmatch.fnmatchcase(n, pattern)})
        return found


PLAIN = Int8Recipe(observer="histogram")
"""Every layer int8, the activations' ranges by histogram (torchao's default): the int8 net
before issue 71's measurement, 6.2 (small) and 8.1 (medium) points of winrate error at the
99th percentile against bf16, 9.5 and 9.9 of top policy delta."""
MIXED = Int8Recipe(
    modules=(
        ("stem", int8_backend.BF16),
        ("tower.0.conv1", int8_backend.BF16),
        ("policy", int8_backend.BF16),
        ("value", int8_backend.BF16),
        ("tower.*.conv2", int8_backend.ALONE),
    ),
    observer="minmax",
)
"""The ResNets' recipe, chosen by measuring each layer's error (``benchmarks/int8/
sensitivity.py``, benchmarks/results/int8/README.md): the activations' ranges from their
extremes (the histogram's clipped ranges gave the policy most of its error: top policy delta
p99 9.1 to 4.2 points on ``small``), the stem in bf16 (its int8 weights, scaled per channel
by a few large ones, cost 3.8-4.5 points of winrate at the 99th percentile; its input's
quantization at most 0.2), the first block's first convolution and both heads in bf16 (the
next largest errors, of the winrate and of the policy; the value head is 1% of the work), and
each residual block's add in float after its second convolution (the fused int8 add quantized
the residual stream again at every block). On the 1,000 held-out positions against bf16 it
passes KataGo's 99th-percentile gates of winrate and top policy on both shipped nets, at about
0.8x (``small``) and 0.9x (``medium``) the speed of every layer in int8."""


def recipe_for(net: torch.nn.Module) -> Int8Recipe:
    """The recipe a net is quantized with: ``MIXED`` for a ResNet; an attention body, not
    measured, as before (``PLAIN``)."""
    return PLAIN if net.config.body == "attention" else MIXED


@dataclass
class Int8Model:
    """The int8 net as a runner calls it, and how it came to be."""

    model: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]
    graph: str
    """'aoti' (the compiled package), 'lowered' (oneDNN's int8 ops, no generated code) or
    'reference' (the quantize / dequantize graph, slower than fp32)."""
    cached: bool = False
    """'aoti' only: loaded from the machine's cache rather than built now."""
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds to quantize, compile, lower, or load from the cache."""


@functools.cache
def calibration_planes(history_fill: HistoryFill, positions: int | None = None) -> np.ndarray:
    """The calibration positions as input planes (N, 119, 8, 8), float32, their missing history
    steps as ``history_fill`` says; ``positions`` of them (the shipped ``POSITIONS`` by
    default), as many from each of the asset's games; built once a process."""
    from frugalzero.nn.calibration import calibration_positions, read_games

    positions = positions or POSITIONS
    per_game = -(-positions // len(read_games()))
    inputs = calibration_positions(limit=positions, per_game=per_game)
    frames = frames_array([i.frames for i in inputs], len(inputs))
    meta = np.array([i.meta for i in inputs], dtype=np.int64)
    planes = np.ascontiguousarray(encode(frames, meta, history_fill), dtype=np.float32)
    planes.setflags(write=False)
    return planes


def quantize_int8(
    net: torch.nn.Module, planes: np.ndarray | None = None, recipe: Int8Recipe | None = None
) -> torch.fx.GraphModule:
    """``net`` (float32, eval mode; not changed) as a PT2E int8 graph by ``recipe`` (the net's
    own, ``recipe_for``, by default), calibrated on ``planes`` (the recipe's number of the
    shipped calibration positions by default), for any batch size."""
    recipe = recipe or recipe_for(net)
    if planes is None:
        planes = calibration_planes(net.config.history_fill, recipe.positions)
    calibration = torch.from_numpy(np.array(planes, dtype=np.float32))
    return int8_backend.quantize(
        net, calibration, CALIBRATION_BATCH, recipe.modes(net), recipe.observer
    )


def lower_int8(
    quantized: torch.fx.GraphModule, example: torch.Tensor | None = None
) -> torch.fx.GraphModule:
    """``quantize_int8``'s graph on oneDNN's int8 ops, no code generated
    (``int8_backend.lower``); raises where the passes fail."""
    if example is None:  # for its shape only: the graph is calibrated already
        example = torch.from_numpy(np.array(calibration_planes("always")[:CALIBRATION_BATCH]))
    return int8_backend.lower(quantized, example)


def int8_model(net: torch.nn.Module, compile: bool, recipe: Int8Recipe | None = None) -> Int8Model:
    """``net`` (float32, eval mode, on the CPU; not changed) in int8 by ``recipe`` (the net's
    own, ``recipe_for``, by default) as a runner runs it: with
    ``compile``, the AOTInductor package of this net from the machine's cache, or built now
    (quantized and compiled) and cached; else, or where that fails (with a warning), lowered
    to oneDNN's int8 ops; the reference graph where that fails too (with a warning). Only
    building needs torchao: without it, a one-line UserError says how to install it."""
    from frugalzero.errors import UserError
    from frugalzero.runtime.device import can_compile

    if compile:
        problem = "no C++ compiler"
        if can_compile(torch.device("cpu")):
            try:
                return _package(net, recipe or recipe_for(net))
            except UserError:  # torchao missing, and no package built before
                raise
            except Exception as exc:
                problem = _reason(exc)
        warnings.warn(
            f"evaluator: compiling the int8 net failed ({problem}); it runs uncompiled on "
            "oneDNN's int8 ops, about 0.85x as fast",
            RuntimeWarning,
            stacklevel=3,
        )
    timings: dict[str, float] = {}
    start = time.perf_counter()
    quantized = quantize_int8(net, recipe=recipe)
    timings["quantize_s"] = time.perf_counter() - start
    start = time.perf_counter()
    try:
        lowered = lower_int8(quantized)
    except Exception as exc:
        warnings.warn(
            f"evaluator: the int8 net runs as its reference graph, slower than fp32 "
            f"(lowering it to oneDNN int8 ops failed: {_reason(exc)})",
            RuntimeWarning,
            stacklevel=3,
        )
        return Int8Model(quantized, "reference", timings=timings)
    timings["lower_s"] = time.perf_counter() - start
    return Int8Model(lowered, "lowered", timings=timings)


def _package(net: torch.nn.Module, recipe: Int8Recipe) -> Int8Model:
    """The net's package from the cache, or quantized, compiled and cached now."""
    from frugalzero.nn import int8_cache

    timings: dict[str, float] = {}

    def build(path: Path) -> None:
        start = time.perf_counter()
        quantized = quantize_int8(net, recipe=recipe)
        timings["quantize_s"] = time.perf_counter() - start
        start = time.perf_counter()
        example = torch.from_numpy(
            np.array(calibration_planes(net.config.history_fill)[:CALIBRATION_BATCH])
        )
        int8_backend.compile_package(quantized, example, path)
        timings["compile_s"] = time.perf_counter() - start

    start = time.perf_counter()
    key = int8_cache.package_key(net, recipe_record(net, recipe))
    model, built = int8_cache.cached_package(key, build, int8_backend.load_package)
    if not built:
        timings["load_s"] = time.perf_counter() - start
    return Int8Model(model, "aoti", cached=not built, timings=timings)


def recipe_record(net: torch.nn.Module, recipe: Int8Recipe | None = None) -> dict[str, object]:
    """How ``net`` is quantized by ``recipe`` (its own by default), for the cache's key: the
    calibration (the asset's digest, how many positions, how many a pass: the planes follow
    from these and the net's history rule), each module's mode and the observer."""
    recipe = recipe or recipe_for(net)
    return {
        "asset": _asset_digest(),
        "positions": recipe.positions,
        "batch": CALIBRATION_BATCH,
        "modes": sorted(recipe.modes(net).items()),
        "observer": recipe.observer,
    }


@functools.cache
def _asset_digest() -> str:
    from frugalzero.nn.calibration import asset_path

    return hashlib.sha256(asset_path().read_bytes()).hexdigest()


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:200]}" if text else type(exc).__name__
