"""Where and how a network runs: device, autocast precision, CPU threads, memory layout and
torch.compile. The evaluator and the trainer both set these up; the rules live here once."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from typing import Any

import torch

from frugalzero.errors import UserError

DTYPES = {
    "fp32": torch.float32,
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
    "int8": torch.int8,
}
"""Precision names as configs spell them, and their torch dtypes. 'int8' is not an autocast
dtype: the net is quantized (``frugalzero.nn.quantize``), what stays float runs in fp32."""

INT8_CPU_ONLY = "evaluator: precision 'int8' runs on a CPU only, not on {device}"
"""The refusal of int8 elsewhere (``EvaluatorConfig`` says the same where the device is named)."""


def resolve_device(name: str, section: str) -> torch.device:
    """``name`` ('auto' = CUDA when present, else CPU) as a device; a name that is not a device,
    or CUDA on a machine without it, is a UserError naming ``section`` (the config)."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        device = torch.device(name)
    except RuntimeError:
        raise UserError(f"{section}: device {name!r} is not a device") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise UserError(f"{section}: device cuda asked for, but no CUDA device is available")
    return device


def cpu_has_native_bf16() -> bool:
    """True on CPUs with AMX or AVX-512 BF16, where bf16 convolutions are much faster."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="ignore") as handle:
            flags = next((line for line in handle if line.startswith("flags")), "")
    except OSError:
        return False
    return " amx_bf16" in flags or " avx512_bf16" in flags


def resolve_precision(
    precision: str, device: torch.device, training: bool = False
) -> tuple[str, torch.dtype]:
    """The autocast precision to use, as (name, dtype). 'auto' is fp16 on CUDA (bf16 where the
    GPU has it when ``training``: fp16 training needs loss scaling), bf16 on CPUs with native
    bf16, else fp32. 'int8' (the net quantized: inference on a CPU only) anywhere else is a
    one-line UserError."""
    if precision == "int8":
        if device.type != "cpu":
            raise UserError(INT8_CPU_ONLY.format(device=device.type))
        if training:
            raise UserError("precision 'int8' is for inference only, not training")
    if precision == "auto":
        if device.type == "cuda":
            precision = "bf16" if training and torch.cuda.is_bf16_supported() else "fp16"
        else:
            precision = "bf16" if cpu_has_native_bf16() else "fp32"
    return precision, DTYPES[precision]


def autocast(device: torch.device, dtype: torch.dtype):
    """Mixed precision in ``dtype`` on ``device`` for the block (none for fp32, nor for int8,
    whose float parts run in fp32)."""
    if dtype == torch.int8:
        dtype = torch.float32
    return torch.autocast(device.type, dtype, enabled=dtype != torch.float32)


def set_threads(threads: int, device: torch.device) -> None:
    """PyTorch's intra-op threads for work on the CPU; 0 keeps PyTorch's default (every core)."""
    if device.type == "cpu" and threads > 0:
        torch.set_num_threads(threads)


def cuda_kernels(deterministic: bool) -> None:
    """cuDNN's kernel choice for a training process: the fastest for the fixed shapes (which
    may differ from run to run, with TF32 matmuls), or fixed kernels in full fp32 so a run
    repeats exactly. No effect without CUDA."""
    torch.backends.cudnn.benchmark = not deterministic
    torch.backends.cudnn.deterministic = deterministic
    torch.backends.cuda.matmul.allow_tf32 = not deterministic
    torch.backends.cudnn.allow_tf32 = not deterministic


def place(module: torch.nn.Module, device: torch.device, channels_last: bool) -> torch.nn.Module:
    """``module`` on ``device``, in NHWC layout if ``channels_last`` (which oneDNN and cuDNN
    convolutions prefer). Like ``Module.to`` this converts ``module`` itself: pass a copy to
    keep the original as it was."""
    module = module.to(device)
    return module.to(memory_format=torch.channels_last) if channels_last else module


def can_compile(device: torch.device) -> bool:
    """Whether torch.compile can work here: inductor's CPU backend needs a C++ compiler."""
    return device.type != "cpu" or bool(shutil.which("g++") or shutil.which("c++"))


def compile_module(
    module: torch.nn.Module,
    device: torch.device,
    freeze: bool = False,
    probe: Callable[[Any], object] | None = None,
) -> tuple[Any, bool]:
    """(model to call, whether it is compiled): ``torch.compile(module)``, or ``module`` itself
    (eager) where compiling cannot work. ``freeze`` bakes the weights in as constants
    (prepacked, batch norm folded; inference only, and global to inductor). ``probe`` is
    called once with the compiled model: if it raises, compiler trouble costs speed, not
    correctness, and the eager module is returned.

    Frozen, what is compiled is a function of its own code (``_own_code``): torch.compile keeps
    its graphs per code object, so compiling again after new weights were loaded in place
    makes new graphs for them, where the old code's would serve the old constants, and leaves
    every other compiled graph of the process alone (``torch._dynamo.reset()`` drops them all;
    compiling the module again instead meets the recompile limit after a few new nets, and
    then runs eager without a word)."""
    if not can_compile(device):
        return module, False
    if freeze:  # inductor reads it outside a compile's own options: set for the process
        import torch._inductor.config as inductor

        inductor.freezing = True
        model = torch.compile(_own_code(module))
    else:
        model = torch.compile(module)
    if probe is not None:
        try:
            probe(model)
        except Exception:
            return module, False
    return model, True


def _own_code(module: torch.nn.Module) -> Callable[..., Any]:
    """A function that calls ``module``, with a code object no other function shares."""

    def forward(*args: Any) -> Any:
        return module(*args)

    forward.__code__ = forward.__code__.replace()  # a copy: a cache of compiled graphs its own
    return forward
