"""The network in int8 for a CPU (``EvaluatorConfig(precision="int8")``): PyTorch's PT2E static
post-training quantization with torchao's ``X86InductorQuantizer``.

Chosen by measurement (benchmarks/int8/README.md): against ONNX Runtime and OpenVINO on the 2-core
EPYC, it was the only runtime over 1.6x the bf16 net on both shipped nets with the best quality of
the three, and it stays a torch module in our own process: the same planes in, the same (policy
logits, value) out, so the runner's batching, gather and softmax do not change.

How: the float net is exported (``torch.export``, the batch dimension dynamic), observers are put
in (``prepare_pt2e``: per-channel symmetric int8 weights, uint8 activations with histogram
observers), the shipped calibration positions (``nn.calibration``: 512 positions of real games,
the same on every machine) are run through it, and ``convert_pt2e`` makes the quantize /
dequantize graph. Compiled by inductor with frozen weights (``NetRunner``) its patterns become
oneDNN int8 convolutions and linear layers (VNNI, AMX-INT8) in generated code. Where the net is
not compiled (``compile="off"``: the UCI engine, inline evaluators) or compiling fails,
``lower_int8`` makes the same oneDNN int8 ops out of it without generating code (no C++
compiler; measured on ``small``: 1.4-1.5x bf16 where the compiled graph is 1.7x); the
reference graph itself, correct but slower than fp32, runs only where that fails too. What is
not int8 between them (batch norm is folded in, the residual adds) runs in fp32.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import warnings

import numpy as np
import torch

from frugalzero.chess.encoding import HistoryFill, encode, frames_array

# inductor's lowering of the int8 convolutions builds a tensor from a tensor: a harmless warning
# at every compile of an int8 graph (a batch under 16 compiles a second one, when it first comes)
warnings.filterwarnings(
    "ignore",
    message="To copy construct from a tensor",
    category=UserWarning,
    module=r"torch\._inductor\.mkldnn_lowerings",
)

CALIBRATION_BATCH = 128
"""Positions a calibration forward pass (the export's example batch too)."""


@functools.cache
def calibration_planes(history_fill: HistoryFill) -> np.ndarray:
    """The calibration positions as input planes (N, 119, 8, 8), float32, their missing history
    steps as ``history_fill`` says; built once a process."""
    from frugalzero.nn.calibration import calibration_positions

    inputs = calibration_positions()
    frames = frames_array([i.frames for i in inputs], len(inputs))
    meta = np.array([i.meta for i in inputs], dtype=np.int64)
    planes = np.ascontiguousarray(encode(frames, meta, history_fill), dtype=np.float32)
    planes.setflags(write=False)
    return planes


def quantize_int8(net: torch.nn.Module, planes: np.ndarray | None = None) -> torch.fx.GraphModule:
    """``net`` (float32, eval mode; not changed) as a PT2E int8 graph calibrated on ``planes``
    (the shipped calibration positions by default), for any batch size."""
    with _quiet_torchao():
        from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
        from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
            X86InductorQuantizer,
            get_default_x86_inductor_quantization_config,
        )

    if planes is None:
        planes = calibration_planes(net.config.history_fill)
    calibration = torch.from_numpy(np.array(planes, dtype=np.float32))
    example = calibration[:CALIBRATION_BATCH]
    batch = torch.export.Dim("batch", min=1)
    exported = torch.export.export(net, (example,), dynamic_shapes=({0: batch},)).module()
    quantizer = X86InductorQuantizer()
    quantizer.set_global(get_default_x86_inductor_quantization_config())
    prepared = prepare_pt2e(exported, quantizer)
    with torch.no_grad():
        for chunk in calibration.split(CALIBRATION_BATCH):
            prepared(chunk)
    return convert_pt2e(prepared)


def lower_int8(
    quantized: torch.fx.GraphModule, example: torch.Tensor | None = None
) -> torch.fx.GraphModule:
    """``quantize_int8``'s graph with its quantize / dequantize patterns replaced by oneDNN's int8
    convolutions and linear layers, the weights packed once, and no code generated: torchao's
    ``lower_pt2e_quantized_to_x86`` with the batch kept dynamic (any batch size, as the
    evaluator's vary) and the flattening views made reshapes (oneDNN's outputs are channels-last,
    which a view of the flat value-head input cannot take). Raises where the passes fail."""
    from torch._export.utils import _is_cia_op
    from torch._inductor.constant_folding import constant_fold
    from torch._inductor.fx_passes.freezing_patterns import freezing_passes

    with _quiet_torchao():
        import torchao.quantization.pt2e.inductor_passes.x86  # noqa: F401  (its patterns)

    if example is None:  # for its shape only: the graph is calibrated already
        example = torch.from_numpy(np.array(calibration_planes("always")[:CALIBRATION_BATCH]))
    table = torch.export.default_decompositions()
    for op in list(table):
        if not _is_cia_op(op):  # post-autograd: keep the primitive ops
            del table[op]
    batch = torch.export.Dim("batch", min=1)
    with warnings.catch_warnings():  # torch's own deprecations inside export's deep copies
        warnings.simplefilter("ignore", FutureWarning)
        exported = torch.export.export(
            quantized, (example,), dynamic_shapes=({0: batch},), strict=True
        )
        lowered = exported.run_decompositions(table).module()
    aten = torch.ops.aten
    for node in lowered.graph.nodes:
        if node.target == aten.t.default:  # as torchao does: the linear patterns want a permute
            node.target, node.args = aten.permute.default, (node.args[0], [1, 0])
    lowered.recompile()
    with torch.no_grad():
        freezing_passes(lowered, (example,))
        constant_fold(lowered)
    for node in lowered.graph.nodes:
        if node.target == aten.view.default:
            node.target = aten.reshape.default
    lowered.recompile()
    return lowered


@contextlib.contextmanager
def _quiet_torchao():
    """torchao's import logs a warning for each of its CUDA kernel libraries that a CPU-only
    machine cannot load, and torch one about an enum it registers: expected, and no concern of
    a user of the CPU int8 net."""
    loggers = [logging.getLogger(name) for name in ("torchao", "torch.utils._pytree")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


@contextlib.contextmanager
def quiet_compile():
    """That warning kept out of an int8 compile even where a caller (pytest) has reset the
    warning filters since this module's import."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="To copy construct from a tensor", category=UserWarning
        )
        yield
